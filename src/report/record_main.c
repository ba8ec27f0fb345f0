/* SPDX-License-Identifier: MIT */
/*
 * nccl-warmup-record: the Prolog path's record writer.  nccl-warmup-prolog
 * (root) runs nccl-warmup with --json, then this program with what it
 * saw (exit status, elapsed time) and the helper's JSON on stdin; it
 * writes the same record and metrics as spank_nccl.so does in slurmstepd,
 * through the same sink writer (sinks.c).  The helper's JSON is untrusted input: parsed by
 * sn_warmup_result_parse; unparsable output is recorded as "no result".
 * Exits 1 when a sink fails (said on stderr, which the Prolog logs); the
 * Prolog never fails for it, so a record can never drain a node.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "fleet/record.h"
#include "fleet/sinks.h"
#include "base/strutil.h"

struct args {
	struct sn_record r;
	struct sn_sinks sinks;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: nccl-warmup-record --node NODE --mode MODE --exit-status N [--job ID]\n"
		"         [--uid UID] [--user NAME] [--gpus LIST] [--elapsed-ms MS] [--message TEXT]\n"
		"         [--record-file PATH] [--syslog] [--prom-dir DIR] [--source prolog|manual]\n"
		"         [--cluster NAME]\n"
		"         < nccl-warmup-json\n"
		"  --exit-status: as the shell reports it (128+N: killed by signal N; 124: timeout(1))\n");
}

static int number(const char *opt, const char *v, double max, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(v, &end);
	if (!*v || *end || errno || !(*out >= 0 && *out <= max)) {
		fprintf(stderr, "spank-nccl: nccl-warmup-record: %s %s: expected a number from 0 to %g\n",
			opt, v, max);
		return -1;
	}
	return 0;
}

/* What the shell's $? says about the helper. */
static void exit_status(struct sn_record *r, int status)
{
	r->exit_code = -1;
	r->pass = status == 0;
	if (status == 124 || status == 137) {
		/* timeout(1): the helper outlived its own deadline. */
		r->class = SN_CLASS_TIMEOUT;
	} else if (status == 126 || status == 127) {
		r->class = SN_CLASS_HELPER_START;
	} else if (status > 128) {
		r->class = SN_CLASS_CRASH;
		r->signal = status - 128;
	} else {
		r->exit_code = status;
		r->class = sn_record_class_of_exit(status);
	}
}

static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{ "node", required_argument, NULL, 'n' },
		{ "job", required_argument, NULL, 'j' },
		{ "uid", required_argument, NULL, 'u' },
		{ "user", required_argument, NULL, 'U' },
		{ "mode", required_argument, NULL, 'm' },
		{ "gpus", required_argument, NULL, 'g' },
		{ "exit-status", required_argument, NULL, 'x' },
		{ "elapsed-ms", required_argument, NULL, 'e' },
		{ "message", required_argument, NULL, 'M' },
		{ "record-file", required_argument, NULL, 'f' },
		{ "prom-dir", required_argument, NULL, 'p' },
		{ "syslog", no_argument, NULL, 's' },
		{ "source", required_argument, NULL, 'S' },
		{ "cluster", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_status = false;
	double v;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n': snprintf(a->r.node, sizeof(a->r.node), "%s", optarg); break;
		case 'U': snprintf(a->r.user, sizeof(a->r.user), "%s", optarg); break;
		case 'm': snprintf(a->r.mode, sizeof(a->r.mode), "%s", optarg); break;
		case 'g': snprintf(a->r.gpus_requested, sizeof(a->r.gpus_requested), "%s", optarg); break;
		case 'M': snprintf(a->r.message, sizeof(a->r.message), "%s", optarg); break;
		case 'f': a->sinks.record_file = optarg; break;
		case 'p': a->sinks.prom_dir = optarg; break;
		case 's': a->sinks.syslog = true; break;
		case 'c': snprintf(a->r.cluster, sizeof(a->r.cluster), "%s", optarg); break;
		case 'S':
			/* A warmup an admin ran by hand is not the Prolog's. */
			if (strcmp(optarg, "prolog") != 0 &&
			    strcmp(optarg, "manual") != 0) {
				fprintf(stderr, "spank-nccl: nccl-warmup-record: --source %s: expected prolog or manual\n",
					optarg);
				return -1;
			}
			a->r.source = strcmp(optarg, "manual") == 0 ? "manual" :
								    "prolog";
			break;
		case 'j':
		case 'u':
		case 'x':
		case 'e':
			if (number(c == 'j' ? "--job" : c == 'u' ? "--uid" :
				   c == 'x' ? "--exit-status" : "--elapsed-ms",
				   optarg, c == 'x' ? 255 : 4294967295.0,
				   &v) < 0)
				return -1;
			if (c == 'j')
				a->r.job = (long)v;
			else if (c == 'u')
				a->r.uid = (long)v;
			else if (c == 'e')
				a->r.elapsed_ms = v;
			else {
				exit_status(&a->r, (int)v);
				have_status = true;
			}
			break;
		default:
			usage();
			return -1;
		}
	}
	if (!have_status || !a->r.node[0] || !a->r.mode[0] || optind != argc) {
		usage();
		return -1;
	}
	if ((a->sinks.record_file && a->sinks.record_file[0] != '/') ||
	    (a->sinks.prom_dir && a->sinks.prom_dir[0] != '/')) {
		fprintf(stderr, "spank-nccl: nccl-warmup-record: --record-file and --prom-dir take absolute paths\n");
		return -1;
	}
	return 0;
}

/* The large buffers, on the heap. */
struct buffers {
	char text[SN_RESULT_MAX_BYTES + 1];	/* the helper's JSON */
	struct sn_warmup_result res;
	struct sn_sinks_report rep;
};

int main(int argc, char **argv)
{
	struct args a = { .r = { .source = "prolog", .job = -1, .uid = -1,
				 .step = -1 } };
	struct buffers *b;
	struct sn_error err;
	size_t n;
	int rc = 0;

	if (parse_args(argc, argv, &a) < 0)
		return 2;
	b = calloc(1, sizeof(*b));
	if (!b) {
		fprintf(stderr, "spank-nccl: nccl-warmup-record: out of memory\n");
		return 1;
	}
	n = fread(b->text, 1, sizeof(b->text), stdin);
	if (n > 0 && n <= SN_RESULT_MAX_BYTES &&
	    sn_warmup_result_parse(b->text, n, &b->res, &err) == 0)
		a.r.result = &b->res;
	/* The Prolog ran nccl-warmup as root: the node's facts. */
	a.r.trusted = a.r.result;
	/* Without --message, the helper's own words (escaped on output). */
	if (!a.r.pass && !a.r.message[0] && a.r.result)
		snprintf(a.r.message, sizeof(a.r.message), "%s",
			 b->res.message);
	a.r.fault = sn_record_fault(a.r.class, a.r.result);
	a.r.time = sn_clock_wall_s();
	if (sn_sinks_write(&a.sinks, &a.r, &b->rep)) {
		if (b->rep.file.msg[0])
			fprintf(stderr, "spank-nccl: nccl-warmup-record: record not written: %s (RECORD_FILE=)\n",
				b->rep.file.msg);
		if (b->rep.syslog.msg[0])
			fprintf(stderr, "spank-nccl: nccl-warmup-record: record not sent to syslog: %s (--syslog)\n",
				b->rep.syslog.msg);
		if (b->rep.prom.msg[0])
			fprintf(stderr, "spank-nccl: nccl-warmup-record: metrics not written: %s (PROM_DIR=)\n",
				b->rep.prom.msg);
		rc = 1;
	}
	free(b);
	return rc;
}

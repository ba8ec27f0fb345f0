/* SPDX-License-Identifier: MIT */
/*
 * spank-nccl-report [--json|--svg] [--threshold=PCT] [--min-peers=N]
 *                   [FILE...]
 * Reads fleet records (record_file= of spank_nccl.so, RECORD_FILE= of
 * nccl-warmup-prolog; "-" or no FILE: stdin) and prints one line per
 * node.  Exit: 0 report printed, 1 nothing readable, 2 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/record.h"
#include "report.h"
#include "base/strutil.h"

#define MAX_SKIP_MESSAGES 10

static void usage(FILE *to)
{
	fprintf(to,
		"usage: spank-nccl-report [--json | --svg] [--threshold=PCT] [--min-peers=N] [FILE...]\n"
		"  FILE             fleet records, JSON lines (default: stdin)\n"
		"  --json           one JSON object for scripts\n"
		"  --svg            an SVG chart of busbw per node on stdout\n"
		"  --threshold=PCT  outlier: busbw PCT%% below, or warmup time PCT%% above,\n"
		"                   the median of identical nodes (default 20)\n"
		"  --min-peers=N    identical nodes needed to judge one (default 3)\n");
}

static int parse_number(const char *opt, const char *v, double min,
			double max, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(v, &end);
	if (!*v || *end || errno || !(*out >= min && *out <= max)) {
		fprintf(stderr,
			"spank-nccl: report: %s=%s: expected a number from %g to %g\n",
			opt, v, min, max);
		return -1;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct report_opts *o)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "svg", no_argument, NULL, 's' },
		{ "threshold", required_argument, NULL, 't' },
		{ "min-peers", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double v;
	int c;

	o->format = FORMAT_TABLE;
	o->threshold_pct = 20;
	o->min_peers = 3;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
		case 's':
			if (o->format != FORMAT_TABLE) {
				fprintf(stderr, "spank-nccl: report: --json and --svg exclude each other\n");
				return -1;
			}
			o->format = c == 'j' ? FORMAT_JSON : FORMAT_SVG;
			break;
		case 't':
			if (parse_number("--threshold", optarg, 0.1, 99,
					 &o->threshold_pct) < 0)
				return -1;
			break;
		case 'm':
			if (parse_number("--min-peers", optarg, 2, 100000,
					 &v) < 0)
				return -1;
			o->min_peers = (unsigned int)v;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	return 0;
}

static int read_stream(FILE *in, const char *name, struct fleet *f,
		       struct sn_json *scratch)
{
	struct sn_record_view *r = malloc(sizeof(*r));
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	struct sn_error err;
	ssize_t n;

	if (!r)
		return -1;
	while ((n = getline(&line, &cap, in)) != -1) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0)
			continue;
		if (n > SN_RECORD_MAX_BYTES) {
			sn_error_set(&err, "longer than %d bytes",
				     SN_RECORD_MAX_BYTES);
		} else if (sn_record_read(line, (size_t)n, scratch, r,
					  &err) == 0) {
			if (fleet_add(f, r) < 0) {
				free(line);
				free(r);
				return -1;
			}
			continue;
		}
		if (f->skipped++ < MAX_SKIP_MESSAGES) {
			/* The reason may quote the record's text. */
			sn_str_printable(err.msg, sizeof(err.msg), err.msg);
			fprintf(stderr, "spank-nccl: report: %s:%zu: skipped: %s\n",
				name, lineno, err.msg);
		}
	}
	free(line);
	free(r);
	return ferror(in) ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct report_opts o;
	struct fleet f = { 0 };
	struct sn_json *scratch;
	int rc = 0;

	if (parse_args(argc, argv, &o) < 0)
		return 2;
	scratch = malloc(sizeof(*scratch));
	if (!scratch) {
		fprintf(stderr, "spank-nccl: report: out of memory\n");
		return 1;
	}
	if (optind == argc)
		argv[--optind] = "-";
	for (int i = optind; i < argc; i++) {
		bool std = strcmp(argv[i], "-") == 0;
		FILE *in = std ? stdin : fopen(argv[i], "re");

		if (!in || read_stream(in, std ? "stdin" : argv[i], &f,
				       scratch) < 0) {
			fprintf(stderr, "spank-nccl: report: cannot read %s: %s\n",
				argv[i], strerror(errno));
			rc = 1;
		}
		if (in && !std)
			fclose(in);
	}
	free(scratch);
	if (f.skipped > MAX_SKIP_MESSAGES)
		fprintf(stderr, "spank-nccl: report: %zu more lines skipped\n",
			f.skipped - MAX_SKIP_MESSAGES);
	if (f.records == 0) {
		fprintf(stderr, "spank-nccl: report: no warmup records read (record_file= in plugstack.conf, RECORD_FILE= in nccl-warmup-prolog.conf)\n");
		fleet_free(&f);
		return 1;
	}
	fleet_analyse(&f, &o);
	if (o.format == FORMAT_JSON)
		render_json(&f, &o);
	else if (o.format == FORMAT_SVG)
		render_svg(&f, &o);
	else
		render_table(&f, &o);
	fleet_free(&f);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "spank-nccl: report: cannot write the report: %s\n",
			strerror(errno));
		return 1;
	}
	return rc;
}

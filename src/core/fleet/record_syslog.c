/* SPDX-License-Identifier: MIT */
/*
 * The fleet record to syslog (record.h, sn_record_syslog): ident
 * "spank-nccl" for every writer, rsyslog's "@cee:" structured form (its
 * mmjsonparse takes the JSON as fields; journald keeps it as MESSAGE with
 * SYSLOG_IDENTIFIER=spank-nccl), each message under 1 KiB, which every
 * syslog daemon and relay passes whole (RFC 5426 asks receivers for 480
 * bytes at least, rsyslog's default maximum is 8 KiB, a UDP relay's safe
 * size about 1 KiB).  A record does not fit 1 KiB with its GPUs, so it is
 * sent in parts, each a JSON object of its own: the scalars, the timings,
 * then the GPUs a few at a time; "rid" joins them, "part"/"parts" order
 * and count them.  The record file keeps the one whole line.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fleet/record.h"

/* daemon.info */
#define PRI 30
#define BODY_MAX (SN_SYSLOG_MAX_BYTES - 48)

static bool always(enum sn_field f)
{
	return f == SN_F_RECORD || f == SN_F_NODE;
}

static bool scalars(enum sn_field f)
{
	return f != SN_F_GPUS && f != SN_F_TIMINGS && f != SN_F_COLLECTIVES;
}

static bool timings(enum sn_field f)
{
	return always(f) || f == SN_F_TIMINGS || f == SN_F_COLLECTIVES;
}

static bool gpus(enum sn_field f)
{
	return always(f) || f == SN_F_GPUS;
}

/* The last resort for the scalars: who, what, whose fault. */
static bool verdict_only(enum sn_field f)
{
	return always(f) || f == SN_F_TS || f == SN_F_VERDICT ||
	       f == SN_F_CLASS || f == SN_F_FAULT;
}

struct parts {
	const struct sn_record *r;
	char rid[320];
	size_t n;			/* parts in all */
	size_t gpu_end[64 + 1];		/* GPU parts: their last GPU + 1 */
	size_t n_gpu_parts;
	char body[SN_SYSLOG_MAX_BYTES];
};

/* Part K's JSON in P->body; its length, 0 if it does not fit BODY_MAX. */
static size_t format(struct parts *p, size_t k, struct sn_record_part *what,
		     bool truncated)
{
	char extra[400];

	snprintf(extra, sizeof(extra), "\"rid\":\"%s\",\"part\":%zu,\"parts\":%zu%s",
		 p->rid, k, p->n, truncated ? ",\"truncated\":true" : "");
	return sn_record_format_part(p->r, what, extra, p->body, BODY_MAX);
}

/* The scalars, their strings cut shorter until they fit. */
static size_t format_scalars(struct parts *p)
{
	static const size_t caps[] = { 0, 256, 96, 32 };
	struct sn_record_part what = { .keep = scalars };
	size_t len = 0;

	for (size_t i = 0; !len && i < sizeof(caps) / sizeof(caps[0]); i++) {
		what.str_cap = caps[i];
		len = format(p, 1, &what, caps[i] != 0);
	}
	if (!len) {
		what = (struct sn_record_part){ .keep = verdict_only,
						.str_cap = 32 };
		len = format(p, 1, &what, true);
	}
	return len;
}

/* Groups the GPUs into parts that fit, from GPU 0. */
static void plan_gpus(struct parts *p, size_t n_gpus)
{
	struct sn_record_part what = { .keep = gpus, .str_cap = 96 };
	size_t from = 0;

	p->n = 2 + 64;	/* the widest "parts" while planning */
	p->n_gpu_parts = 0;
	while (from < n_gpus && p->n_gpu_parts < 64) {
		size_t to = from + 1;

		what.gpu_from = from;
		while (to < n_gpus) {
			what.gpu_to = to + 1;
			if (!format(p, 3 + p->n_gpu_parts, &what, false))
				break;
			to++;
		}
		p->gpu_end[p->n_gpu_parts++] = to;
		from = to;
	}
	p->n = 2 + p->n_gpu_parts;
}

static int send_part(struct parts *p, size_t len, struct sn_error *err)
{
	char msg[SN_SYSLOG_MAX_BYTES + 64];
	int n;

	n = snprintf(msg, sizeof(msg), "<%d>spank-nccl[%ld]: @cee:%.*s", PRI,
		     (long)getpid(), (int)len, p->body);
	if (n < 0 || (size_t)n >= sizeof(msg))
		n = (int)sizeof(msg) - 1;
	if (sn_syslog_send(msg, (size_t)n) < 0) {
		sn_error_set(err, "cannot send to /dev/log: %s",
			     strerror(errno));
		return -1;
	}
	return 0;
}

int sn_record_syslog(const struct sn_record *r, struct sn_error *err)
{
	struct parts p;
	struct sn_record_part what = { .keep = timings };
	size_t n_gpus = r->result ? r->result->n_gpus : 0;
	size_t len, from = 0;

	memset(&p, 0, sizeof(p));
	p.r = r;
	/* The node and the record's time name it (node names need no
	 * escaping: they are the host's). */
	snprintf(p.rid, sizeof(p.rid), "%.256s-%.3f", r->node, r->time);
	plan_gpus(&p, n_gpus);
	len = format_scalars(&p);
	if (!len || send_part(&p, len, err) < 0)
		goto fail;
	len = format(&p, 2, &what, false);
	if (!len || send_part(&p, len, err) < 0)
		goto fail;
	for (size_t k = 0; k < p.n_gpu_parts; k++) {
		what = (struct sn_record_part){ .keep = gpus, .str_cap = 96,
						.gpu_from = from,
						.gpu_to = p.gpu_end[k] };
		len = format(&p, 3 + k, &what, false);
		if (!len || send_part(&p, len, err) < 0)
			goto fail;
		from = p.gpu_end[k];
	}
	return 0;
fail:
	if (!err->msg[0])
		sn_error_set(err, "a part of the record does not fit %d bytes",
			     SN_SYSLOG_MAX_BYTES);
	return -1;
}

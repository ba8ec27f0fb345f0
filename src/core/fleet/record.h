/* SPDX-License-Identifier: MIT */
/*
 * The fleet record: one JSON object per warmup (one line of a JSON-lines
 * file, or one syslog message), written by the root side (slurmstepd or
 * nccl-warmup-record in the Prolog), never by the user's helper.  Format:
 * docs/admin-guide.md "Fleet records"; read back by record_read.c.
 *
 * Its fields, their keys, types and order are record_schema.c's table
 * (published as docs/record.schema.json).  Everything that came from the
 * user or the helper (node name aside, which is the host's) is escaped on
 * output: a forged helper result cannot add a line, a field or a metric.
 */
#ifndef SN_RECORD_H
#define SN_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"
#include "config/node_path.h"
#include "protocol/fault.h"
#include "protocol/record_schema.h"
#include "protocol/warmup_result.h"

/* One record, GPUs and all, fits: 64 GPUs x ~300 bytes + the rest. */
#define SN_RECORD_MAX_BYTES 32768

const char *sn_record_class_name(enum sn_record_class c);
/* The class of a helper that exited with CODE (unknown codes: internal). */
enum sn_record_class sn_record_class_of_exit(int code);
/* Whether a record of class NAME counts against its own node (reports). */
bool sn_record_class_is_own_fault(const char *name);
/*
 * Whose fault a record of class C is (fault.h): the helper's word RES
 * where it ended by itself (sn_fault_from_helper), else the class's.
 * Only for a helper root ran in root's environment (the Prolog's
 * nccl-warmup-record); a job's helper is decided by verdict.h.
 */
enum sn_fault sn_record_fault(enum sn_record_class c,
			      const struct sn_warmup_result *res);

struct sn_record {
	const char *source;		/* "spank" or "prolog" */
	double time;			/* seconds since the epoch */
	char node[256];
	long job;			/* < 0: unknown */
	long step;			/* < 0: none (prolog, batch, ...) */
	const char *step_kind;		/* "normal", "batch", ...; NULL */
	char cluster[64];		/* ClusterName; "" unknown */
	char user[64];
	long uid;			/* < 0: unknown */
	char mode[16];
	char gpus_requested[512];	/* CUDA_VISIBLE_DEVICES given */
	bool pass;
	enum sn_record_class class;
	enum sn_fault fault;		/* SN_FAULT_NONE on a pass */
	int exit_code;			/* < 0: none (signal, timeout, ...) */
	int signal;			/* 0: none */
	const char *policy;		/* "fail", "warn" or NULL */
	/*
	 * Hook for warmup reuse: a step that reuses an earlier warmup's
	 * verdict instead of running the helper sets this, fills the rest
	 * from the reused result, and writes its record as usual.
	 */
	bool reused;
	double elapsed_ms;		/* as the root side measured it */
	char message[1024];		/* what failed; "" on success */
	/* A step killed while RAS saw its NCCL unfinished: RAS's verdict. */
	char hang[2048];
	const struct sn_warmup_result *result;	/* NULL: none parsed */
	/*
	 * A result of a run the job's user cannot reach (the Prolog's, or
	 * the plugin's root confirmation: verdict.h), or NULL.  Only it
	 * feeds the node's metrics: _info, busbw, the per-GPU series.
	 */
	const struct sn_warmup_result *trusted;
};

/*
 * Formats R as one JSON line ending in '\n' into BUF (CAP bytes).
 * Returns its length, or 0 if it does not fit.
 */
size_t sn_record_format(const struct sn_record *r, char *buf, size_t cap);

/*
 * Appends LINE (LEN bytes) to PATTERN (sn_record_path, for NODE) with one
 * O_APPEND write: concurrent writers never interleave, and logrotate may
 * move the file away at any time (each record opens it anew, creating it
 * 0640 if missing).
 */
int sn_record_append(const char *pattern, const char *node, const char *line,
		     size_t len, struct sn_error *err);

/*
 * The sink files (record file, .prom file, its lock and temporary) are
 * opened as root in slurmstepd and the Prolog, perhaps in a directory a
 * careless admin left writable.  sn_record_sink_open() opens PATH with
 * FLAGS | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY (MODE if it
 * creates) and applies sn_record_sink_check(), which refuses anything
 * but a regular file with one link owned by the effective uid (root
 * there; the caller when run by hand or in a test), then clears
 * O_NONBLOCK.  LABEL ("record_file " or "") starts every message, which
 * names PATH and what was wrong.  Returns the descriptor, or -1 with ERR
 * set (errno kept from a failed open(), EINVAL after a refusal).
 */
int sn_record_sink_open(const char *path, const char *label, int flags,
			mode_t mode, struct sn_error *err);
int sn_record_sink_check(int fd, const char *path, const char *label,
			 struct sn_error *err);

/*
 * What sn_record_format_part writes of a record: the top-level fields
 * KEEP accepts (NULL: all), the "gpus" items GPU_FROM to GPU_TO - 1, and
 * strings cut to STR_CAP bytes and "..." (0: whole).
 */
struct sn_record_part {
	bool (*keep)(enum sn_field f);
	size_t gpu_from, gpu_to;
	size_t str_cap;
};
/*
 * One JSON object (no newline) of the fields PART names, after EXTRA
 * (members written as given, e.g. "\"part\":1"; NULL: none).  Returns its
 * length, 0 if it does not fit CAP.
 */
size_t sn_record_format_part(const struct sn_record *r,
			     const struct sn_record_part *part,
			     const char *extra, char *buf, size_t cap);

/*
 * Sends R to syslog (daemon.info) as ident "spank-nccl", whoever writes
 * it (slurmstepd, the Prolog's recorder), in rsyslog's structured form
 * ("@cee:" and one JSON object), each message under 1 KiB: the record's
 * scalars, then its timings, then its GPUs a few at a time, each part
 * naming the record ("rid") and its place ("part", "parts").  Writes to
 * /dev/log itself (sn_syslog_send), never openlog(): slurmstepd's own
 * syslog identity stays.  Returns 0, or -1 with ERR set.
 */
int sn_record_syslog(const struct sn_record *r, struct sn_error *err);
/* The largest syslog message sn_record_syslog sends, header included. */
#define SN_SYSLOG_MAX_BYTES 1024
/*
 * Sends MSG (LEN bytes, a whole syslog message: "<PRI>TAG: ...") to
 * /dev/log (datagram, else stream).  0, or -1 with errno set.  Its own
 * file, so that tests can replace it.
 */
int sn_syslog_send(const char *msg, size_t len);

/* GPU model of the result: the shared name, "mixed", or "" if unknown. */
void sn_record_gpu_model(const struct sn_warmup_result *res, char *buf,
			 size_t cap);

#endif

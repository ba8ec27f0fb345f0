/* SPDX-License-Identifier: MIT */
/*
 * The admin's sinks for a fleet record, written by both root writers
 * (slurmstepd's step_record.c and the Prolog's nccl-warmup-record): the
 * record line (record.c's format) appended to the record file
 * (sn_record_append: the hardened open) and sent to syslog, and the
 * Prometheus textfile updated (prom.c).  Each sink is tried whatever
 * happened to the others, and each says its own error; the caller says
 * where the messages go (slurmd's log, the Prolog's stderr).
 */
#ifndef SN_SINKS_H
#define SN_SINKS_H

#include <stdbool.h>

#include "base/error.h"
#include "fleet/record.h"

/* Where the record goes; NULL or "" for none. */
struct sn_sinks {
	const char *record_file;	/* a pattern (sn_record_path) */
	bool syslog;
	const char *prom_dir;		/* a pattern (sn_record_path) */
};

/* One error per sink; msg "" when it was written or is not configured. */
struct sn_sinks_report {
	struct sn_error file;
	struct sn_error syslog;
	struct sn_error prom;
};

/*
 * Writes record R to every sink of S, filling REP.  A reused pass
 * (R->reused) leaves the metrics alone: they keep describing the last
 * real warmup (the record line says it was reused).  Returns how many
 * sinks failed (0: every configured one was written).
 */
int sn_sinks_write(const struct sn_sinks *s, const struct sn_record *r,
		   struct sn_sinks_report *rep);

#endif

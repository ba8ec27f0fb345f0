/* SPDX-License-Identifier: MIT */
/*
 * Per-node Prometheus metrics for node_exporter's textfile collector:
 * DIR/spank_nccl.prom, rewritten after every warmup (temporary file +
 * rename, so a scrape never sees half a file), under an flock on
 * DIR/.spank_nccl.lock so that two steps finishing at once on one node
 * cannot lose a counter increment.  Counters survive in the .prom file
 * itself (read back under the lock): no other state on the node.
 */
#ifndef SN_PROM_H
#define SN_PROM_H

#include <stddef.h>

#include "error.h"
#include "record.h"

#define SN_PROM_FILE "spank_nccl.prom"
#define SN_PROM_LOCK ".spank_nccl.lock"

/* What carries over from one warmup to the next. */
struct sn_prom_state {
	double passes;
	double failures[SN_CLASS_COUNT];	/* [SN_CLASS_OK] unused */
	double busbw_bytes;			/* last measured; < 0: never */
	double busbw_time;
};

void sn_prom_state_init(struct sn_prom_state *st);
/*
 * Reads the counters back from TEXT (a .prom file this code wrote).
 * Lines it does not know are ignored; a known line that does not parse
 * fails (-1), so a damaged file restarts the counters (Prometheus counts
 * a counter reset, never a jump).
 */
int sn_prom_state_parse(const char *text, size_t len,
			struct sn_prom_state *st, struct sn_error *err);
/* Adds record R to ST. */
void sn_prom_state_add(struct sn_prom_state *st, const struct sn_record *r);
/* Renders ST and the last record R; 0 if CAP is too small. */
size_t sn_prom_render(const struct sn_prom_state *st,
		      const struct sn_record *r, char *buf, size_t cap);
struct sn_text;
/* prom_health.c: the health checks' gauge of the last record R. */
void sn_prom_render_health(struct sn_text *t, const struct sn_record *r);
/* The whole update for record R (lock, read, add, write, rename) of the
 * directory DIR_PATTERN names for R's node (sn_record_path). */
int sn_prom_update(const char *dir_pattern, const struct sn_record *r,
		   struct sn_error *err);

#endif

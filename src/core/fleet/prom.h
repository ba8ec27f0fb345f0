/* SPDX-License-Identifier: MIT */
/*
 * Per-node Prometheus metrics for node_exporter's textfile collector:
 * DIR/spank_nccl.prom, rewritten after every warmup (temporary file +
 * rename, so a scrape never sees half a file), under an flock on
 * DIR/.spank_nccl.lock so that two steps finishing at once on one node
 * cannot lose a counter increment.  Counters, histograms and the
 * per-mode/source last results survive in the .prom file itself (read
 * back under the lock): no other state on the node.
 *
 * The series are prom_state.c's table of families (name, type, help,
 * whether it carries over): a new series is a line there and the code
 * that feeds it.
 */
#ifndef SN_PROM_H
#define SN_PROM_H

#include <stddef.h>

#include "base/error.h"
#include "fleet/record.h"

#define SN_PROM_FILE "spank_nccl.prom"
#define SN_PROM_LOCK ".spank_nccl.lock"
/* Series that carry over, each "name{labels}" as written. */
#define SN_PROM_MAX_SAMPLES 400
#define SN_PROM_KEY_MAX 176

/* What carries over from one warmup to the next: one value per series. */
struct sn_prom_state {
	size_t n;
	struct sn_prom_sample {
		char key[SN_PROM_KEY_MAX];	/* name{labels}, as written */
		double v;
	} s[SN_PROM_MAX_SAMPLES];
};

void sn_prom_state_init(struct sn_prom_state *st);
/*
 * Reads the carried-over series back from TEXT (a .prom file this code
 * wrote).  Lines of other families are ignored; a line of a carried-over
 * family that does not parse fails (-1), so a damaged file restarts the
 * counters (Prometheus counts a counter reset, never a jump).  A file of
 * an older release (failures_total{class}) restarts them too.
 */
int sn_prom_state_parse(const char *text, size_t len,
			struct sn_prom_state *st, struct sn_error *err);
/* Adds record R to ST; -1 if ST is full (a counter would be lost). */
int sn_prom_state_add(struct sn_prom_state *st, const struct sn_record *r);
/* The value of series KEY ("name{labels}"), -1 if absent. */
double sn_prom_state_get(const struct sn_prom_state *st, const char *key);
/* Renders ST and the last record R; 0 if CAP is too small. */
size_t sn_prom_render(const struct sn_prom_state *st,
		      const struct sn_record *r, char *buf, size_t cap);
/* prom_health.c: the GPUs on which health check CHECK (enum
 * sn_health_check) failed or warned in RES's findings. */
unsigned int sn_prom_health_count(const struct sn_warmup_result *res,
				  int check);
/* The whole update for record R (lock, read, add, write, rename) of the
 * directory DIR_PATTERN names for R's node (sn_record_path). */
int sn_prom_update(const char *dir_pattern, const struct sn_record *r,
		   struct sn_error *err);
/* The "source" label of record source NAME: plugin, prolog or manual. */
const char *sn_prom_source_label(const char *name);

#endif

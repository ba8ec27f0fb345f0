/* SPDX-License-Identifier: MIT */
/*
 * Slurm host list expressions ("n[1-3,07-09],gpu-a[01-02]b[1-2]"), as in
 * SLURM_STEP_NODELIST: expanded lazily, in Slurm's order (items left to
 * right; within an item the leftmost bracket group varies slowest), so
 * every node of a step computes the same index for the same host.
 */
#ifndef SN_HOSTLIST_H
#define SN_HOSTLIST_H

#include <stddef.h>

#include "base/error.h"

#define SN_HOSTNAME_MAX 256		/* bytes, NUL included */
#define SN_HOSTLIST_MAX_HOSTS 65536	/* more nodes than any step has */
#define SN_HOSTLIST_MAX_GROUPS 8	/* bracket groups in one item */

/*
 * Called once per host, in order.  Returns 0 to go on, 1 to stop early
 * (sn_hostlist_foreach then returns 0), or -1 to fail (ERR already set).
 */
typedef int (*sn_hostlist_visit_fn)(const char *host, size_t index,
				    void *arg, struct sn_error *err);

/* 0, or -1 with ERR naming what is wrong with EXPR. */
int sn_hostlist_foreach(const char *expr, sn_hostlist_visit_fn visit,
			void *arg, struct sn_error *err);
int sn_hostlist_count(const char *expr, size_t *count, struct sn_error *err);
/* The host at INDEX (0-based) into HOST; -1 if out of range or invalid. */
int sn_hostlist_nth(const char *expr, size_t index, char *host, size_t len,
		    struct sn_error *err);
/* Index of the first occurrence of NAME; -1 (ERR set) if absent. */
int sn_hostlist_find(const char *expr, const char *name, size_t *index,
		     struct sn_error *err);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * NCCL RAS's JSON status (SET FORMAT json, NCCL 2.28.7+; NCCL's
 * docs/userguide troubleshooting/ras.rst) and its verdict per
 * communicator: which ranks are missing, dead, or at another count of a
 * collective than the others.  The answer comes from the job's processes:
 * untrusted, bounded, strict.
 */
#ifndef SN_RAS_STATUS_H
#define SN_RAS_STATUS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define SN_RAS_MAX_COMMS 256
#define SN_RAS_MAX_RANKS 8192	/* of all communicators together */
#define SN_RAS_MAX_COLLS 8	/* collective names (NCCL 2.28: 5) */
#define SN_RAS_NAME 24
#define SN_RAS_HOST 64

struct sn_ras_rank {
	long rank;
	char host[SN_RAS_HOST];
	long pid;		/* -1: unknown */
	long cuda_dev, nvml_dev;
	bool missing;		/* in "missing_ranks" */
	bool unresponsive, dead;	/* missing ranks only */
	long init_state, async_error;
	bool finalize, destroy, abort_flag;
	unsigned long long counts[SN_RAS_MAX_COLLS];	/* by colls[] */
	bool odd;		/* set by sn_ras_verdict */
};

struct sn_ras_comm {
	char hash[SN_RAS_NAME];
	long size;
	int first, n;		/* its ranks: ranks[first..first+n) */
};

struct sn_ras_status {
	char version[SN_RAS_NAME];
	long timeouts;
	int n_colls;
	char colls[SN_RAS_MAX_COLLS][SN_RAS_NAME];
	int n_comms;
	struct sn_ras_comm comms[SN_RAS_MAX_COMMS];
	int n_ranks;
	struct sn_ras_rank ranks[SN_RAS_MAX_RANKS];
};

/* Reads RAS's JSON document (LEN bytes) into ST (zeroed first). */
int sn_ras_parse(struct sn_ras_status *st, const char *text, size_t len,
		 struct sn_error *err);

/* One communicator's verdict; its odd ranks get .odd set. */
struct sn_ras_verdict {
	int missing, dead;	/* ranks missing, of which considered dead */
	int coll;		/* first collective the ranks disagree on, -1 */
	int n_odd, n_rest;	/* ranks off the most common count, and at it */
	unsigned long long odd_count;	/* the first odd rank's count */
	bool odd_mixed;		/* the odd ranks are at several counts */
	unsigned long long rest_count;
};
void sn_ras_verdict(struct sn_ras_status *st, int comm,
		    struct sn_ras_verdict *v);

/* Names rank K for a verdict line ("rank R (task T on NODE, GPU G)"). */
typedef void (*sn_ras_describe_fn)(const void *ctx, const struct sn_ras_rank *k,
				   char *out, size_t cap);
/*
 * Communicator C's verdict V (sn_ras_verdict) as one line into OUT (CAP
 * bytes), its ranks named by DESCRIBE(CTX, ...): which are missing or
 * dead, which are off the others' count; empty if it is healthy.
 */
void sn_ras_verdict_line(const struct sn_ras_status *st, int c,
			 const struct sn_ras_verdict *v,
			 sn_ras_describe_fn describe, const void *ctx,
			 char *out, size_t cap);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * One GPU on the node (issue 24, one-GPU nodes first class): a single
 * rank runs every collective as a local copy, so the warmup cannot see
 * what only several ranks exercise (peer transports, ring/tree
 * algorithms, bus bandwidth).  The summary says so, and a job setting
 * known to break multi-rank collectives on this NCCL is refused here
 * instead of passing because one rank never runs it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "warmup.h"

/* "2.28.9" -> 22809 (NCCL_VERSION_CODE); 0 if unknown. */
static int nccl_code(const char *v)
{
	int major, minor, patch;

	if (sscanf(v, "%d.%d.%d", &major, &minor, &patch) != 3)
		return 0;
	return major * 10000 + minor * 100 + patch;
}

/*
 * NCCL >= 2.24: a NCCL_ALGO without per-collective syntax applies to
 * every collective and no longer falls back to Ring; without ring in the
 * list, Broadcast, AllGather and ReduceScatter have no algorithm
 * (etc/nccl-profiles.conf, rule nccl-algo-tree-everywhere).  True when
 * ALGO is such a bare list.
 */
bool wu_algo_breaks_collectives(const char *algo, int code)
{
	char list[256], *tok, *save = NULL;

	if (!algo || !*algo || code < 22400 || algo[0] == '^' ||
	    strpbrk(algo, ":;"))
		return false;
	snprintf(list, sizeof(list), "%s", algo);
	for (tok = strtok_r(list, ", ", &save); tok;
	     tok = strtok_r(NULL, ", ", &save))
		if (strcasecmp(tok, "ring") == 0)
			return false;
	return true;
}

int wu_one_gpu_check(struct wu_run *run)
{
	const char *algo = getenv("NCCL_ALGO");

	if (run->n_gpus != 1 || run->opt.mode == SN_WARMUP_MODE_CHECK)
		return SN_WARMUP_OK;
	if (wu_algo_breaks_collectives(algo, nccl_code(run->nccl_version))) {
		pthread_mutex_lock(&run->lock);
		run->failed_op = WU_COLL_BROADCAST;
		pthread_mutex_unlock(&run->lock);
		return wu_fail(run, SN_WARMUP_NCCL_ERROR,
			       "NCCL_ALGO=%.64s leaves broadcast no algorithm on NCCL %s (>= 2.24): unset NCCL_ALGO" SN_DETAIL_SEP "all-gather and reduce-scatter neither, on more than one rank: this 1-GPU node's single rank cannot run it, the job's first multi-rank broadcast would fail; refused (rule nccl-algo-tree-everywhere); NCCL_ALGO=\"ring,tree;allreduce:tree\" keeps Tree for all-reduce",
			       algo, run->nccl_version);
	}
	wu_note(run, "1 GPU: a single rank tests no NVLink/PCIe peer or network transport and no ring/tree algorithm");
	return SN_WARMUP_OK;
}

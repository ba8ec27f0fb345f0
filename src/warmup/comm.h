/* SPDX-License-Identifier: MIT */
/* Step 3: one NCCL communicator over all visible GPUs, in this process. */
#ifndef WU_COMM_H
#define WU_COMM_H

#include <cuda.h>
#include "nccl_api.h"

#include "warmup.h"

struct wu_comm {
	int n;				/* this process's ranks (its GPUs) */
	int nranks;			/* the communicator's: n, or the step's */
	int rank_base;			/* rank of local GPU 0 */
	ncclComm_t comms[WU_MAX_GPUS];
	CUstream streams[WU_MAX_GPUS];
	CUdeviceptr scratch[WU_MAX_GPUS];	/* collectives.c */
	size_t free_before[WU_MAX_GPUS];	/* cuMemGetInfo before init */
};

/* A communicator of this node only: the job's NCCL_COMM_ID is not ours. */
void wu_comm_local_only(void);

/*
 * Non-blocking init of all local ranks in one group, polled to the
 * deadline: ranks 0..n-1 of n, or in fabric mode (run->fabric.nranks)
 * ranks rank_base.. of the step's communicator, whose id NCCL_COMM_ID
 * gives.
 */
int wu_comm_init(struct wu_run *run, struct wu_comm *c);
/*
 * The inert, verified all-reduce, broadcast, all-gather, reduce-scatter
 * and send/recv ring (collectives.c); then the GPU memory NCCL took.
 */
int wu_collectives(struct wu_run *run, struct wu_comm *c);
/* ncclCommFinalize + ncclCommDestroy, then streams and buffers. */
int wu_comm_teardown(struct wu_run *run, struct wu_comm *c);
/* After a failure: ncclCommAbort every communicator (best effort). */
void wu_comm_abort(struct wu_run *run, struct wu_comm *c);
/*
 * The end of a run whose verdict is CODE: an ok or slow run tears down
 * cleanly (or leaves it to process exit under --teardown exit); any
 * other aborts.  Returns CODE, or the teardown's failure.
 */
int wu_comm_end(struct wu_run *run, struct wu_comm *c, int code);

/*
 * Polls ncclCommGetAsyncError on every communicator until none is
 * ncclInProgress.  WHAT names the operation for messages.  Returns OK,
 * NCCL_ERROR or TIMEOUT (soft deadline).
 */
int wu_comm_wait(struct wu_run *run, struct wu_comm *c, const char *what);
/* Polls cuStreamQuery on every stream until all are idle. */
int wu_comm_wait_streams(struct wu_run *run, struct wu_comm *c,
			 const char *what);

#endif

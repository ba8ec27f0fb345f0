/* SPDX-License-Identifier: MIT */
/* Step 3: one NCCL communicator over all visible GPUs, in this process. */
#ifndef WU_COMM_H
#define WU_COMM_H

#include <cuda_runtime_api.h>
#include "nccl_api.h"

#include "warmup.h"

struct wu_comm {
	int n;
	ncclComm_t comms[WU_MAX_GPUS];
	cudaStream_t streams[WU_MAX_GPUS];
	float *scratch[WU_MAX_GPUS];	/* [0] send, [1] receive */
};

/* Non-blocking init of all ranks in one group, polled to the deadline. */
int wu_comm_init(struct wu_run *run, struct wu_comm *c);
/* The inert 1-float all-reduce: rank r gives r+1, all must get n(n+1)/2. */
int wu_comm_verify(struct wu_run *run, struct wu_comm *c);
/* ncclCommFinalize + ncclCommDestroy, then streams and buffers. */
int wu_comm_teardown(struct wu_run *run, struct wu_comm *c);
/* After a failure: ncclCommAbort every communicator (best effort). */
void wu_comm_abort(struct wu_comm *c);

/*
 * Polls ncclCommGetAsyncError on every communicator until none is
 * ncclInProgress.  WHAT names the operation for messages.  Returns OK,
 * NCCL_ERROR or TIMEOUT (soft deadline).
 */
int wu_comm_wait(struct wu_run *run, struct wu_comm *c, const char *what);
/* Polls cudaStreamQuery on every stream until all are idle. */
int wu_comm_wait_streams(struct wu_run *run, struct wu_comm *c,
			 const char *what);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Failure messages that name the failing CUDA/NCCL call and its error
 * (the core's struct sn_error, error.h, only carries text).
 */
#ifndef WU_FAILED_CALL_H
#define WU_FAILED_CALL_H

#include <cuda_runtime_api.h>
#include "nccl_api.h"

#include "warmup.h"

/* Records "CALL failed: cudaErrorX: text" and returns SN_WARMUP_CUDA_ERROR. */
int wu_cuda_fail(struct wu_run *run, cudaError_t rc, const char *call);
/*
 * Records "CALL failed: NCCL error text: last error" (ncclGetLastError of
 * COMM, which may be NULL) and returns SN_WARMUP_NCCL_ERROR.
 */
int wu_nccl_fail(struct wu_run *run, ncclResult_t rc, ncclComm_t comm,
		 const char *call);

#endif

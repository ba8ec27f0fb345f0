/* SPDX-License-Identifier: MIT */
/*
 * Failure messages that name the failing CUDA/NCCL call and its error
 * (the core's struct sn_error, error.h, only carries text).
 */
#ifndef WU_FAILED_CALL_H
#define WU_FAILED_CALL_H

#include <cuda.h>
#include "nccl_api.h"

#include "warmup.h"

/* Records "CALL failed: CUDA_ERROR_X (N): text" and returns
 * SN_WARMUP_CUDA_ERROR.  Needs run->cu. */
int wu_cuda_fail(struct wu_run *run, CUresult rc, const char *call);
/*
 * Records "CALL failed: NCCL error text: last error" (ncclGetLastError of
 * COMM, which may be NULL) and returns SN_WARMUP_NCCL_ERROR.  Needs
 * run->nc.
 */
int wu_nccl_fail(struct wu_run *run, ncclResult_t rc, ncclComm_t comm,
		 const char *call);
/* The NCCL error text of wu_nccl_fail, without recording it. */
void wu_nccl_error_text(const struct wu_run *run, ncclResult_t rc,
			ncclComm_t comm, char *out, size_t len);

#endif

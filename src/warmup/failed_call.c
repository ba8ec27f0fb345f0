/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "failed_call.h"

int wu_cuda_fail(struct wu_run *run, cudaError_t rc, const char *call)
{
	const char *name = cudaGetErrorName(rc);
	const char *text = cudaGetErrorString(rc);

	return wu_fail(run, SN_WARMUP_CUDA_ERROR, "%s failed: %s (%d): %s",
		       call, name ? name : "cudaError", (int)rc,
		       text ? text : "unknown error");
}

int wu_nccl_fail(struct wu_run *run, ncclResult_t rc, ncclComm_t comm,
		 const char *call)
{
	const char *text = ncclGetErrorString(rc);
	const char *last = ncclGetLastError(comm);

	/* ncclGetLastError may hold the detailed reason ("Duplicate GPU
	 * detected ...", "Cuda failure ..."): it is what admins need. */
	return wu_fail(run, SN_WARMUP_NCCL_ERROR, "%s failed: %s (%d)%s%s",
		       call, text ? text : "NCCL error", (int)rc,
		       last && *last ? ": " : "", last && *last ? last : "");
}

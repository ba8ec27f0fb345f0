/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "cuda_driver.h"
#include "failed_call.h"
#include "nccl_loader.h"

/*
 * CUDA_ERROR_OUT_OF_MEMORY at a context or the first allocation: the
 * GPU's memory is held by other processes (measured on an H200: 300 MiB
 * free, cuDevicePrimaryCtxRetain failed).  Says how much is free where
 * this thread has a context to ask; cuMemGetInfo needs one.
 */
static void memory_held(const struct wu_run *run, char *out, size_t len)
{
	size_t free_b = 0, total_b = 0;

	if (run->cu->mem_get_info &&
	    run->cu->mem_get_info(&free_b, &total_b) == CUDA_SUCCESS &&
	    total_b > 0)
		snprintf(out, len, "the GPU's memory is already held by other processes: %zu MiB free of %zu MiB (nvidia-smi names them)",
			 free_b >> 20, total_b >> 20);
	else
		snprintf(out, len, "the GPU's memory is already held by other processes (nvidia-smi names them)" SN_DETAIL_SEP "free memory unknown: no CUDA context to ask");
}

int wu_cuda_fail(struct wu_run *run, CUresult rc, const char *call)
{
	const char *name = NULL;
	const char *text = NULL;
	char held[256] = "";

	/* Both return CUDA_ERROR_INVALID_VALUE (and NULL) for a code the
	 * driver does not know. */
	if (run->cu->get_error_name(rc, &name) != CUDA_SUCCESS)
		name = NULL;
	if (run->cu->get_error_string(rc, &text) != CUDA_SUCCESS)
		text = NULL;
	/* Held memory first: what the user reads of a long message. */
	if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
		memory_held(run, held, sizeof(held));
		return wu_fail(run, SN_WARMUP_CUDA_ERROR,
			       "%s failed: %s%s%s (%d): %s", call, held,
			       strstr(held, SN_DETAIL_SEP) ? "; " : SN_DETAIL_SEP,
			       name ? name : "CUDA_ERROR", (int)rc,
			       text ? text : "unknown error");
	}
	return wu_fail(run, SN_WARMUP_CUDA_ERROR, "%s failed: %s (%d): %s",
		       call, name ? name : "CUDA_ERROR", (int)rc,
		       text ? text : "unknown error");
}

void wu_nccl_error_text(const struct wu_run *run, ncclResult_t rc,
			ncclComm_t comm, char *out, size_t len)
{
	const char *text = run->nc->get_error_string(rc);
	const char *last = run->nc->get_last_error(comm);

	/* ncclGetLastError may hold the detailed reason ("Duplicate GPU
	 * detected ...", "Cuda failure ..."): it is what admins need. */
	snprintf(out, len, "%s (%d)%s%s", text ? text : "NCCL error", (int)rc,
		 last && *last ? ": " : "", last && *last ? last : "");
}

int wu_nccl_fail(struct wu_run *run, ncclResult_t rc, ncclComm_t comm,
		 const char *call)
{
	char text[WU_MESSAGE_MAX / 2];

	wu_nccl_error_text(run, rc, comm, text, sizeof(text));
	return wu_fail(run, SN_WARMUP_NCCL_ERROR, "%s failed: %s", call, text);
}

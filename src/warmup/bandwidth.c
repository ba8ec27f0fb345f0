/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "bandwidth.h"
#include "failed_call.h"

#define WU_TIMED_ITERS 5

struct bw_buffers {
	void *send[WU_MAX_GPUS];
	void *recv[WU_MAX_GPUS];
};

static int alloc_buffers(struct wu_run *run, struct wu_comm *c,
			 struct bw_buffers *b, size_t bytes)
{
	for (int r = 0; r < c->n; r++) {
		cudaError_t rc = cudaSetDevice(r);
		char call[96];

		snprintf(call, sizeof(call), "cudaMalloc(%zu bytes) on device %d",
			 bytes, r);
		if (rc == cudaSuccess)
			rc = cudaMalloc(&b->send[r], bytes);
		if (rc == cudaSuccess)
			rc = cudaMalloc(&b->recv[r], bytes);
		if (rc == cudaSuccess) {
			/* Defined contents: no NaN/denormal surprises. */
			snprintf(call, sizeof(call), "cudaMemset on device %d",
				 r);
			rc = cudaMemset(b->send[r], 0, bytes);
		}
		if (rc != cudaSuccess)
			return wu_cuda_fail(run, rc, call);
	}
	return SN_WARMUP_OK;
}

static void free_buffers(struct wu_comm *c, struct bw_buffers *b)
{
	for (int r = 0; r < c->n; r++) {
		if (cudaSetDevice(r) != cudaSuccess)
			continue;
		if (b->send[r])
			cudaFree(b->send[r]);
		if (b->recv[r])
			cudaFree(b->recv[r]);
	}
}

/* One all-reduce on every rank, enqueued (not waited for on the GPU). */
static int launch(struct wu_run *run, struct wu_comm *c,
		  struct bw_buffers *b, size_t count)
{
	ncclResult_t rc = ncclGroupStart();

	if (rc != ncclSuccess)
		return wu_nccl_fail(run, rc, NULL, "ncclGroupStart");
	for (int r = 0; r < c->n; r++) {
		rc = ncclAllReduce(b->send[r], b->recv[r], count, ncclFloat,
				   ncclSum, c->comms[r], c->streams[r]);
		if (rc != ncclSuccess && rc != ncclInProgress) {
			ncclGroupEnd();
			return wu_nccl_fail(run, rc, c->comms[r],
					    "ncclAllReduce (bandwidth)");
		}
	}
	rc = ncclGroupEnd();
	if (rc != ncclSuccess && rc != ncclInProgress)
		return wu_nccl_fail(run, rc, NULL,
				    "ncclGroupEnd (bandwidth all-reduce)");
	/* A non-blocking communicator must leave ncclInProgress before
	 * the next NCCL call on it. */
	return wu_comm_wait(run, c, "bandwidth all-reduce");
}

int wu_bandwidth(struct wu_run *run, struct wu_comm *c)
{
	size_t count = (size_t)(run->opt.bytes / sizeof(float));
	size_t bytes = count * sizeof(float);
	struct bw_buffers b = { 0 };
	double t0, seconds, algbw, busbw;
	int code;

	wu_phase_begin(run, WU_PHASE_BANDWIDTH, "cudaMalloc (bandwidth buffers)");
	code = alloc_buffers(run, c, &b, bytes);
	if (code)
		goto out;
	wu_doing(run, "ncclAllReduce (bandwidth warm-up)");
	code = launch(run, c, &b, count);
	if (!code)
		code = wu_comm_wait_streams(run, c, "bandwidth warm-up");
	if (code)
		goto out;

	wu_doing(run, "ncclAllReduce (bandwidth, timed)");
	t0 = wu_now();
	for (int i = 0; i < WU_TIMED_ITERS && !code; i++)
		code = launch(run, c, &b, count);
	if (!code)
		code = wu_comm_wait_streams(run, c, "bandwidth all-reduce");
	if (!code)
		code = wu_comm_wait(run, c, "bandwidth all-reduce");
	if (code)
		goto out;
	seconds = (wu_now() - t0) / WU_TIMED_ITERS;

	/* nccl-tests' definitions for all-reduce. */
	algbw = (double)bytes / seconds / 1e9;
	busbw = algbw * 2.0 * (c->n - 1) / c->n;
	pthread_mutex_lock(&run->lock);
	run->busbw_measured = true;
	run->busbw_gbps = busbw;
	pthread_mutex_unlock(&run->lock);
	wu_phase_end(run);

	if (c->n == 1) {
		wu_note(run, "1 GPU: bus bandwidth is 0 by definition, floor not applied");
	} else if (run->opt.min_busbw_gbps > 0 &&
		   busbw < run->opt.min_busbw_gbps) {
		code = wu_fail(run, SN_WARMUP_LOW_BANDWIDTH,
			       "all-reduce bus bandwidth %.1f GB/s is below the floor of %g GB/s (%zu bytes, %d GPUs)",
			       busbw, run->opt.min_busbw_gbps, bytes, c->n);
	}
out:
	/* After a failure the GPU may be wedged and cudaFree would block:
	 * leave the memory to process exit. */
	if (code == SN_WARMUP_OK || code == SN_WARMUP_LOW_BANDWIDTH)
		free_buffers(c, &b);
	return code;
}

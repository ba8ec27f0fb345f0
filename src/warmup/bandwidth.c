/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "bandwidth.h"
#include "cuda_driver.h"
#include "failed_call.h"
#include "nccl_loader.h"

#define WU_TIMED_ITERS 5

struct bw_buffers {
	CUdeviceptr send[WU_MAX_GPUS];
	CUdeviceptr recv[WU_MAX_GPUS];
};

static int alloc_buffers(struct wu_run *run, struct wu_comm *c,
			 struct bw_buffers *b, size_t bytes)
{
	const struct wu_cu *cu = run->cu;

	for (int r = 0; r < c->n; r++) {
		int code = wu_cu_use(run, r);
		CUresult rc;
		char call[96];

		if (code)
			return code;
		snprintf(call, sizeof(call), "cuMemAlloc(%zu bytes) on device %d",
			 bytes, r);
		rc = cu->mem_alloc(&b->send[r], bytes);
		if (rc == CUDA_SUCCESS)
			rc = cu->mem_alloc(&b->recv[r], bytes);
		if (rc == CUDA_SUCCESS) {
			/* Defined contents: no NaN/denormal surprises. */
			snprintf(call, sizeof(call), "cuMemsetD32 on device %d",
				 r);
			rc = cu->memset_d32(b->send[r], 0, bytes / 4);
		}
		if (rc != CUDA_SUCCESS)
			return wu_cuda_fail(run, rc, call);
	}
	return SN_WARMUP_OK;
}

static void free_buffers(struct wu_run *run, struct wu_comm *c,
			 struct bw_buffers *b)
{
	for (int r = 0; r < c->n; r++) {
		if (wu_cu_use(run, r) != SN_WARMUP_OK)
			continue;
		if (b->send[r])
			run->cu->mem_free(b->send[r]);
		if (b->recv[r])
			run->cu->mem_free(b->recv[r]);
	}
}

/* One all-reduce on every rank, enqueued (not waited for on the GPU). */
static int launch(struct wu_run *run, struct wu_comm *c,
		  struct bw_buffers *b, size_t count)
{
	const struct wu_nccl *nc = run->nc;
	ncclResult_t rc = nc->group_start();

	if (rc != ncclSuccess)
		return wu_nccl_fail(run, rc, NULL, "ncclGroupStart");
	for (int r = 0; r < c->n; r++) {
		rc = nc->all_reduce((void *)b->send[r], (void *)b->recv[r],
				    count, ncclFloat, ncclSum, c->comms[r],
				    c->streams[r]);
		if (rc != ncclSuccess && rc != ncclInProgress) {
			nc->group_end();
			return wu_nccl_fail(run, rc, c->comms[r],
					    "ncclAllReduce (bandwidth)");
		}
	}
	rc = nc->group_end();
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
	t0 = sn_clock_ms();
	for (int i = 0; i < WU_TIMED_ITERS && !code; i++)
		code = launch(run, c, &b, count);
	if (!code)
		code = wu_comm_wait_streams(run, c, "bandwidth all-reduce");
	if (!code)
		code = wu_comm_wait(run, c, "bandwidth all-reduce");
	if (code)
		goto out;
	/* sn_clock_ms()'s fraction: one iteration can take under 1 ms. */
	seconds = (sn_clock_ms() - t0) / 1e3 / WU_TIMED_ITERS;

	/* nccl-tests' definitions for all-reduce. */
	algbw = (double)bytes / seconds / 1e9;
	busbw = algbw * 2.0 * (c->nranks - 1) / c->nranks;
	pthread_mutex_lock(&run->lock);
	/* One rank moves nothing between GPUs: not measured, not 0. */
	run->busbw_measured = c->nranks > 1;
	run->busbw_gbps = busbw;
	pthread_mutex_unlock(&run->lock);
	wu_phase_end(run);

	if (c->nranks == 1 && run->opt.min_busbw_gbps > 0) {
		wu_note(run, "1 GPU" SN_SUMMARY_WARNING "bus bandwidth floor of %g GB/s not measurable with one rank (not met, not failed)",
			run->opt.min_busbw_gbps);
	} else if (c->nranks == 1) {
		wu_note(run, "1 GPU: bus bandwidth not measurable with one rank");
	} else if (run->opt.min_busbw_gbps > 0 &&
		   busbw < run->opt.min_busbw_gbps) {
		/* Across nodes the slowest link sets everyone's busbw. */
		code = wu_fail(run, SN_WARMUP_LOW_BANDWIDTH,
			       "%s bus bandwidth %.1f GB/s is below the floor of %g GB/s (%zu bytes, %d GPUs)",
			       run->fabric.nranks > c->n ? "inter-node all-reduce" : "all-reduce",
			       busbw, run->opt.min_busbw_gbps, bytes, c->nranks);
	}
out:
	/* After a failure the GPU may be wedged and cuMemFree would block:
	 * leave the memory to process exit. */
	if (code == SN_WARMUP_OK || code == SN_WARMUP_LOW_BANDWIDTH)
		free_buffers(run, c, &b);
	return code;
}

/* SPDX-License-Identifier: MIT */
/*
 * NCCL's own init has no timeout (NVIDIA/nccl #1677): the recommended
 * pattern is config.blocking = 0, poll ncclCommGetAsyncError, and
 * ncclCommAbort on expiry.  Every step here polls against the run's soft
 * deadline; the watchdog covers calls that block anyway.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "comm.h"
#include "failed_call.h"

static void poll_pause(void)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 200 * 1000 };

	nanosleep(&ts, NULL);
}

static bool nccl_ok(ncclResult_t rc)
{
	return rc == ncclSuccess || rc == ncclInProgress;
}

static int timeout_fail(struct wu_run *run, const char *what)
{
	return wu_fail(run, SN_WARMUP_TIMEOUT,
		       "%s did not finish within the %g s deadline",
		       what, run->opt.timeout_s);
}

int wu_comm_wait(struct wu_run *run, struct wu_comm *c, const char *what)
{
	for (;;) {
		bool busy = false;

		for (int r = 0; r < c->n; r++) {
			ncclResult_t state = ncclSuccess;
			ncclResult_t rc;
			char call[128];

			if (!c->comms[r])
				continue;
			rc = ncclCommGetAsyncError(c->comms[r], &state);
			if (rc == ncclSuccess && state == ncclInProgress) {
				busy = true;
				continue;
			}
			if (rc == ncclSuccess && state == ncclSuccess)
				continue;
			snprintf(call, sizeof(call), "%s (rank %d)", what, r);
			return wu_nccl_fail(run, rc != ncclSuccess ? rc : state,
					    c->comms[r], call);
		}
		if (!busy)
			return SN_WARMUP_OK;
		if (wu_past_soft_deadline(run))
			return timeout_fail(run, what);
		poll_pause();
	}
}

int wu_comm_wait_streams(struct wu_run *run, struct wu_comm *c,
			 const char *what)
{
	for (;;) {
		bool busy = false;

		for (int r = 0; r < c->n; r++) {
			cudaError_t rc = cudaStreamQuery(c->streams[r]);
			char call[128];

			if (rc == cudaErrorNotReady) {
				busy = true;
				continue;
			}
			if (rc == cudaSuccess)
				continue;
			snprintf(call, sizeof(call),
				 "cudaStreamQuery after %s (device %d)", what,
				 r);
			return wu_cuda_fail(run, rc, call);
		}
		if (!busy)
			return SN_WARMUP_OK;
		if (wu_past_soft_deadline(run))
			return timeout_fail(run, what);
		poll_pause();
	}
}

int wu_comm_init(struct wu_run *run, struct wu_comm *c)
{
	ncclUniqueId id;
	ncclResult_t rc;
	int code;

	memset(c, 0, sizeof(*c));
	c->n = (int)run->n_gpus;
	wu_phase_begin(run, WU_PHASE_COMM_INIT, "ncclGetUniqueId");
	rc = ncclGetUniqueId(&id);
	if (rc != ncclSuccess)
		return wu_nccl_fail(run, rc, NULL, "ncclGetUniqueId");

	wu_doing(run, "ncclCommInitRankConfig");
	rc = ncclGroupStart();
	if (rc != ncclSuccess)
		return wu_nccl_fail(run, rc, NULL, "ncclGroupStart");
	for (int r = 0; r < c->n; r++) {
		ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
		cudaError_t crc;
		char call[96];

		config.blocking = 0;
		crc = cudaSetDevice(r);
		if (crc != cudaSuccess) {
			ncclGroupEnd();
			snprintf(call, sizeof(call), "cudaSetDevice(%d)", r);
			return wu_cuda_fail(run, crc, call);
		}
		rc = ncclCommInitRankConfig(&c->comms[r], c->n, id, r, &config);
		if (!nccl_ok(rc)) {
			ncclGroupEnd();
			snprintf(call, sizeof(call),
				 "ncclCommInitRankConfig(rank %d of %d, device %d)",
				 r, c->n, r);
			return wu_nccl_fail(run, rc, c->comms[r], call);
		}
	}
	wu_doing(run, "ncclGroupEnd (communicator init)");
	rc = ncclGroupEnd();
	if (!nccl_ok(rc))
		return wu_nccl_fail(run, rc, NULL,
				    "ncclGroupEnd (communicator init)");
	wu_doing(run, "ncclCommGetAsyncError (communicator init)");
	code = wu_comm_wait(run, c, "NCCL communicator init");
	wu_phase_end(run);
	return code;
}

static int setup_scratch(struct wu_run *run, struct wu_comm *c)
{
	for (int r = 0; r < c->n; r++) {
		float mine = (float)(r + 1);
		cudaError_t rc;
		char call[96];

		rc = cudaSetDevice(r);
		snprintf(call, sizeof(call), "cudaSetDevice(%d)", r);
		if (rc == cudaSuccess) {
			rc = cudaStreamCreateWithFlags(&c->streams[r],
						       cudaStreamNonBlocking);
			snprintf(call, sizeof(call),
				 "cudaStreamCreateWithFlags (device %d)", r);
		}
		if (rc == cudaSuccess) {
			rc = cudaMalloc((void **)&c->scratch[r],
					2 * sizeof(float));
			snprintf(call, sizeof(call),
				 "cudaMalloc(8 bytes) on device %d", r);
		}
		if (rc == cudaSuccess) {
			rc = cudaMemcpy(c->scratch[r], &mine, sizeof(mine),
					cudaMemcpyHostToDevice);
			snprintf(call, sizeof(call),
				 "cudaMemcpy to device %d", r);
		}
		if (rc != cudaSuccess)
			return wu_cuda_fail(run, rc, call);
	}
	return SN_WARMUP_OK;
}

int wu_comm_verify(struct wu_run *run, struct wu_comm *c)
{
	const float want = (float)c->n * (float)(c->n + 1) / 2.0f;
	ncclResult_t rc;
	int code;

	/* The first collective also connects the peers (lazy connect since
	 * NCCL 2.22): ~50 ms of the measured 4xH200 run. */
	wu_phase_begin(run, WU_PHASE_ALLREDUCE, "cudaMalloc/cudaMemcpy (all-reduce buffers)");
	code = setup_scratch(run, c);
	if (code)
		return code;
	wu_doing(run, "ncclAllReduce (1 float)");
	rc = ncclGroupStart();
	if (rc != ncclSuccess)
		return wu_nccl_fail(run, rc, NULL, "ncclGroupStart");
	for (int r = 0; r < c->n; r++) {
		rc = ncclAllReduce(c->scratch[r], c->scratch[r] + 1, 1,
				   ncclFloat, ncclSum, c->comms[r],
				   c->streams[r]);
		if (!nccl_ok(rc)) {
			ncclGroupEnd();
			return wu_nccl_fail(run, rc, c->comms[r],
					    "ncclAllReduce (1 float)");
		}
	}
	rc = ncclGroupEnd();
	if (!nccl_ok(rc))
		return wu_nccl_fail(run, rc, NULL,
				    "ncclGroupEnd (1-float all-reduce)");
	code = wu_comm_wait(run, c, "1-float all-reduce");
	if (code)
		return code;
	wu_doing(run, "cudaStreamQuery (1-float all-reduce)");
	code = wu_comm_wait_streams(run, c, "1-float all-reduce");
	if (code)
		return code;
	/* Checked before the copy-back: an error raised by the kernel
	 * shows up here, not in the stream query. */
	code = wu_comm_wait(run, c, "1-float all-reduce");
	if (code)
		return code;
	wu_doing(run, "cudaMemcpy (all-reduce result)");
	for (int r = 0; r < c->n; r++) {
		float got = 0;
		cudaError_t crc;
		char call[96];

		crc = cudaSetDevice(r);
		if (crc == cudaSuccess)
			crc = cudaMemcpy(&got, c->scratch[r] + 1, sizeof(got),
					 cudaMemcpyDeviceToHost);
		if (crc != cudaSuccess) {
			snprintf(call, sizeof(call),
				 "cudaMemcpy of the all-reduce result from device %d",
				 r);
			return wu_cuda_fail(run, crc, call);
		}
		/* Small integers are exact in float: compare exactly. */
		if (got != want)
			return wu_fail(run, SN_WARMUP_WRONG_RESULT,
				       "all-reduce returned %g on device %d (%s), expected %g",
				       (double)got, r, run->gpus[r].busid,
				       (double)want);
	}
	wu_phase_end(run);
	return SN_WARMUP_OK;
}

int wu_comm_teardown(struct wu_run *run, struct wu_comm *c)
{
	int code = SN_WARMUP_OK;
	ncclResult_t rc;

	wu_phase_begin(run, WU_PHASE_TEARDOWN, "ncclCommFinalize");
	for (int r = 0; r < c->n; r++) {
		rc = ncclCommFinalize(c->comms[r]);
		if (!nccl_ok(rc))
			return wu_nccl_fail(run, rc, c->comms[r],
					    "ncclCommFinalize");
	}
	code = wu_comm_wait(run, c, "ncclCommFinalize");
	if (code)
		return code;
	wu_doing(run, "ncclCommDestroy");
	for (int r = 0; r < c->n; r++) {
		rc = ncclCommDestroy(c->comms[r]);
		if (!nccl_ok(rc))
			return wu_nccl_fail(run, rc, NULL, "ncclCommDestroy");
		c->comms[r] = NULL;
	}
	wu_doing(run, "cudaFree/cudaStreamDestroy");
	for (int r = 0; r < c->n; r++) {
		cudaError_t crc = cudaSetDevice(r);

		if (crc == cudaSuccess && c->scratch[r])
			crc = cudaFree(c->scratch[r]);
		c->scratch[r] = NULL;
		if (crc == cudaSuccess && c->streams[r])
			crc = cudaStreamDestroy(c->streams[r]);
		c->streams[r] = NULL;
		if (crc != cudaSuccess)
			return wu_cuda_fail(run, crc, "teardown (cudaFree/cudaStreamDestroy)");
	}
	wu_phase_end(run);
	return SN_WARMUP_OK;
}

void wu_comm_abort(struct wu_comm *c)
{
	for (int r = 0; r < c->n; r++) {
		if (c->comms[r])
			ncclCommAbort(c->comms[r]);
		c->comms[r] = NULL;
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * NCCL's own init has no timeout (NVIDIA/nccl #1677): the recommended
 * pattern is config.blocking = 0, poll ncclCommGetAsyncError, and
 * ncclCommAbort on expiry.  Every step here polls against the run's soft
 * deadline; the watchdog covers calls that block anyway.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm.h"
#include "cuda_driver.h"
#include "failed_call.h"
#include "nccl_loader.h"

/*
 * Between two polls of a wait that began at T0: 200 us at first (a small
 * collective takes 0.2-0.5 ms on NVLink), 1 ms once it has lasted 10 ms,
 * 5 ms after a second (an init waiting for other nodes), so that many
 * helpers waiting on one machine (the loopback bench, a node with many
 * GPUs in fabric mode) do not spin its CPUs.
 */
static void poll_pause(double t0_ms)
{
	double waited_ms = sn_clock_ms() - t0_ms;
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 200 * 1000 };

	if (waited_ms > 1000)
		ts.tv_nsec = 5 * 1000 * 1000;
	else if (waited_ms > 10)
		ts.tv_nsec = 1000 * 1000;
	nanosleep(&ts, NULL);
}

static bool nccl_ok(ncclResult_t rc)
{
	return rc == ncclSuccess || rc == ncclInProgress;
}

static int timeout_fail(struct wu_run *run, const char *what)
{
	return wu_fail(run, SN_WARMUP_TIMEOUT,
		       "%s did not finish within the %u s deadline",
		       what, run->opt.timeout_s);
}

/* Fabric mode: another node failed, so what this one waits for may never come. */
static int peer_failed(struct wu_run *run)
{
	return run->fabric.peer_failed ? run->fabric.peer_failed(run) : 0;
}

int wu_comm_wait(struct wu_run *run, struct wu_comm *c, const char *what)
{
	double t0 = sn_clock_ms();

	for (;;) {
		bool busy = false;
		int code;

		for (int r = 0; r < c->n; r++) {
			ncclResult_t state = ncclSuccess;
			ncclResult_t rc;
			char call[128];

			if (!c->comms[r])
				continue;
			rc = run->nc->comm_get_async_error(c->comms[r], &state);
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
		code = peer_failed(run);
		if (code)
			return code;
		poll_pause(t0);
	}
}

int wu_comm_wait_streams(struct wu_run *run, struct wu_comm *c,
			 const char *what)
{
	double t0 = sn_clock_ms();

	for (;;) {
		bool busy = false;
		int code;

		for (int r = 0; r < c->n; r++) {
			CUresult rc = run->cu->stream_query(c->streams[r]);
			char call[128];

			if (rc == CUDA_ERROR_NOT_READY) {
				busy = true;
				continue;
			}
			if (rc == CUDA_SUCCESS)
				continue;
			snprintf(call, sizeof(call),
				 "cuStreamQuery after %s (device %d)", what,
				 r);
			return wu_cuda_fail(run, rc, call);
		}
		if (!busy)
			return SN_WARMUP_OK;
		if (wu_past_soft_deadline(run))
			return timeout_fail(run, what);
		code = peer_failed(run);
		if (code)
			return code;
		poll_pause(t0);
	}
}

void wu_comm_local_only(void)
{
	/*
	 * A job's NCCL_COMM_ID names the job's bootstrap root, often on
	 * another node: with it, NCCL's rank 0 would listen there (init.cc,
	 * bootstrapCreateRoot) and fail, or collide with the job's own root.
	 * This process is not the job.
	 */
	unsetenv("NCCL_COMM_ID");
}

/*
 * Comm mode's throwaway communicator: WU_COMM_CTAS channels, unless the
 * job sets NCCL's channel count itself.  The same transports, algorithms
 * and protocols as the job's (24 channels on a 4xH200 node), with fewer
 * connections and buffers: the first all-reduce and the collectives took
 * 46 and 23 ms instead of 82 and 70 on 4 H200s (docs/dev/benchmarks.md, 12).
 * Bandwidth and fabric modes keep NCCL's own count: busbw and the
 * network's connections depend on it.
 */
#define WU_COMM_CTAS 2

static int comm_max_ctas(const struct wu_run *run)
{
	static const char *const job[] = { "NCCL_MIN_NCHANNELS",
		"NCCL_MAX_NCHANNELS", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS" };

	if (run->opt.mode != SN_WARMUP_MODE_COMM)
		return 0;
	for (size_t i = 0; i < sizeof(job) / sizeof(job[0]); i++)
		if (getenv(job[i]))
			return 0;
	return WU_COMM_CTAS;
}

int wu_comm_init(struct wu_run *run, struct wu_comm *c)
{
	int max_ctas = comm_max_ctas(run);
	const struct wu_nccl *nc = run->nc;
	ncclUniqueId id;
	ncclResult_t rc;
	int code;

	memset(c, 0, sizeof(*c));
	c->n = (int)run->n_gpus;
	c->nranks = run->fabric.nranks ? run->fabric.nranks : c->n;
	c->rank_base = run->fabric.nranks ? run->fabric.rank_base : 0;
	wu_phase_begin(run, WU_PHASE_COMM_INIT, "cuMemGetInfo");
	/* Free memory before NCCL: what it takes is measured against it. */
	for (int r = 0; r < c->n; r++) {
		size_t total = 0;
		CUresult crc;

		code = wu_cu_use(run, r);
		if (code)
			return code;
		crc = run->cu->mem_get_info(&c->free_before[r], &total);
		if (crc != CUDA_SUCCESS)
			return wu_cuda_fail(run, crc, "cuMemGetInfo");
	}
	/*
	 * Fabric mode: the root's ncclGetUniqueId, handed to every node by
	 * the authenticated coordination (fabric_run.c); NCCL's bootstrap
	 * root already listens in the root's process.
	 */
	if (run->fabric.has_nccl_id) {
		memcpy(id.internal, run->fabric.nccl_id, sizeof(id.internal));
	} else {
		wu_doing(run, "ncclGetUniqueId");
		rc = nc->get_unique_id(&id);
		if (rc != ncclSuccess)
			return wu_nccl_fail(run, rc, NULL, "ncclGetUniqueId");
	}

	wu_doing(run, "ncclCommInitRankConfig");
	rc = nc->group_start();
	if (rc != ncclSuccess)
		return wu_nccl_fail(run, rc, NULL, "ncclGroupStart");
	for (int r = 0; r < c->n; r++) {
		ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
		char call[96];

		config.blocking = 0;
		if (max_ctas)
			config.maxCTAs = max_ctas;
		/* NCCL takes the device from the current context. */
		code = wu_cu_use(run, r);
		if (code) {
			nc->group_end();
			return code;
		}
		rc = nc->comm_init_rank_config(&c->comms[r], c->nranks, id,
					       c->rank_base + r, &config);
		if (!nccl_ok(rc)) {
			nc->group_end();
			snprintf(call, sizeof(call),
				 "ncclCommInitRankConfig(rank %d of %d, device %d)",
				 c->rank_base + r, c->nranks, r);
			return wu_nccl_fail(run, rc, c->comms[r], call);
		}
	}
	wu_doing(run, "ncclGroupEnd (communicator init)");
	rc = nc->group_end();
	if (!nccl_ok(rc))
		return wu_nccl_fail(run, rc, NULL,
				    "ncclGroupEnd (communicator init)");
	wu_doing(run, "ncclCommGetAsyncError (communicator init)");
	code = wu_comm_wait(run, c, "NCCL communicator init");
	wu_phase_end(run);
	return code;
}

int wu_comm_teardown(struct wu_run *run, struct wu_comm *c)
{
	const struct wu_nccl *nc = run->nc;
	const struct wu_cu *cu = run->cu;
	int code = SN_WARMUP_OK;
	ncclResult_t rc;

	wu_phase_begin(run, WU_PHASE_TEARDOWN, "ncclCommFinalize");
	for (int r = 0; r < c->n; r++) {
		rc = nc->comm_finalize(c->comms[r]);
		if (!nccl_ok(rc))
			return wu_nccl_fail(run, rc, c->comms[r],
					    "ncclCommFinalize");
	}
	code = wu_comm_wait(run, c, "ncclCommFinalize");
	if (code)
		return code;
	wu_doing(run, "ncclCommDestroy");
	for (int r = 0; r < c->n; r++) {
		rc = nc->comm_destroy(c->comms[r]);
		if (!nccl_ok(rc))
			return wu_nccl_fail(run, rc, NULL, "ncclCommDestroy");
		c->comms[r] = NULL;
	}
	wu_doing(run, "cuMemFree/cuStreamDestroy");
	for (int r = 0; r < c->n; r++) {
		CUresult crc = CUDA_SUCCESS;

		code = wu_cu_use(run, r);
		if (code)
			return code;
		if (c->scratch[r])
			crc = cu->mem_free(c->scratch[r]);
		c->scratch[r] = 0;
		if (crc == CUDA_SUCCESS && c->streams[r])
			crc = cu->stream_destroy(c->streams[r]);
		c->streams[r] = NULL;
		if (crc != CUDA_SUCCESS)
			return wu_cuda_fail(run, crc, "teardown (cuMemFree/cuStreamDestroy)");
	}
	wu_phase_end(run);
	return SN_WARMUP_OK;
}

void wu_comm_abort(struct wu_run *run, struct wu_comm *c)
{
	for (int r = 0; r < c->n; r++) {
		if (c->comms[r] && run->nc)
			run->nc->comm_abort(c->comms[r]);
		c->comms[r] = NULL;
	}
}

int wu_comm_end(struct wu_run *run, struct wu_comm *c, int code)
{
	/*
	 * --teardown exit: the verdict is in; process exit releases the
	 * communicators and contexts (the driver does it while the process
	 * exits, before its parent can reap it), without the explicit
	 * finalize/destroy/free round trips.
	 */
	if (run->opt.teardown_exit &&
	    (code == SN_WARMUP_OK || code == SN_WARMUP_LOW_BANDWIDTH))
		return code;
	/* A slow link is a verdict, not a broken communicator. */
	if (code == SN_WARMUP_OK || code == SN_WARMUP_LOW_BANDWIDTH) {
		int torn = wu_comm_teardown(run, c);

		if (torn)
			code = torn;
		else
			return code;
	}
	wu_doing(run, "ncclCommAbort");
	wu_comm_abort(run, c);
	return code;
}

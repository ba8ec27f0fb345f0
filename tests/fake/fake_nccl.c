/* SPDX-License-Identifier: MIT */
/*
 * A fake NCCL (libnccl.so.2) for tests without a GPU, built from the real
 * nccl.h.  Communicators live in this process; collectives run on the host
 * at ncclGroupEnd (device memory is host memory in the fake libcudart) and
 * complete on their streams after a delay chosen from FAKE_NCCL_BUSBW_GBPS.
 * Faults are injected with FAKE_NCCL_* (see README.md).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

/* nccl.h declares these without "void": give them real prototypes. */
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

#include "fake_common.h"

#define MAX_PENDING 1024
#define SAMPLE 4096

struct ncclComm {
	unsigned long long clique;	/* from the unique ID */
	int rank;
	int nranks;
	int device;
	bool blocking;
	ncclResult_t state;		/* what ncclCommGetAsyncError says */
	double ready_at;		/* InProgress until then (0: forever) */
};

enum op_kind { OP_INIT, OP_ALLREDUCE };

struct op {
	enum op_kind kind;
	ncclComm_t comm;
	const void *send;
	void *recv;
	size_t count;
	cudaStream_t stream;
};

static struct {
	pthread_mutex_t lock;
	int group_depth;
	int n_pending;
	struct op pending[MAX_PENDING];
	struct op batch[MAX_PENDING];	/* one clique's ops, in run_group */
	unsigned long long next_id;
	char last_error[512];
} nccl = { .lock = PTHREAD_MUTEX_INITIALIZER, .next_id = 1 };

__attribute__((constructor)) static void fake_nccl_loaded(void)
{
	fake_log_process("FAKE_NCCL_LOG", "nccl");
}

static ncclResult_t set_error(ncclResult_t rc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static ncclResult_t set_error(ncclResult_t rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(nccl.last_error, sizeof(nccl.last_error), fmt, ap);
	va_end(ap);
	return rc;
}

static void crash_if(const char *phase)
{
	if (fake_env_has("FAKE_NCCL_CRASH", phase))
		raise(SIGSEGV);
}

ncclResult_t ncclGetVersion(int *version)
{
	*version = (int)fake_env_num("FAKE_NCCL_VERSION", NCCL_VERSION_CODE);
	return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
	if (fake_env_has("FAKE_NCCL_FAIL", "uniqueid"))
		return set_error(ncclSystemError,
				 "fake: injected failure (FAKE_NCCL_FAIL=uniqueid)");
	memset(uniqueId, 0, sizeof(*uniqueId));
	pthread_mutex_lock(&nccl.lock);
	memcpy(uniqueId->internal, &nccl.next_id, sizeof(nccl.next_id));
	nccl.next_id++;
	pthread_mutex_unlock(&nccl.lock);
	return ncclSuccess;
}

/* Runs under nccl.lock. */
static void run_init(ncclComm_t comm)
{
	double delay = fake_env_num("FAKE_NCCL_INIT_DELAY_MS", 0) / 1e3;

	crash_if("init");
	if (fake_env_has("FAKE_NCCL_FAIL", "init")) {
		comm->state = set_error(ncclSystemError,
					"fake: injected init failure on rank %d (FAKE_NCCL_FAIL=init)",
					comm->rank);
		return;
	}
	if (fake_env_has("FAKE_NCCL_HANG", "init")) {
		if (comm->blocking)
			fake_hang();
		comm->state = ncclInProgress;
		comm->ready_at = 0;
		return;
	}
	if (comm->blocking) {
		fake_sleep(delay);
		comm->state = ncclSuccess;
	} else {
		comm->state = ncclInProgress;
		comm->ready_at = fake_now() + delay;
	}
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *out, int nranks,
				    ncclUniqueId commId, int rank,
				    ncclConfig_t *config)
{
	ncclComm_t comm;
	ncclResult_t rc = ncclSuccess;

	if (nranks < 1 || rank < 0 || rank >= nranks)
		return set_error(ncclInvalidArgument,
				 "fake: invalid rank %d of %d", rank, nranks);
	if (config && config->magic != 0xcafebeef)
		return set_error(ncclInvalidArgument,
				 "fake: config not initialised with NCCL_CONFIG_INITIALIZER");
	comm = calloc(1, sizeof(*comm));
	if (!comm)
		return set_error(ncclSystemError, "fake: out of memory");
	memcpy(&comm->clique, commId.internal, sizeof(comm->clique));
	comm->rank = rank;
	comm->nranks = nranks;
	cudaGetDevice(&comm->device);
	comm->blocking = !config || config->blocking == NCCL_CONFIG_UNDEF_INT ||
			 config->blocking != 0;
	comm->state = ncclInProgress;
	comm->ready_at = 0;
	*out = comm;

	pthread_mutex_lock(&nccl.lock);
	if (nccl.group_depth > 0 && nccl.n_pending < MAX_PENDING) {
		nccl.pending[nccl.n_pending++] =
			(struct op){ .kind = OP_INIT, .comm = comm };
	} else {
		run_init(comm);
		if (comm->state != ncclSuccess && comm->state != ncclInProgress)
			rc = comm->state;
		else if (!comm->blocking)
			rc = comm->state;
	}
	pthread_mutex_unlock(&nccl.lock);
	return rc;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks,
			      ncclUniqueId commId, int rank)
{
	return ncclCommInitRankConfig(comm, nranks, commId, rank, NULL);
}

static void refresh(ncclComm_t comm)
{
	if (comm->state == ncclInProgress && comm->ready_at > 0 &&
	    fake_now() >= comm->ready_at)
		comm->state = ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
	if (!comm)
		return ncclInvalidArgument;
	pthread_mutex_lock(&nccl.lock);
	refresh(comm);
	*asyncError = comm->state;
	pthread_mutex_unlock(&nccl.lock);
	return ncclSuccess;
}

ncclResult_t ncclGroupStart(void)
{
	pthread_mutex_lock(&nccl.lock);
	nccl.group_depth++;
	pthread_mutex_unlock(&nccl.lock);
	return ncclSuccess;
}

/* Seconds one all-reduce of BYTES takes for a target bus bandwidth. */
static double allreduce_seconds(size_t bytes, int nranks)
{
	double busbw = fake_env_num("FAKE_NCCL_BUSBW_GBPS", 0) * 1e9;
	double algbw;

	if (busbw <= 0 || nranks < 2)
		return 0;
	algbw = busbw * nranks / (2.0 * (nranks - 1));
	return (double)bytes / algbw;
}

/* One all-reduce: the ops of one clique in the group.  Under nccl.lock. */
static ncclResult_t run_allreduce(struct op *ops, int n)
{
	int nranks = ops[0].comm->nranks;
	size_t count = ops[0].count;
	double started = fake_now(), seconds;

	if (n != nranks)
		return set_error(ncclInvalidUsage,
				 "fake: all-reduce with %d of %d ranks in the group would hang",
				 n, nranks);
	for (int i = 0; i < n; i++)
		if (ops[i].count != count)
			return set_error(ncclInvalidUsage,
					 "fake: ranks disagree on the count");
	crash_if("allreduce");
	if (fake_env_has("FAKE_NCCL_FAIL", "allreduce")) {
		for (int i = 0; i < n; i++)
			ops[i].comm->state = set_error(ncclUnhandledCudaError,
						       "fake: injected all-reduce failure (FAKE_NCCL_FAIL=allreduce)");
		return ncclSuccess;
	}
	/* Large messages: reduce only both ends, so that the host's speed
	 * does not swamp the simulated time (FAKE_NCCL_BUSBW_GBPS). */
	for (size_t e = 0; e < count; e++) {
		float sum = 0;

		if (count > 2 * SAMPLE && e == SAMPLE)
			e = count - SAMPLE;
		for (int i = 0; i < n; i++)
			sum += ((const float *)ops[i].send)[e];
		for (int i = 0; i < n; i++)
			((float *)ops[i].recv)[e] = sum;
	}
	if (fake_env_has("FAKE_NCCL_WRONG_RESULT", "1"))
		((float *)ops[n - 1].recv)[0] += 1.0f;
	seconds = allreduce_seconds(count * sizeof(float), nranks) -
		  (fake_now() - started);
	for (int i = 0; i < n; i++) {
		if (fake_env_has("FAKE_NCCL_HANG", "allreduce"))
			fake_cuda_stream_hang(ops[i].stream);
		else
			fake_cuda_stream_enqueue(ops[i].stream, seconds);
	}
	return ncclSuccess;
}

/* Runs the pending ops of a finished group.  Under nccl.lock. */
static ncclResult_t run_group(void)
{
	ncclResult_t rc = ncclSuccess;
	bool nonblocking = false;
	bool done[MAX_PENDING] = { false };

	for (int i = 0; i < nccl.n_pending; i++) {
		struct op *op = &nccl.pending[i];

		nonblocking |= !op->comm->blocking;
		if (op->kind != OP_INIT)
			continue;
		run_init(op->comm);
		if (op->comm->state != ncclSuccess &&
		    op->comm->state != ncclInProgress && op->comm->blocking)
			rc = op->comm->state;
		done[i] = true;
	}
	for (int i = 0; i < nccl.n_pending && rc == ncclSuccess; i++) {
		int n = 0;

		if (done[i])
			continue;
		for (int k = i; k < nccl.n_pending; k++) {
			if (done[k] || nccl.pending[k].comm->clique !=
					       nccl.pending[i].comm->clique)
				continue;
			nccl.batch[n++] = nccl.pending[k];
			done[k] = true;
		}
		rc = run_allreduce(nccl.batch, n);
	}
	nccl.n_pending = 0;
	if (rc == ncclSuccess && nonblocking)
		return ncclInProgress;
	return rc;
}

ncclResult_t ncclGroupEnd(void)
{
	ncclResult_t rc = ncclSuccess;

	pthread_mutex_lock(&nccl.lock);
	if (nccl.group_depth == 0) {
		pthread_mutex_unlock(&nccl.lock);
		return set_error(ncclInvalidUsage,
				 "fake: ncclGroupEnd without ncclGroupStart");
	}
	if (--nccl.group_depth == 0)
		rc = run_group();
	pthread_mutex_unlock(&nccl.lock);
	return rc;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, ncclRedOp_t op,
			   ncclComm_t comm, cudaStream_t stream)
{
	ncclResult_t rc = ncclSuccess;

	if (!comm || datatype != ncclFloat || op != ncclSum)
		return set_error(ncclInvalidArgument,
				 "fake: only float sums are supported");
	pthread_mutex_lock(&nccl.lock);
	refresh(comm);
	if (comm->state != ncclSuccess) {
		pthread_mutex_unlock(&nccl.lock);
		return set_error(ncclInvalidUsage,
				 "fake: communicator not ready (state %d)",
				 (int)comm->state);
	}
	if (nccl.n_pending == MAX_PENDING) {
		pthread_mutex_unlock(&nccl.lock);
		return set_error(ncclInternalError, "fake: group too large");
	}
	nccl.pending[nccl.n_pending++] = (struct op){
		.kind = OP_ALLREDUCE, .comm = comm, .send = sendbuff,
		.recv = recvbuff, .count = count, .stream = stream,
	};
	if (nccl.group_depth == 0)
		rc = run_group();
	pthread_mutex_unlock(&nccl.lock);
	return rc;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	if (!comm)
		return ncclInvalidArgument;
	pthread_mutex_lock(&nccl.lock);
	comm->state = ncclInProgress;
	comm->ready_at = fake_env_has("FAKE_NCCL_HANG", "teardown") ? 0 :
			 fake_now();
	pthread_mutex_unlock(&nccl.lock);
	if (comm->blocking) {
		if (comm->ready_at == 0)
			fake_hang();
		comm->state = ncclSuccess;
		return ncclSuccess;
	}
	return ncclInProgress;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	free(comm);
	return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	free(comm);
	return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	*count = comm->nranks;
	return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
	*device = comm->device;
	return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	*rank = comm->rank;
	return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result)
{
	switch (result) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	default: return "unknown result code";
	}
}

const char *ncclGetLastError(ncclComm_t comm)
{
	(void)comm;
	return nccl.last_error;
}

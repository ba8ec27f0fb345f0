/* SPDX-License-Identifier: MIT */
/*
 * A fake NCCL (libnccl.so.2) for tests without a GPU, built from the real
 * nccl.h.  Like the real one it links no CUDA library: it dlopens the
 * driver's libcuda.so.1 (here the fake one) when first needed.
 * Communicators live in this process; collectives run on the host at
 * ncclGroupEnd (device memory is host memory in the fake libcuda) and
 * complete on their streams after a delay chosen from FAKE_NCCL_BUSBW_GBPS.
 * NCCL_ALGO is honoured as NCCL >= 2.24 does (an operation none of the
 * allowed algorithms implements fails with ncclInvalidUsage).  Faults are
 * injected with FAKE_NCCL_* (see README.md).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_nccl.h"

/* nccl.h declares these without "void": give them real prototypes. */
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

#define MAX_PENDING 1024

/* The driver entry points the fake uses, from libcuda.so.1. */
static struct {
	pthread_once_t once;
	CUresult (*ctx_get_device)(CUdevice *dev);
	CUresult (*ctx_get_current)(CUcontext *ctx);
	CUresult (*ctx_set_current)(CUcontext ctx);
	CUresult (*primary_ctx_retain)(CUcontext *ctx, CUdevice dev);
	CUresult (*mem_alloc)(CUdeviceptr *p, size_t bytes);
	CUresult (*mem_free)(CUdeviceptr p);
	void (*stream_enqueue)(struct CUstream_st *s, double seconds);
	void (*stream_hang)(struct CUstream_st *s);
} cu = { .once = PTHREAD_ONCE_INIT };

static void cu_load(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);

	if (!h) {
		fprintf(stderr, "fake nccl: cannot load libcuda.so.1: %s\n",
			dlerror());
		return;
	}
	*(void **)&cu.ctx_get_device = dlsym(h, "cuCtxGetDevice");
	*(void **)&cu.ctx_get_current = dlsym(h, "cuCtxGetCurrent");
	*(void **)&cu.ctx_set_current = dlsym(h, "cuCtxSetCurrent");
	*(void **)&cu.primary_ctx_retain = dlsym(h, "cuDevicePrimaryCtxRetain");
	*(void **)&cu.mem_alloc = dlsym(h, "cuMemAlloc_v2");
	*(void **)&cu.mem_free = dlsym(h, "cuMemFree_v2");
	*(void **)&cu.stream_enqueue = dlsym(h, "fake_cuda_stream_enqueue");
	*(void **)&cu.stream_hang = dlsym(h, "fake_cuda_stream_hang");
}

static bool cu_ready(void)
{
	pthread_once(&cu.once, cu_load);
	return cu.ctx_get_device && cu.ctx_get_current && cu.ctx_set_current &&
	       cu.primary_ctx_retain && cu.mem_alloc && cu.mem_free &&
	       cu.stream_enqueue && cu.stream_hang;
}

static struct {
	pthread_mutex_t lock;
	int group_depth;
	int n_pending;
	struct op pending[MAX_PENDING];
	struct op batch[MAX_PENDING];	/* one clique's ops, in run_group */
	int n_waiting;
	ncclComm_t waiting[MAX_PENDING];	/* blocking, networked */
	char last_error[512];
} nccl = { .lock = PTHREAD_MUTEX_INITIALIZER };

static ncclResult_t run_group(void);
static ncclResult_t wait_blocking(ncclResult_t rc);

__attribute__((constructor)) static void fake_nccl_loaded(void)
{
	fake_log_process("FAKE_NCCL_LOG", "nccl");
}

ncclResult_t fake_nccl_error(ncclResult_t rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(nccl.last_error, sizeof(nccl.last_error), fmt, ap);
	va_end(ap);
	return rc;
}

#define set_error fake_nccl_error

void fake_nccl_lock(void)
{
	pthread_mutex_lock(&nccl.lock);
}

void fake_nccl_unlock(void)
{
	pthread_mutex_unlock(&nccl.lock);
}

void fake_nccl_stream_done(cudaStream_t stream, double seconds)
{
	cu.stream_enqueue(stream, seconds);
}

static void crash_if(const char *phase)
{
	if (fake_env_has("FAKE_NCCL_CRASH", phase))
		raise(SIGSEGV);
}

ncclResult_t ncclGetVersion(int *version)
{
	*version = (int)fake_env_num("FAKE_NCCL_VERSION",
				     FAKE_NCCL_DEFAULT_VERSION);
	return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
	const char *env = getenv("NCCL_COMM_ID");

	if (fake_env_has("FAKE_NCCL_FAIL", "uniqueid"))
		return set_error(ncclSystemError,
				 "fake: injected failure (FAKE_NCCL_FAIL=uniqueid)");
	memset(uniqueId, 0, sizeof(*uniqueId));
	/* NCCL_COMM_ID: the id only encodes that address, as NCCL's does. */
	if (env && *env)
		return fake_net_unique_id((unsigned long long *)uniqueId->internal);
	/* Else a bootstrap root of this process (bootstrapCreateRoot). */
	return fake_uid_create(uniqueId);
}

/* Allocates on the communicator's device, as NCCL does: it switches to
 * that device's primary context for the call, then back. */
static CUresult reserve(ncclComm_t comm, size_t bytes)
{
	CUcontext saved = NULL, ctx = NULL;
	CUresult rc;

	rc = cu.ctx_get_current(&saved);
	if (rc == CUDA_SUCCESS)
		rc = cu.primary_ctx_retain(&ctx, comm->device);
	if (rc == CUDA_SUCCESS)
		rc = cu.ctx_set_current(ctx);
	if (rc == CUDA_SUCCESS)
		rc = cu.mem_alloc(&comm->reserved, bytes);
	cu.ctx_set_current(saved);
	return rc;
}

/* Runs under nccl.lock. */
static void run_init(ncclComm_t comm)
{
	double delay = fake_env_num("FAKE_NCCL_INIT_DELAY_MS", 0) / 1e3;

	crash_if("init");
	if (fake_env_has("FAKE_NCCL_FAIL", "init") ||
	    fake_host_listed("FAKE_NCCL_INIT_FAIL_HOSTS")) {
		comm->state = set_error(ncclSystemError,
					"fake: injected init failure on rank %d (FAKE_NCCL_FAIL=init or FAKE_NCCL_INIT_FAIL_HOSTS)",
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
	/* Device memory for buffers and connections, taken on the comm's
	 * device: NCCL_CUMEM_ENABLE=0 roughly triples it (seed 001). */
	if (!comm->reserved) {
		double mib = fake_env_num("FAKE_NCCL_MEM_MIB", 200);
		const char *cumem = getenv("NCCL_CUMEM_ENABLE");

		if (cumem && strcmp(cumem, "0") == 0)
			mib *= 3;
		if (mib > 0 && reserve(comm, (size_t)(mib * (1 << 20))) !=
				       CUDA_SUCCESS) {
			comm->state = set_error(ncclUnhandledCudaError,
						"fake: cuMemAlloc of %g MiB for the communicator failed",
						mib);
			return;
		}
	}
	if (comm->blocking) {
		fake_sleep(delay);
		comm->state = ncclSuccess;
	} else {
		comm->state = ncclInProgress;
		comm->ready_at = fake_now() + delay;
	}
}

static ncclResult_t init_comm(ncclComm_t *out, int nranks,
			      ncclUniqueId commId, int rank,
			      ncclConfig_t *config)
{
	ncclComm_t comm;
	CUdevice dev = 0;
	ncclResult_t rc = ncclSuccess;

	if (nranks < 1 || rank < 0 || rank >= nranks)
		return set_error(ncclInvalidArgument,
				 "fake: invalid rank %d of %d", rank, nranks);
	if (config && config->magic != 0xcafebeef)
		return set_error(ncclInvalidArgument,
				 "fake: config not initialised with NCCL_CONFIG_INITIALIZER");
	if (!cu_ready())
		return set_error(ncclSystemError,
				 "fake: libcuda.so.1 (the fake one) not usable");
	/* Like NCCL: the device is the calling thread's current one. */
	if (cu.ctx_get_device(&dev) != CUDA_SUCCESS)
		return set_error(ncclUnhandledCudaError,
				 "fake: no current CUDA context (cuCtxGetDevice)");
	comm = calloc(1, sizeof(*comm));
	if (!comm)
		return set_error(ncclSystemError, "fake: out of memory");
	comm->clique = fake_uid_clique(&commId);
	comm->id = commId;
	comm->rank = rank;
	comm->nranks = nranks;
	comm->device = dev;
	comm->blocking = !config || config->blocking == NCCL_CONFIG_UNDEF_INT ||
			 config->blocking != 0;
	comm->state = ncclInProgress;
	comm->ready_at = 0;
	*out = comm;
	fake_ras_comm_add(comm);
	fake_nccl_info(dev, "ncclCommInitRank comm %p rank %d nranks %d cudaDev %d - Init START",
		       (void *)comm, rank, nranks, dev);
	/* NCCL's channel line: 24 (a 4xH200 node's), or the config's
	 * maxCTAs below that (the fake reads no NCCL_*CHANNELS/_CTAS). */
	fake_nccl_info(dev, "%d coll channels, %d p2p channels",
		       config && config->maxCTAs > 0 && config->maxCTAs < 24 &&
		       config->maxCTAs != NCCL_CONFIG_UNDEF_INT ?
		       config->maxCTAs : 24, 32);
	fake_net_announce();

	pthread_mutex_lock(&nccl.lock);
	if (nccl.n_pending == MAX_PENDING) {
		pthread_mutex_unlock(&nccl.lock);
		return set_error(ncclInternalError, "fake: group too large");
	}
	nccl.pending[nccl.n_pending++] =
		(struct op){ .kind = OP_INIT, .comm = comm };
	/* Outside a group: a group of one. */
	if (nccl.group_depth == 0)
		rc = run_group();
	pthread_mutex_unlock(&nccl.lock);
	return nccl.group_depth == 0 ? wait_blocking(rc) : rc;
}

/* FAKE_NCCL_NO_CONFIG: an NCCL older than 2.14, without this symbol. */
#ifndef FAKE_NCCL_NO_CONFIG
ncclResult_t ncclCommInitRankConfig(ncclComm_t *out, int nranks,
				    ncclUniqueId commId, int rank,
				    ncclConfig_t *config)
{
	return init_comm(out, nranks, commId, rank, config);
}
#endif

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks,
			      ncclUniqueId commId, int rank)
{
	return init_comm(comm, nranks, commId, rank, NULL);
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

/* One collective: the ops of one clique and kind.  Under nccl.lock. */
static ncclResult_t run_coll(struct op *ops, int n)
{
	enum op_kind kind = ops[0].kind;
	int nranks = ops[0].comm->nranks;
	struct op *by_rank[MAX_PENDING] = { NULL };
	double started = fake_now(), seconds;

	if (n != nranks && !ops[0].comm->net)
		return set_error(ncclInvalidUsage,
				 "fake: %s with %d of %d ranks in the group would hang",
				 fake_op_func[kind], n, nranks);
	for (int i = 0; i < n; i++) {
		if (ops[i].count != ops[0].count || ops[i].peer != ops[0].peer)
			return set_error(ncclInvalidUsage,
					 "fake: ranks disagree on the count or root");
		by_rank[ops[i].rank] = &ops[i];
	}
	if (!fake_algo_allowed(kind))
		return set_error(ncclInvalidUsage,
				 "fake: no algorithm/protocol available for function %s with datatype ncclFloat32. NCCL_ALGO was set to %s.",
				 fake_op_func[kind], getenv("NCCL_ALGO"));
	crash_if("allreduce");
	if (fake_env_has("FAKE_NCCL_FAIL", "allreduce") ||
	    (kind != OP_ALLREDUCE &&
	     fake_env_has("FAKE_NCCL_FAIL", "collectives"))) {
		for (int i = 0; i < n; i++)
			ops[i].comm->state = set_error(ncclUnhandledCudaError,
						       "fake: injected %s failure (FAKE_NCCL_FAIL)",
						       fake_op_func[kind]);
		return ncclSuccess;
	}
	if (ops[0].comm->net)
		return fake_net_run(ops, n);
	fake_move_data(kind, by_rank, n);
	if (fake_env_has("FAKE_NCCL_WRONG_RESULT", "1") && kind == OP_ALLREDUCE)
		((float *)by_rank[n - 1]->recv)[0] += 1.0f;
	seconds = fake_coll_seconds(ops[0].count * sizeof(float), nranks) -
		  (fake_now() - started);
	for (int i = 0; i < n; i++) {
		if (fake_env_has("FAKE_NCCL_HANG", "allreduce"))
			cu.stream_hang(ops[i].stream);
		else
			cu.stream_enqueue(ops[i].stream, seconds);
	}
	return ncclSuccess;
}

/* Point-to-point: every send needs the matching recv in the group. */
static ncclResult_t run_p2p(struct op *ops, int n)
{
	char why[160];

	if (ops[0].comm->net)
		return fake_net_run(ops, n);
	if (fake_p2p_match(ops, n, why, sizeof(why)))
		return set_error(ncclInvalidUsage, "%s", why);
	for (int i = 0; i < n; i++)
		cu.stream_enqueue(ops[i].stream, 0);
	return ncclSuccess;
}

static bool same_batch(const struct op *a, const struct op *b)
{
	bool pa = a->kind == OP_SEND || a->kind == OP_RECV;
	bool pb = b->kind == OP_SEND || b->kind == OP_RECV;

	return a->comm->clique == b->comm->clique &&
	       (pa ? pb : a->kind == b->kind);
}

/*
 * The communicators just initialised whose ranks are partly in other
 * processes (NCCL_COMM_ID, or an id's address): one network per clique.
 * Under nccl.lock.
 */
static void start_nets(void)
{
	ncclComm_t comms[MAX_PENDING];

	for (int i = 0; i < nccl.n_pending; i++) {
		unsigned long long clique;
		bool seen = false;
		int n = 0;

		if (nccl.pending[i].kind != OP_INIT || nccl.pending[i].comm->net)
			continue;
		clique = nccl.pending[i].comm->clique;
		/* Each clique once: its later ranks are not a clique of their
		 * own (a local one's rank 1 would look for rank 0 elsewhere). */
		for (int k = 0; k < i && !seen; k++)
			seen = nccl.pending[k].kind == OP_INIT &&
			       nccl.pending[k].comm->clique == clique;
		if (seen)
			continue;
		for (int k = i; k < nccl.n_pending; k++)
			if (nccl.pending[k].kind == OP_INIT &&
			    nccl.pending[k].comm->clique == clique)
				comms[n++] = nccl.pending[k].comm;
		if (fake_net_needed(comms, n))
			fake_net_start(comms, n);
		else
			fake_net_local_root(comms, n);
	}
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
	start_nets();
	/* A blocking init whose rendezvous could not start fails here. */
	for (int i = 0; i < nccl.n_pending && rc == ncclSuccess; i++) {
		ncclComm_t comm = nccl.pending[i].comm;

		if (nccl.pending[i].kind == OP_INIT && comm->blocking &&
		    comm->state != ncclSuccess && comm->state != ncclInProgress)
			rc = comm->state;
	}
	for (int i = 0; i < nccl.n_pending && rc == ncclSuccess; i++) {
		enum op_kind kind = nccl.pending[i].kind;
		int n = 0;

		if (done[i])
			continue;
		for (int k = i; k < nccl.n_pending; k++) {
			if (done[k] ||
			    !same_batch(&nccl.pending[k], &nccl.pending[i]))
				continue;
			nccl.batch[n++] = nccl.pending[k];
			done[k] = true;
		}
		if (kind == OP_SEND || kind == OP_RECV)
			rc = run_p2p(nccl.batch, n);
		else
			rc = run_coll(nccl.batch, n);
	}
	/* A blocking communicator waits for the other processes' ranks. */
	for (int i = 0; i < nccl.n_pending; i++)
		if (nccl.pending[i].comm->net && nccl.pending[i].comm->blocking &&
		    nccl.n_waiting < MAX_PENDING)
			nccl.waiting[nccl.n_waiting++] = nccl.pending[i].comm;
	nccl.n_pending = 0;
	if (rc == ncclSuccess && nonblocking)
		return ncclInProgress;
	return rc;
}

/* After a blocking group: until its comms' network exchange is done. */
static ncclResult_t wait_blocking(ncclResult_t rc)
{
	for (;;) {
		bool busy = false;

		pthread_mutex_lock(&nccl.lock);
		for (int i = 0; i < nccl.n_waiting; i++) {
			ncclResult_t st = nccl.waiting[i]->state;

			busy |= st == ncclInProgress;
			if (st != ncclSuccess && st != ncclInProgress &&
			    rc == ncclSuccess)
				rc = st;
		}
		if (!busy)
			nccl.n_waiting = 0;
		pthread_mutex_unlock(&nccl.lock);
		if (!busy)
			return rc;
		fake_sleep(0.001);
	}
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
	return nccl.group_depth == 0 ? wait_blocking(rc) : rc;
}

ncclResult_t fake_nccl_enqueue(struct op op)
{
	ncclResult_t rc = ncclSuccess;

	if (!op.comm)
		return set_error(ncclInvalidArgument, "fake: NULL communicator");
	pthread_mutex_lock(&nccl.lock);
	refresh(op.comm);
	if (op.comm->state != ncclSuccess) {
		pthread_mutex_unlock(&nccl.lock);
		return set_error(ncclInvalidUsage,
				 "fake: communicator not ready (state %d)",
				 (int)op.comm->state);
	}
	if (nccl.n_pending == MAX_PENDING) {
		pthread_mutex_unlock(&nccl.lock);
		return set_error(ncclInternalError, "fake: group too large");
	}
	op.rank = op.comm->rank;
	nccl.pending[nccl.n_pending++] = op;
	fake_ras_count(op.comm, op.kind);
	if (nccl.group_depth == 0)
		rc = run_group();
	pthread_mutex_unlock(&nccl.lock);
	return nccl.group_depth == 0 ? wait_blocking(rc) : rc;
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

static void release(ncclComm_t comm)
{
	if (comm)
		fake_ras_comm_remove(comm);
	if (comm && comm->net)
		fake_net_release(comm);
	if (comm && comm->reserved)
		cu.mem_free(comm->reserved);
	free(comm);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	release(comm);
	return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	release(comm);
	return ncclSuccess;
}

const char *ncclGetLastError(ncclComm_t comm)
{
	(void)comm;
	return nccl.last_error;
}

/* SPDX-License-Identifier: MIT */
/*
 * Step 4: the operations a training job starts with, each once, inert
 * (one float per rank) and verified: all-reduce, broadcast (parameter
 * sync), all-gather and reduce-scatter (ZeRO/FSDP), and a send/recv ring
 * (pipeline parallel).  They run with the job's own NCCL_* environment,
 * so a setting that breaks one of them (NCCL_ALGO=Tree leaves Broadcast,
 * AllGather and ReduceScatter without an algorithm on NCCL >= 2.24) fails
 * here, before the job's tasks start, and not in its first iteration.
 *
 * In fabric mode the ranks are the step's (N of them, this node's from
 * rank_base on): buffers and expected values are sized and computed by
 * global rank, so every node verifies the whole communicator's result.
 *
 * Each operation is launched and waited for on its own, so a failure
 * names it; the first use of each also makes NCCL connect what it needs
 * (lazy connection since NCCL 2.22), which is part of what is warmed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "cuda_driver.h"
#include "failed_call.h"
#include "protocol/fault.h"
#include "nccl_loader.h"

/* Layout of each rank's scratch buffer, in floats: the inputs of every
 * operation, then their outputs (set to a sentinel). */
#define IN_AR 0
#define IN_BC 1
#define IN_AG 2
#define IN_SR 3
#define IN_RS 4			/* n floats (n: the communicator's ranks) */
#define OUT(n) (4 + (n))
#define OUT_AR(n) (OUT(n) + 0)
#define OUT_BC(n) (OUT(n) + 1)
#define OUT_RS(n) (OUT(n) + 2)
#define OUT_SR(n) (OUT(n) + 3)
#define OUT_AG(n) (OUT(n) + 4)	/* n floats */
#define FLOATS(n) (2 * (4 + (n)))
#define SENTINEL -1.0f
#define BCAST_VALUE 7919.0f	/* what the root broadcasts */

/* The names are the result's "collectives" keys (record_schema.c). */
_Static_assert(WU_COLL_COUNT == SN_RESULT_COLLECTIVES,
	       "enum wu_coll is the schema's collectives, in order");

const char *wu_coll_name(enum wu_coll op)
{
	return (unsigned int)op < WU_COLL_COUNT ?
	       sn_result_collective_name((int)op) : "unknown";
}

static CUdeviceptr at(const struct wu_comm *c, int r, size_t idx)
{
	return c->scratch[r] + idx * sizeof(float);
}

/*
 * Rank R's value: R + 1, folded so that every sum stays an integer below
 * 2^24, exact in float whatever order NCCL adds in, up to the 65536
 * ranks a step can have (identical to R + 1 up to 256 ranks).
 */
static float rank_value(int r)
{
	return (float)(r % 256 + 1);
}

/* Slot I of the reduce-scatter input, on top of the rank's value. */
static float rs_slot(int i)
{
	return (float)(i % 64);
}

/* Rank R's inputs; the outputs hold the sentinel. */
static void fill_inputs(int r, int n, float *h)
{
	for (int i = 0; i < FLOATS(n); i++)
		h[i] = SENTINEL;
	h[IN_AR] = rank_value(r);
	h[IN_BC] = r == 0 ? BCAST_VALUE : SENTINEL;
	h[IN_AG] = rank_value(r);
	h[IN_SR] = rank_value(r);
	for (int i = 0; i < n; i++)
		h[IN_RS + i] = rank_value(r) + rs_slot(i);
}

static int setup(struct wu_run *run, struct wu_comm *c)
{
	const struct wu_cu *cu = run->cu;
	size_t bytes = FLOATS(c->nranks) * sizeof(float);
	float *h = malloc(bytes);
	int code = SN_WARMUP_OK;

	if (!h)
		return wu_fail(run, SN_WARMUP_INTERNAL, "out of memory");
	for (int r = 0; r < c->n && !code; r++) {
		CUresult rc;
		char call[96];

		code = wu_cu_use(run, r);
		if (code)
			break;
		/* A blocking stream: NCCL's kernels on it wait for the
		 * cuMemcpyHtoD below (legacy default stream). */
		snprintf(call, sizeof(call), "cuStreamCreate (device %d)", r);
		rc = cu->stream_create(&c->streams[r], CU_STREAM_DEFAULT);
		if (rc == CUDA_SUCCESS) {
			snprintf(call, sizeof(call),
				 "cuMemAlloc(%zu bytes) on device %d", bytes,
				 r);
			rc = cu->mem_alloc(&c->scratch[r], bytes);
		}
		if (rc == CUDA_SUCCESS) {
			fill_inputs(c->rank_base + r, c->nranks, h);
			snprintf(call, sizeof(call), "cuMemcpyHtoD to device %d",
				 r);
			rc = cu->memcpy_htod(c->scratch[r], h, bytes);
		}
		if (rc != CUDA_SUCCESS)
			code = wu_cuda_fail(run, rc, call);
	}
	free(h);
	return code;
}

static ncclResult_t launch_one(const struct wu_run *run,
			       const struct wu_comm *c, enum wu_coll op,
			       int r)
{
	const struct wu_nccl *nc = run->nc;
	int n = c->nranks, g = c->rank_base + r;
	ncclComm_t comm = c->comms[r];
	CUstream s = c->streams[r];
	ncclResult_t rc;

	switch (op) {
	case WU_COLL_ALLREDUCE:
		return nc->all_reduce((void *)at(c, r, IN_AR),
				      (void *)at(c, r, OUT_AR(n)), 1,
				      ncclFloat, ncclSum, comm, s);
	case WU_COLL_BROADCAST:
		return nc->broadcast((void *)at(c, r, IN_BC),
				     (void *)at(c, r, OUT_BC(n)), 1,
				     ncclFloat, 0, comm, s);
	case WU_COLL_ALLGATHER:
		return nc->all_gather((void *)at(c, r, IN_AG),
				      (void *)at(c, r, OUT_AG(n)), 1,
				      ncclFloat, comm, s);
	case WU_COLL_REDUCESCATTER:
		return nc->reduce_scatter((void *)at(c, r, IN_RS),
					  (void *)at(c, r, OUT_RS(n)), 1,
					  ncclFloat, ncclSum, comm, s);
	case WU_COLL_SENDRECV:
		/* Ring: to the next rank, from the previous one. */
		rc = nc->send((void *)at(c, r, IN_SR), 1, ncclFloat,
			      (g + 1) % n, comm, s);
		if (rc != ncclSuccess && rc != ncclInProgress)
			return rc;
		return nc->recv((void *)at(c, r, OUT_SR(n)), 1, ncclFloat,
				(g + n - 1) % n, comm, s);
	case WU_COLL_COUNT:
		break;
	}
	return ncclInvalidArgument;
}

/* The NCCL_* settings in effect (sn_fault_is_nccl_setting), "NAME=VALUE
 * NAME=VALUE", or "none". */
static void nccl_env(char *out, size_t len)
{
	extern char **environ;
	size_t used = 0;

	out[0] = '\0';
	for (char **e = environ; e && *e; e++) {
		int n;

		if (!sn_fault_is_nccl_setting(*e))
			continue;
		n = snprintf(out + used, len - used, "%s%s", used ? " " : "",
			     *e);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	if (!out[0])
		snprintf(out, len, "none");
}

/*
 * Records the failure of OP: what failed and, when the job's NCCL_ALGO
 * leaves OP without an algorithm (NCCL >= 2.24), that setting and its
 * fix; NCCL's error and the NCCL_* set are detail (SN_DETAIL_SEP).
 */
static int op_fail(struct wu_run *run, enum wu_coll op, ncclResult_t rc,
		   ncclComm_t comm, const char *what)
{
	char text[WU_MESSAGE_MAX / 2], env[256], cause[256] = "";
	const char *algo = getenv("NCCL_ALGO");

	wu_nccl_error_text(run, rc, comm, text, sizeof(text));
	nccl_env(env, sizeof(env));
	if (rc == ncclInvalidUsage && algo && *algo && op != WU_COLL_ALLREDUCE)
		snprintf(cause, sizeof(cause),
			 "NCCL_ALGO=%.64s leaves it no algorithm on NCCL >= 2.24: unset NCCL_ALGO",
			 algo);
	pthread_mutex_lock(&run->lock);
	run->failed_op = (int)op;
	pthread_mutex_unlock(&run->lock);
	if (!cause[0])
		return wu_fail(run, SN_WARMUP_NCCL_ERROR,
			       "NCCL %s failed: %s" SN_DETAIL_SEP "%s; NCCL_* in effect: %s; a job would fail the same way at its first %s",
			       wu_coll_name(op), text, what, env,
			       wu_coll_name(op));
	return wu_fail(run, SN_WARMUP_NCCL_ERROR,
		       "NCCL %s failed: %s" SN_DETAIL_SEP "%s (%s); NCCL_* in effect: %s; a job would fail the same way at its first %s; NCCL_ALGO=\"ring,tree;allreduce:tree\" keeps Tree for all-reduce",
		       wu_coll_name(op), cause, text, what, env,
		       wu_coll_name(op));
}

/* Launches OP on every rank and waits until NCCL and the GPU are done. */
static int run_op(struct wu_run *run, struct wu_comm *c, enum wu_coll op)
{
	const struct wu_nccl *nc = run->nc;
	double t0 = sn_clock_ms();
	ncclResult_t rc, state;
	int code;

	wu_doing(run, wu_coll_name(op));
	rc = nc->group_start();
	if (rc != ncclSuccess)
		return op_fail(run, op, rc, NULL, "ncclGroupStart");
	for (int r = 0; r < c->n; r++) {
		rc = launch_one(run, c, op, r);
		if (rc != ncclSuccess && rc != ncclInProgress) {
			nc->group_end();
			return op_fail(run, op, rc, c->comms[r], "enqueue");
		}
	}
	rc = nc->group_end();
	if (rc != ncclSuccess && rc != ncclInProgress)
		return op_fail(run, op, rc, NULL, "ncclGroupEnd");
	/* Non-blocking communicators report a failed launch here. */
	code = wu_comm_wait(run, c, wu_coll_name(op));
	for (int r = 0; r < c->n && code == SN_WARMUP_NCCL_ERROR; r++) {
		state = ncclSuccess;
		rc = nc->comm_get_async_error(c->comms[r], &state);
		if (rc != ncclSuccess)
			return op_fail(run, op, rc, c->comms[r],
				       "ncclCommGetAsyncError");
		if (state != ncclSuccess && state != ncclInProgress)
			return op_fail(run, op, state, c->comms[r], "async");
	}
	if (code)
		return code;
	code = wu_comm_wait_streams(run, c, wu_coll_name(op));
	if (code)
		return code;
	pthread_mutex_lock(&run->lock);
	run->coll_ms[op] = sn_clock_ms() - t0;
	run->coll_done[op] = true;
	pthread_mutex_unlock(&run->lock);
	return SN_WARMUP_OK;
}

static int wrong(struct wu_run *run, enum wu_coll op, int r, double got,
		 double want)
{
	pthread_mutex_lock(&run->lock);
	run->failed_op = (int)op;
	pthread_mutex_unlock(&run->lock);
	return wu_fail(run, SN_WARMUP_WRONG_RESULT,
		       "%s returned %g on device %d (%s), expected %g",
		       wu_coll_name(op), got, r, run->gpus[r].busid, want);
}

/* Small integers are exact in float: every comparison is exact. */
static int verify(struct wu_run *run, struct wu_comm *c)
{
	int n = c->nranks;
	size_t bytes = FLOATS(n) * sizeof(float);
	float *h = malloc(bytes);
	float sum = 0;
	int code = SN_WARMUP_OK;

	if (!h)
		return wu_fail(run, SN_WARMUP_INTERNAL, "out of memory");
	for (int r = 0; r < n; r++)
		sum += rank_value(r);
	wu_doing(run, "cuMemcpyDtoH (results)");
	for (int r = 0; r < c->n && !code; r++) {
		int g = c->rank_base + r;
		CUresult rc;

		code = wu_cu_use(run, r);
		if (code)
			break;
		rc = run->cu->memcpy_dtoh(h, c->scratch[r], bytes);
		if (rc != CUDA_SUCCESS) {
			code = wu_cuda_fail(run, rc, "cuMemcpyDtoH (results)");
			break;
		}
		if (h[OUT_AR(n)] != sum)
			code = wrong(run, WU_COLL_ALLREDUCE, r, h[OUT_AR(n)],
				     sum);
		else if (h[OUT_BC(n)] != BCAST_VALUE)
			code = wrong(run, WU_COLL_BROADCAST, r, h[OUT_BC(n)],
				     BCAST_VALUE);
		else if (h[OUT_RS(n)] != sum + (float)n * rs_slot(g))
			code = wrong(run, WU_COLL_REDUCESCATTER, r,
				     h[OUT_RS(n)], sum + (float)n * rs_slot(g));
		else if (h[OUT_SR(n)] != rank_value((g + n - 1) % n))
			code = wrong(run, WU_COLL_SENDRECV, r, h[OUT_SR(n)],
				     rank_value((g + n - 1) % n));
		for (int i = 0; i < n && !code; i++)
			if (h[OUT_AG(n) + i] != rank_value(i))
				code = wrong(run, WU_COLL_ALLGATHER, r,
					     h[OUT_AG(n) + i], rank_value(i));
	}
	free(h);
	return code;
}

/* Free memory before init minus now, per GPU: the communicator, its
 * connections and its buffers, as the job's NCCL_* shape them. */
static int measure_memory(struct wu_run *run, struct wu_comm *c)
{
	long long mib[WU_MAX_GPUS];

	for (int r = 0; r < c->n; r++) {
		size_t free_now = 0, total = 0;
		CUresult rc;
		int code = wu_cu_use(run, r);

		if (code)
			return code;
		rc = run->cu->mem_get_info(&free_now, &total);
		if (rc != CUDA_SUCCESS)
			return wu_cuda_fail(run, rc, "cuMemGetInfo");
		mib[r] = ((long long)c->free_before[r] - (long long)free_now) /
			 (1LL << 20);
	}
	pthread_mutex_lock(&run->lock);
	memcpy(run->nccl_mem_mib, mib, sizeof(mib[0]) * (size_t)c->n);
	run->mem_measured = true;
	pthread_mutex_unlock(&run->lock);
	return SN_WARMUP_OK;
}

int wu_collectives(struct wu_run *run, struct wu_comm *c)
{
	int code;

	wu_phase_begin(run, WU_PHASE_ALLREDUCE, "cuMemAlloc/cuMemcpyHtoD (buffers)");
	code = setup(run, c);
	if (!code)
		code = run_op(run, c, WU_COLL_ALLREDUCE);
	if (code)
		return code;
	wu_phase_end(run);
	wu_phase_begin(run, WU_PHASE_COLLECTIVES, "broadcast");
	for (int op = WU_COLL_BROADCAST; op < WU_COLL_COUNT && !code; op++)
		code = run_op(run, c, (enum wu_coll)op);
	if (!code)
		code = verify(run, c);
	if (!code)
		code = measure_memory(run, c);
	if (!code)
		wu_phase_end(run);
	return code;
}

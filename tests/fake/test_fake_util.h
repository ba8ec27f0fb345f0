/* SPDX-License-Identifier: MIT */
/*
 * Driving the fake libcuda.so.1 and libnccl.so.2 from a test program
 * (test_fake_util.c): loaded by path, ranks initialised and checked with
 * an all-reduce, child processes that get a unique id through a pipe.
 * Every wait is a poll against a deadline, never a fixed sleep.
 */
#ifndef TEST_FAKE_UTIL_H
#define TEST_FAKE_UTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#include <cuda.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#define DEADLINE_S 20.0		/* any one wait; the fake needs milliseconds */
#define MAX_RANKS 8

/* Checks failed in this process (a child exits 1 if any). */
extern int ft_failures;

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "FAIL [%d] %s:%d: ", (int)getpid(), \
				__func__, __LINE__);			\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			ft_failures++;					\
		}							\
	} while (0)

/* The entry points the tests use, from the fakes. */
struct ft_api {
	CUresult (*init)(unsigned int flags);
	CUresult (*device_get)(CUdevice *dev, int ordinal);
	CUresult (*ctx_retain)(CUcontext *ctx, CUdevice dev);
	CUresult (*ctx_set)(CUcontext ctx);
	CUresult (*mem_alloc)(CUdeviceptr *p, size_t bytes);
	CUresult (*mem_free)(CUdeviceptr p);
	CUresult (*htod)(CUdeviceptr dst, const void *src, size_t n);
	CUresult (*dtoh)(void *dst, CUdeviceptr src, size_t n);
	CUresult (*stream_create)(CUstream *s, unsigned int flags);
	CUresult (*stream_query)(CUstream s);
	CUresult (*stream_destroy)(CUstream s);
	ncclResult_t (*get_unique_id)(ncclUniqueId *id);
	ncclResult_t (*init_config)(ncclComm_t *c, int nranks, ncclUniqueId id,
				    int rank, ncclConfig_t *config);
	ncclResult_t (*init_rank)(ncclComm_t *c, int nranks, ncclUniqueId id,
				  int rank);
	ncclResult_t (*group_start)(void);
	ncclResult_t (*group_end)(void);
	ncclResult_t (*async_error)(ncclComm_t c, ncclResult_t *rc);
	ncclResult_t (*all_reduce)(const void *send, void *recv, size_t count,
				   ncclDataType_t type, ncclRedOp_t op,
				   ncclComm_t c, cudaStream_t s);
	ncclResult_t (*destroy)(ncclComm_t c);
	const char *(*last_error)(ncclComm_t c);
};

extern struct ft_api ft;

double ft_now(void);
/* Between two looks at something another process or thread does. */
void ft_tick(void);
/* The fake libraries in cuda/ and nccl/ next to this program (into ft);
 * false if they are not there. */
bool ft_load(void);
/* Unsets NCCL_*, FAKE_* and CUDA_VISIBLE_DEVICES: only what the test
 * sets reaches the fakes. */
void ft_clean_env(void);
/* Device DEV's primary context, current (NCCL takes the device from it). */
void ft_use_device(int dev);
/* Until COMMS leave ncclInProgress: the first error, else ncclSuccess;
 * ncclInProgress if DEADLINE_S passed. */
ncclResult_t ft_wait_comms(ncclComm_t *comms, int n);
/* This process's ranks RANKS[N] of NRANKS on ID: non-blocking init in a
 * group (on devices 0..N-1), an all-reduce whose sum each rank checks,
 * destroy. */
void ft_run_ranks(const ncclUniqueId *id, int nranks, const int *ranks,
		  int n);
/* A child that reads an id from a pipe (*ID_FD, the parent's end), runs
 * BODY(id, ARG) and exits 1 if a check failed; its pid, or -1. */
pid_t ft_spawn(int *id_fd, void (*body)(const ncclUniqueId *, void *),
	       void *arg);
/* ID to a child, through its pipe (then closed). */
void ft_send_id(int fd, const ncclUniqueId *id);
/* The child's exit status (128 + signal), or -1 if it was still running
 * at the deadline (then killed). */
int ft_reap(pid_t pid);

#endif

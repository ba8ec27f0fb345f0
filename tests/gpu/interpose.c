/* SPDX-License-Identifier: MIT */
/*
 * Fault injection for the GPU tests: an LD_PRELOAD library that makes the
 * real CUDA driver / NCCL misbehave in nccl-warmup, chosen by SN_FAULT:
 *
 *   dup_busid    cuDeviceGetPCIBusId reports device 0's bus ID for
 *                device 1 (two GPUs behind one PCI function)
 *   init_hang    ncclCommInitRankConfig never returns; the helper's own
 *                watchdog must end it at --timeout
 *   async_hang   ncclCommGetAsyncError reports ncclInProgress forever (a
 *                non-blocking init that never completes); the helper's
 *                polling deadline must end it
 *   wedged       like init_hang, but SIGTERM is ignored and the helper's
 *                watchdog thread never wakes (clock_nanosleep blocks): only
 *                the plugin's own deadline and SIGKILL can end it
 *
 * Any other value (or none) passes every call through.  With SN_FAULT_HOST
 * set, the fault is injected only where gethostname() equals it (one node
 * of a multi-node step: the fabric warmup must blame that node).  Each injected
 * fault is announced once on stderr and appended to the file named by
 * SN_FAULT_LOG (the plugin keeps only the helper's last stderr line), so
 * a test can tell an injected fault from a real one.  Build: gcc -shared -fPIC -o interpose.so interpose.c
 * -ldl.  The real libraries are found with dlsym(RTLD_NEXT): the helper
 * loads libcuda.so.1 and libnccl.so.2 with RTLD_GLOBAL and binds their
 * symbols from the global scope, where an LD_PRELOAD library comes first.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The ABI types, without the CUDA/NCCL headers (not needed to build). */
typedef int cuda_error_t;
typedef int nccl_result_t;
typedef struct nccl_comm *nccl_comm_t;
typedef struct { char internal[128]; } nccl_unique_id_t;

#define NCCL_SUCCESS 0
#define NCCL_IN_PROGRESS 7

static int fault_is(const char *name)
{
	const char *v = getenv("SN_FAULT");
	const char *host = getenv("SN_FAULT_HOST");
	char me[256];

	if (!v || strcmp(v, name) != 0)
		return 0;
	if (!host)
		return 1;
	if (gethostname(me, sizeof(me)) != 0)
		return 0;
	me[sizeof(me) - 1] = '\0';
	return strcmp(me, host) == 0;
}

static void announce(const char *what)
{
	static int said;
	char line[256];
	int n;

	if (__atomic_exchange_n(&said, 1, __ATOMIC_SEQ_CST))
		return;
	n = snprintf(line, sizeof(line),
		     "sn-interpose: injecting fault %s (pid %d)\n", what,
		     (int)getpid());
	if (n <= 0)
		return;
	(void)!write(STDERR_FILENO, line, (size_t)n);
	if (getenv("SN_FAULT_LOG")) {
		int fd = open(getenv("SN_FAULT_LOG"),
			      O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

		if (fd >= 0) {
			(void)!write(fd, line, (size_t)n);
			close(fd);
		}
	}
}

static void *real(const char *symbol)
{
	void *f = dlsym(RTLD_NEXT, symbol);

	if (!f) {
		fprintf(stderr, "sn-interpose: %s not found: %s\n", symbol,
			dlerror());
		abort();
	}
	return f;
}

static __attribute__((noreturn)) void hang_forever(void)
{
	for (;;)
		pause();
}

/* CUdevice is the device ordinal (cuDeviceGet(&dev, i) gives i). */
cuda_error_t cuDeviceGetPCIBusId(char *bus_id, int len, int device);
cuda_error_t cuDeviceGetPCIBusId(char *bus_id, int len, int device)
{
	cuda_error_t (*f)(char *, int, int) = real("cuDeviceGetPCIBusId");

	if (fault_is("dup_busid") && device == 1) {
		announce("dup_busid");
		return f(bus_id, len, 0);
	}
	return f(bus_id, len, device);
}

nccl_result_t ncclCommInitRankConfig(nccl_comm_t *comm, int nranks,
				     nccl_unique_id_t id, int rank,
				     void *config);
nccl_result_t ncclCommInitRankConfig(nccl_comm_t *comm, int nranks,
				     nccl_unique_id_t id, int rank,
				     void *config)
{
	nccl_result_t (*f)(nccl_comm_t *, int, nccl_unique_id_t, int,
			   void *) = real("ncclCommInitRankConfig");

	if (fault_is("init_hang")) {
		announce("init_hang");
		hang_forever();
	}
	if (fault_is("wedged")) {
		announce("wedged");
		signal(SIGTERM, SIG_IGN);
		hang_forever();
	}
	return f(comm, nranks, id, rank, config);
}

nccl_result_t ncclCommGetAsyncError(nccl_comm_t comm,
				    nccl_result_t *async_error);
nccl_result_t ncclCommGetAsyncError(nccl_comm_t comm,
				    nccl_result_t *async_error)
{
	nccl_result_t (*f)(nccl_comm_t, nccl_result_t *) =
		real("ncclCommGetAsyncError");
	nccl_result_t rc = f(comm, async_error);

	if (fault_is("async_hang") && rc == NCCL_SUCCESS) {
		announce("async_hang");
		*async_error = NCCL_IN_PROGRESS;
	}
	return rc;
}

/* The helper's watchdog sleeps in clock_nanosleep until its deadline. */
int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
		    struct timespec *rem)
{
	int (*f)(clockid_t, int, const struct timespec *, struct timespec *) =
		real("clock_nanosleep");

	if (fault_is("wedged"))
		hang_forever();
	return f(clock, flags, req, rem);
}

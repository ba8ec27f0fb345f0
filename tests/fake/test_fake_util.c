/* SPDX-License-Identifier: MIT */
/*
 * Driving the fakes from test programs: see test_fake_util.h.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "test_fake_util.h"

#define COUNT 1000		/* floats per rank in the all-reduce */

int ft_failures;
struct ft_api ft;

double ft_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Between two looks at something another process or thread does. */
void ft_tick(void)
{
	poll(NULL, 0, 1);
}

/* The fake libraries next to this program; false if not built. */
bool ft_load(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	void *cu, *nc;

	if (n <= 0)
		return false;
	dir[n] = '\0';
	*strrchr(dir, '/') = '\0';
	/* RTLD_GLOBAL: the fake NCCL's dlopen("libcuda.so.1") finds it */
	snprintf(path, sizeof(path), "%s/cuda/libcuda.so.1", dir);
	cu = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	snprintf(path, sizeof(path), "%s/nccl/libnccl.so.2", dir);
	nc = cu ? dlopen(path, RTLD_NOW) : NULL;
	if (!nc) {
		fprintf(stderr, "fake libraries not loadable: %s\n", dlerror());
		return false;
	}
	*(void **)&ft.init = dlsym(cu, "cuInit");
	*(void **)&ft.device_get = dlsym(cu, "cuDeviceGet");
	*(void **)&ft.ctx_retain = dlsym(cu, "cuDevicePrimaryCtxRetain");
	*(void **)&ft.ctx_set = dlsym(cu, "cuCtxSetCurrent");
	*(void **)&ft.mem_alloc = dlsym(cu, "cuMemAlloc_v2");
	*(void **)&ft.mem_free = dlsym(cu, "cuMemFree_v2");
	*(void **)&ft.htod = dlsym(cu, "cuMemcpyHtoD_v2");
	*(void **)&ft.dtoh = dlsym(cu, "cuMemcpyDtoH_v2");
	*(void **)&ft.stream_create = dlsym(cu, "cuStreamCreate");
	*(void **)&ft.stream_query = dlsym(cu, "cuStreamQuery");
	*(void **)&ft.stream_destroy = dlsym(cu, "cuStreamDestroy_v2");
	*(void **)&ft.get_unique_id = dlsym(nc, "ncclGetUniqueId");
	*(void **)&ft.init_config = dlsym(nc, "ncclCommInitRankConfig");
	*(void **)&ft.init_rank = dlsym(nc, "ncclCommInitRank");
	*(void **)&ft.group_start = dlsym(nc, "ncclGroupStart");
	*(void **)&ft.group_end = dlsym(nc, "ncclGroupEnd");
	*(void **)&ft.async_error = dlsym(nc, "ncclCommGetAsyncError");
	*(void **)&ft.all_reduce = dlsym(nc, "ncclAllReduce");
	*(void **)&ft.destroy = dlsym(nc, "ncclCommDestroy");
	*(void **)&ft.last_error = dlsym(nc, "ncclGetLastError");
	return ft.init && ft.device_get && ft.ctx_retain && ft.ctx_set &&
	       ft.mem_alloc && ft.mem_free && ft.htod && ft.dtoh &&
	       ft.stream_create && ft.stream_query && ft.stream_destroy &&
	       ft.get_unique_id && ft.init_config && ft.init_rank &&
	       ft.group_start && ft.group_end && ft.async_error &&
	       ft.all_reduce && ft.destroy && ft.last_error;
}

/* Only what this test sets reaches the fakes. */
void ft_clean_env(void)
{
	extern char **environ;
	char name[256];
	bool again = true;

	while (again) {
		again = false;
		for (char **e = environ; *e; e++) {
			size_t len = strcspn(*e, "=");

			if (len >= sizeof(name) ||
			    (strncmp(*e, "NCCL_", 5) &&
			     strncmp(*e, "FAKE_", 5) &&
			     strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21)))
				continue;
			snprintf(name, sizeof(name), "%.*s", (int)len, *e);
			unsetenv(name);
			again = true;	/* environ changed under us */
			break;
		}
	}
}

/* NCCL takes the device from the calling thread's current context. */
void ft_use_device(int dev)
{
	CUdevice d;
	CUcontext ctx;

	CHECK(ft.device_get(&d, dev) == CUDA_SUCCESS &&
	      ft.ctx_retain(&ctx, d) == CUDA_SUCCESS &&
	      ft.ctx_set(ctx) == CUDA_SUCCESS, "device %d unusable", dev);
}

/* Until COMMS leave ncclInProgress: the first error, else ncclSuccess;
 * ncclInProgress if the deadline passed. */
ncclResult_t ft_wait_comms(ncclComm_t *comms, int n)
{
	double deadline = ft_now() + DEADLINE_S;

	for (;;) {
		bool busy = false;

		for (int i = 0; i < n; i++) {
			ncclResult_t st = ncclInternalError;

			ft.async_error(comms[i], &st);
			if (st != ncclSuccess && st != ncclInProgress)
				return st;
			busy |= st == ncclInProgress;
		}
		if (!busy)
			return ncclSuccess;
		if (ft_now() > deadline)
			return ncclInProgress;
		ft_tick();
	}
}

/*
 * This process's ranks RANKS[N] of NRANKS on ID: non-blocking init in a
 * group, then an all-reduce whose sum every rank checks.
 */
void ft_run_ranks(const ncclUniqueId *id, int nranks, const int *ranks,
		  int n)
{
	ncclComm_t comms[MAX_RANKS] = { NULL };
	CUdeviceptr send[MAX_RANKS] = { 0 }, recv[MAX_RANKS] = { 0 };
	CUstream streams[MAX_RANKS] = { NULL };
	static float host[COUNT];
	float want = (float)nranks * (nranks + 1) / 2;
	ncclResult_t rc;
	double deadline;

	ft.group_start();
	for (int i = 0; i < n; i++) {
		ncclConfig_t config = NCCL_CONFIG_INITIALIZER;

		config.blocking = 0;
		ft_use_device(i);
		rc = ft.init_config(&comms[i], nranks, *id, ranks[i], &config);
		CHECK(rc == ncclSuccess || rc == ncclInProgress,
		      "init of rank %d: %d", ranks[i], rc);
	}
	rc = ft.group_end();
	CHECK(rc == ncclSuccess || rc == ncclInProgress, "group end: %d", rc);
	rc = ft_wait_comms(comms, n);
	CHECK(rc == ncclSuccess, "init of ranks %d..: %d (%s)", ranks[0], rc,
	      ft.last_error(NULL));
	if (rc != ncclSuccess)
		goto out;
	/* rank r sends (r + 1) * (i + 1): the sum is want * (i + 1) */
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < COUNT; k++)
			host[k] = (float)(ranks[i] + 1) * (float)(k + 1);
		ft_use_device(i);
		CHECK(ft.mem_alloc(&send[i], sizeof(host)) == CUDA_SUCCESS &&
		      ft.mem_alloc(&recv[i], sizeof(host)) == CUDA_SUCCESS &&
		      ft.htod(send[i], host, sizeof(host)) == CUDA_SUCCESS &&
		      ft.stream_create(&streams[i], 0) == CUDA_SUCCESS,
		      "buffers of rank %d", ranks[i]);
	}
	ft.group_start();
	for (int i = 0; i < n; i++)
		ft.all_reduce((const void *)send[i], (void *)recv[i], COUNT,
			      ncclFloat32, ncclSum, comms[i],
			      (cudaStream_t)streams[i]);
	rc = ft.group_end();
	CHECK(rc == ncclSuccess || rc == ncclInProgress, "all-reduce: %d", rc);
	rc = ft_wait_comms(comms, n);
	CHECK(rc == ncclSuccess, "all-reduce: %d (%s)", rc,
	      ft.last_error(NULL));
	deadline = ft_now() + DEADLINE_S;
	for (int i = 0; i < n && rc == ncclSuccess; i++) {
		while (ft.stream_query(streams[i]) == CUDA_ERROR_NOT_READY &&
		       ft_now() < deadline)
			ft_tick();
		ft_use_device(i);
		CHECK(ft.dtoh(host, recv[i], sizeof(host)) == CUDA_SUCCESS,
		      "copy back");
		for (int k = 0; k < COUNT; k++)
			if (host[k] != want * (float)(k + 1)) {
				CHECK(0, "rank %d: element %d is %g, not %g",
				      ranks[i], k, host[k], want * (k + 1));
				break;
			}
	}
	for (int i = 0; i < n; i++) {
		ft_use_device(i);
		ft.mem_free(send[i]);
		ft.mem_free(recv[i]);
		if (streams[i])
			ft.stream_destroy(streams[i]);
	}
out:
	for (int i = 0; i < n; i++)
		if (comms[i])
			ft.destroy(comms[i]);
}

/* A child that reads the id from a pipe, then runs BODY; its pid. */
pid_t ft_spawn(int *id_fd, void (*body)(const ncclUniqueId *, void *),
	       void *arg)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		ncclUniqueId id;
		size_t got = 0;
		double deadline = ft_now() + DEADLINE_S;

		alarm((unsigned int)DEADLINE_S * 3);
		close(p[1]);
		while (got < sizeof(id) && ft_now() < deadline) {
			struct pollfd pfd = { .fd = p[0], .events = POLLIN };
			ssize_t r;

			if (poll(&pfd, 1, 100) <= 0)
				continue;
			r = read(p[0], id.internal + got, sizeof(id) - got);
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		CHECK(got == sizeof(id), "the id did not come");
		if (got == sizeof(id))
			body(&id, arg);
		fflush(NULL);
		_exit(ft_failures ? 1 : 0);
	}
	close(p[0]);
	*id_fd = p[1];
	if (pid < 0)
		close(p[1]);
	return pid;
}

/* ID to a child, through its pipe (closed). */
void ft_send_id(int fd, const ncclUniqueId *id)
{
	CHECK(write(fd, id, sizeof(*id)) == (ssize_t)sizeof(*id), "write id");
	close(fd);
}

/* The child's exit status, or -1 if it was still running at the
 * deadline (then killed). */
int ft_reap(pid_t pid)
{
	double deadline = ft_now() + DEADLINE_S * 2;
	int st;

	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (ft_now() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		ft_tick();
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}


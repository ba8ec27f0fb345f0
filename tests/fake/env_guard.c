/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOADed into nccl-warmup by the shell tests: setenv(), unsetenv()
 * and putenv() abort the process when it runs more threads than
 * ENV_GUARD_THREADS (default 2: the main thread and the watchdog).  glibc's
 * setenv may move the environment while another thread is in getenv()
 * (NVML's threads, the driver's), and the helper died of SIGSEGV so once;
 * the helper's rule is that it changes its environment only while no
 * thread but the watchdog runs.  The threads are counted in
 * /proc/self/task: a thread that has already ended is not counted, so
 * the guard never fails a correct helper, and it catches a wrong order
 * as long as the other thread lives (NVML's boot thread lives for ms,
 * the setenv() comes µs after its start).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int setenv(const char *name, const char *value, int overwrite);
int unsetenv(const char *name);
int putenv(char *string);

static int thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void guard(const char *call, const char *name)
{
	const char *max_text = getenv("ENV_GUARD_THREADS");
	int max = max_text ? atoi(max_text) : 2;
	int n = thread_count();
	char msg[256];
	int len;

	if (n <= max)
		return;
	len = snprintf(msg, sizeof(msg),
		       "env_guard: %s(%.64s) with %d threads running (at most %d): another thread may be in getenv()\n",
		       call, name, n, max);
	if (len > 0 && write(STDERR_FILENO, msg, (size_t)len) < 0)
		_exit(134);
	abort();
}

#define REAL(type, name) ((type)dlsym(RTLD_NEXT, name))

int setenv(const char *name, const char *value, int overwrite)
{
	guard("setenv", name);
	return REAL(int (*)(const char *, const char *, int), "setenv")(
		name, value, overwrite);
}

int unsetenv(const char *name)
{
	guard("unsetenv", name);
	return REAL(int (*)(const char *), "unsetenv")(name);
}

int putenv(char *string)
{
	guard("putenv", string);
	return REAL(int (*)(char *), "putenv")(string);
}

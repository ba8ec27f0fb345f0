/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_common.h"

bool fake_env_has(const char *name, const char *word)
{
	const char *v = getenv(name);
	size_t n = strlen(word);

	while (v && *v) {
		size_t len = strcspn(v, ",");

		if (len == n && strncmp(v, word, n) == 0)
			return true;
		v += len;
		if (*v == ',')
			v++;
	}
	return false;
}

double fake_env_num(const char *name, double def)
{
	const char *v = getenv(name);
	char *end;
	double d;

	if (!v || !*v)
		return def;
	d = strtod(v, &end);
	if (*end || d < 0) {
		fprintf(stderr, "fake: ignoring bad %s='%s'\n", name, v);
		return def;
	}
	return d;
}

/*
 * " container=PID environ=readable|refused" when this process (the
 * helper) was given --container-pid PID, else "": whether it could open
 * that task's /proc/PID/environ while the task waits for the warmup
 * (spank-nccl must never make the task dumpable: refused as the user).
 */
static void container_probe(char *out, size_t len)
{
	char args[4096], path[64];
	const char *pid = NULL;
	ssize_t n;
	int fd;

	out[0] = '\0';
	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, args, sizeof(args) - 1);
	close(fd);
	if (n <= 0)
		return;
	args[n] = '\0';
	for (char *a = args; a < args + n && !pid; a += strlen(a) + 1)
		if (strcmp(a, "--container-pid") == 0 &&
		    a + strlen(a) + 1 < args + n)
			pid = a + strlen(a) + 1;
	if (!pid)
		return;
	snprintf(path, sizeof(path), "/proc/%.20s/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(out, len, " container=%.20s environ=%s", pid,
		 fd >= 0 ? "readable" : "refused");
	if (fd >= 0)
		close(fd);
}

void fake_log_process(const char *logvar, const char *lib)
{
	const char *path = getenv(logvar);
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	char line[384], probe[96], ras_addr[64] = "";
	int fd, n;

	if (!path || !*path)
		return;
	getresuid(&ru, &eu, &su);
	getresgid(&rg, &eg, &sg);
	container_probe(probe, sizeof(probe));
	/* NCCL's RAS address as the warmup's NCCL sees it (ras.bats). */
	if (strcmp(lib, "nccl") == 0) {
		const char *ras = getenv("NCCL_RAS_ADDR");

		snprintf(ras_addr, sizeof(ras_addr), " ras=%.48s",
			 ras ? ras : "-");
	}
	n = snprintf(line, sizeof(line),
		     "lib=%s pid=%d uid=%u/%u/%u gid=%u/%u/%u%s%s\n", lib,
		     (int)getpid(), ru, eu, su, rg, eg, sg, probe, ras_addr);
	/* One write() on an O_APPEND file: lines never interleave. */
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) != n)
		fprintf(stderr, "fake: short write to %s\n", path);
	close(fd);
}

bool fake_host_listed(const char *name)
{
	char host[256] = "";

	if (gethostname(host, sizeof(host) - 1) != 0)
		return false;
	return fake_env_has(name, host);
}

double fake_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void fake_sleep(double seconds)
{
	struct timespec ts;

	if (seconds <= 0)
		return;
	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0)
		;
}

void fake_hang(void)
{
	for (;;)
		pause();
}

/* Item I of comma list LIST into OUT (LEN bytes); false if absent. */
bool fake_list_item(const char *list, int i, char *out, size_t len)
{
	const char *p = list;

	for (; p && i > 0; i--) {
		p = strchr(p, ',');
		if (p)
			p++;
	}
	if (!p)
		return false;
	snprintf(out, len, "%.*s", (int)strcspn(p, ","), p);
	return true;
}

/* SPDX-License-Identifier: MIT */
/*
 * The fake NCCL's queries (ncclCommCount, ncclGetErrorString, ...) and
 * its INFO log, written as NCCL writes it: NCCL_DEBUG=INFO, to
 * NCCL_DEBUG_FILE (opened once, "w", line-buffered; NCCL's src/debug.cc)
 * or else stdout, each line "host:pid:tid [dev] NCCL INFO text"; among
 * them the network NCCL chose (FAKE_NCCL_NET, FAKE_NCCL_NET_HOSTS).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "fake_nccl.h"

static struct {
	pthread_once_t once;
	FILE *file;		/* NULL: not at INFO */
} info = { .once = PTHREAD_ONCE_INIT };

static void info_open(void)
{
	const char *level = getenv("NCCL_DEBUG");
	const char *path = getenv("NCCL_DEBUG_FILE");

	if (!level || strcasecmp(level, "INFO") != 0)
		return;
	info.file = path && *path ? fopen(path, "w") : stdout;
	if (info.file && info.file != stdout)
		setlinebuf(info.file);
}

void fake_nccl_info(int dev, const char *fmt, ...)
{
	char host[64] = "", text[512];
	va_list ap;

	pthread_once(&info.once, info_open);
	if (!info.file)
		return;
	gethostname(host, sizeof(host) - 1);
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	/* One fprintf: lines of the fake's threads do not interleave. */
	fprintf(info.file, "%s:%d:%d [%d] NCCL INFO %s\n", host, (int)getpid(),
		(int)gettid(), dev, text);
}

/* FAKE_NCCL_NET_HOSTS=host:NAME,... for this host, else FAKE_NCCL_NET. */
static void net_name(char *out, size_t len)
{
	const char *v = getenv("FAKE_NCCL_NET_HOSTS"), *dflt = getenv("FAKE_NCCL_NET");
	char host[256] = "";
	size_t hl;

	snprintf(out, len, "%s", dflt && *dflt ? dflt : "Socket");
	if (!v || gethostname(host, sizeof(host) - 1) != 0)
		return;
	hl = strlen(host);
	while (*v) {
		size_t item = strcspn(v, ",");

		if (item > hl + 1 && strncmp(v, host, hl) == 0 && v[hl] == ':') {
			snprintf(out, len, "%.*s", (int)(item - hl - 1), v + hl + 1);
			return;
		}
		v += item;
		if (*v)
			v++;
	}
}

/*
 * What NCCL logs once per process when its network comes up (src/init.cc
 * "Using network", src/plugin/net.cc, src/transport/net_ib.cc and
 * net_socket.cc), single-node communicators included.
 */
static void announce(void)
{
	char name[64], addr[128] = "10.0.0.1";
	const char *id = getenv("NCCL_COMM_ID");
	int dev = 0;

	if (id && *id)
		snprintf(addr, sizeof(addr), "%.*s", (int)strcspn(id, ":"), id);

	net_name(name, sizeof(name));
	if (strcmp(name, "Socket") == 0) {
		fake_nccl_info(dev, "NET/IB : No device found.");
		fake_nccl_info(dev, "NET/Socket : Using [0]eth0:%s<0>", addr);
	} else if (strcmp(name, "IB") == 0) {
		fake_nccl_info(dev, "NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:%s<0>",
			       addr);
	} else {
		fake_nccl_info(dev, "NET/Plugin: Loaded net plugin %s (v10)", name);
	}
	fake_nccl_info(dev, "Using network %s", name);
}

void fake_net_announce(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, announce);
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


/* SPDX-License-Identifier: MIT */
/*
 * The fake NCCL's queries (ncclCommCount, ncclGetErrorString, ...) and
 * its INFO log, written as NCCL writes it: NCCL_DEBUG=INFO, to
 * NCCL_DEBUG_FILE (opened once, "w", line-buffered; NCCL's src/debug.cc)
 * or else stdout, each line "host:pid:tid [dev] NCCL INFO text".
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


/* SPDX-License-Identifier: MIT */
/*
 * A job's NCCL program for the CPU cluster (ras.bats, multinode.bats):
 * one communicator over the step's tasks (rank SLURM_PROCID of
 * SLURM_NTASKS, met at NCCL_COMM_ID; GPU: SLURM_LOCALID among the visible
 * ones), N all-reduces, then it says so on
 * stdout ("ready RANK") and waits to be killed, its communicator alive,
 * as a job stuck in a collective does.  Linked to the fake libcuda and
 * libnccl (rpath).
 *
 *   nccl-job N
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cuda.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

static int env_int(const char *name)
{
	const char *v = getenv(name);

	return v ? atoi(v) : 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	int rank = env_int("SLURM_PROCID"), size = env_int("SLURM_NTASKS");
	int local = env_int("SLURM_LOCALID"), count = 0;
	CUdevice dev;
	CUcontext ctx;
	CUstream stream;
	CUdeviceptr buf;
	ncclUniqueId id;
	ncclComm_t comm;

	if (size < 1)
		size = 1;
	if (cuInit(0) != CUDA_SUCCESS ||
	    cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 1 ||
	    cuDeviceGet(&dev, local % count) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
	    cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
	    cuStreamCreate(&stream, 0) != CUDA_SUCCESS ||
	    cuMemAlloc(&buf, 4) != CUDA_SUCCESS) {
		fprintf(stderr, "nccl-job: CUDA failed\n");
		return 1;
	}
	if (ncclGetUniqueId(&id) != ncclSuccess ||
	    ncclCommInitRank(&comm, size, id, rank) != ncclSuccess) {
		fprintf(stderr, "nccl-job: init failed: %s\n",
			ncclGetLastError(NULL));
		return 1;
	}
	for (int i = 0; i < n; i++) {
		if (ncclAllReduce((void *)buf, (void *)buf, 1, ncclFloat,
				  ncclSum, comm, (cudaStream_t)stream) !=
			    ncclSuccess ||
		    cuStreamSynchronize(stream) != CUDA_SUCCESS) {
			fprintf(stderr, "nccl-job: all-reduce failed\n");
			return 1;
		}
	}
	printf("ready %d\n", rank);
	fflush(stdout);
	pause();
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Step 1 and 2: enumerate the visible GPUs and check their PCI bus IDs;
 * then create the CUDA contexts, one thread per GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failed_call.h"
#include "warmup.h"

/*
 * CUDA_VISIBLE_DEVICES entries naming MIG instances ("MIG-<uuid>", or the
 * old "MIG-GPU-<uuid>/gi/ci") are how a MIG instance is selected; the
 * CUDA runtime offers no other MIG flag.  Entry I is CUDA ordinal I.
 */
static void mark_mig(struct wu_run *run, const char *cvd)
{
	size_t ordinal = 0;
	const char *p = cvd;

	while (p && ordinal < run->n_gpus) {
		while (*p == ' ')
			p++;
		if (strncmp(p, "MIG-", 4) == 0)
			run->gpus[ordinal].mig = true;
		p = strchr(p, ',');
		if (p)
			p++;
		ordinal++;
	}
}

int wu_gpus_enumerate(struct wu_run *run)
{
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	struct sn_gpu_identity found[WU_MAX_GPUS];
	cudaError_t rc;
	int count = 0;

	pthread_mutex_lock(&run->lock);
	run->cvd_set = cvd != NULL;
	snprintf(run->cvd, sizeof(run->cvd), "%s", cvd ? cvd : "");
	pthread_mutex_unlock(&run->lock);

	/* cudaGetDeviceCount initialises the driver: the slow first call
	 * (0.5-1 s on an H200 node even with persistence mode). */
	wu_phase_begin(run, WU_PHASE_CUDA_INIT, "cudaGetDeviceCount");
	rc = cudaGetDeviceCount(&count);
	wu_phase_end(run);
	if (rc == cudaErrorNoDevice || (rc == cudaSuccess && count == 0)) {
		return wu_fail(run, SN_WARMUP_NO_GPUS,
			       "no visible CUDA device (CUDA_VISIBLE_DEVICES%s%s%s)",
			       cvd ? "=\"" : " unset", cvd ? cvd : "",
			       cvd ? "\"" : "");
	}
	if (rc != cudaSuccess)
		return wu_cuda_fail(run, rc, "cudaGetDeviceCount");
	if (count < 0 || count > WU_MAX_GPUS)
		return wu_fail(run, SN_WARMUP_INTERNAL,
			       "cudaGetDeviceCount reported %d devices; at most %d are supported",
			       count, WU_MAX_GPUS);

	memset(found, 0, sizeof(found));
	for (int i = 0; i < count; i++) {
		struct cudaDeviceProp prop;
		char call[64];

		found[i].index = i;
		/* The bus ID NCCL itself uses for its duplicate check. */
		snprintf(call, sizeof(call), "cudaDeviceGetPCIBusId(%d)", i);
		wu_doing(run, "cudaDeviceGetPCIBusId");
		rc = cudaDeviceGetPCIBusId(found[i].busid,
					   (int)sizeof(found[i].busid), i);
		if (rc != cudaSuccess)
			return wu_cuda_fail(run, rc, call);
		found[i].busid[sizeof(found[i].busid) - 1] = '\0';
		snprintf(call, sizeof(call), "cudaGetDeviceProperties(%d)", i);
		wu_doing(run, "cudaGetDeviceProperties");
		rc = cudaGetDeviceProperties(&prop, i);
		if (rc != cudaSuccess)
			return wu_cuda_fail(run, rc, call);
		sn_uuid_format((const unsigned char *)prop.uuid.bytes, false,
			       found[i].uuid, sizeof(found[i].uuid));
	}

	pthread_mutex_lock(&run->lock);
	memcpy(run->gpus, found, sizeof(found));
	run->n_gpus = (size_t)count;
	mark_mig(run, cvd);
	for (size_t i = 0; i < run->n_gpus; i++)
		if (run->gpus[i].mig)
			memcpy(run->gpus[i].uuid, "MIG-", 4);
	pthread_mutex_unlock(&run->lock);
	return SN_WARMUP_OK;
}

int wu_gpus_check_duplicates(struct wu_run *run)
{
	const struct sn_gpu_identity *g = run->gpus;
	size_t a, b;

	if (!sn_busid_find_duplicate(g, run->n_gpus, &a, &b))
		return SN_WARMUP_OK;
	/* NCCL <= 2.29 would refuse this too ("Duplicate GPU detected"),
	 * 2.30.7+ compares UUIDs and would not: say it plainly here. */
	return wu_fail(run, SN_WARMUP_DUPLICATE_BUSID,
		       "duplicate PCI bus ID: CUDA devices %d and %d both report %s (UUIDs %s and %s)",
		       g[a].index, g[b].index, g[a].busid, g[a].uuid,
		       g[b].uuid);
}

struct ctx_job {
	int device;
	cudaError_t rc;
	const char *call;
};

static void *create_context(void *arg)
{
	struct ctx_job *job = arg;

	/* cudaSetDevice creates the primary context since CUDA 12;
	 * cudaFree(0) forces it on older runtimes. */
	job->call = "cudaSetDevice";
	job->rc = cudaSetDevice(job->device);
	if (job->rc == cudaSuccess) {
		job->call = "cudaFree(NULL)";
		job->rc = cudaFree(NULL);
	}
	return NULL;
}

int wu_gpus_create_contexts(struct wu_run *run)
{
	size_t n = run->n_gpus;
	struct ctx_job jobs[WU_MAX_GPUS];
	pthread_t threads[WU_MAX_GPUS];
	bool started[WU_MAX_GPUS] = { false };
	int code = SN_WARMUP_OK;

	/* In parallel: 4 contexts serially took 0.41 s on a 4xH200 node. */
	wu_phase_begin(run, WU_PHASE_CONTEXTS, "cudaSetDevice/cudaFree (contexts)");
	for (size_t i = 0; i < n; i++) {
		jobs[i] = (struct ctx_job){ .device = (int)i };
		if (pthread_create(&threads[i], NULL, create_context,
				   &jobs[i]) == 0)
			started[i] = true;
		else
			create_context(&jobs[i]);
	}
	for (size_t i = 0; i < n; i++) {
		if (started[i])
			pthread_join(threads[i], NULL);
	}
	wu_phase_end(run);
	for (size_t i = 0; i < n && code == SN_WARMUP_OK; i++) {
		char call[64];

		if (jobs[i].rc == cudaSuccess)
			continue;
		snprintf(call, sizeof(call), "%s on device %zu", jobs[i].call,
			 i);
		code = wu_cuda_fail(run, jobs[i].rc, call);
	}
	return code;
}

/* SPDX-License-Identifier: MIT */
/*
 * Step 1 and 2: enumerate the visible GPUs and check their PCI bus IDs;
 * then create the CUDA contexts, one thread per GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"
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

int wu_gpus_enumerate(struct wu_run *run, struct wu_cu *cu)
{
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	struct sn_gpu_identity found[WU_MAX_GPUS];
	char names[WU_MAX_GPUS][96];
	CUresult rc;
	int count = 0;
	int code;

	pthread_mutex_lock(&run->lock);
	run->cvd_set = cvd != NULL;
	snprintf(run->cvd, sizeof(run->cvd), "%s", cvd ? cvd : "");
	pthread_mutex_unlock(&run->lock);

	wu_phase_begin(run, WU_PHASE_CUDA_INIT, "dlopen(libcuda.so.1)");
	code = wu_cu_load(run, cu);
	if (code)
		return code;
	wu_cu_driver_version(run);
	/* cuInit is the slow first call (0.2-1 s on an H200 node even with
	 * persistence mode); it fails with CUDA_ERROR_NO_DEVICE when
	 * CUDA_VISIBLE_DEVICES hides every GPU. */
	wu_doing(run, "cuInit");
	rc = cu->init(0);
	if (rc == CUDA_SUCCESS) {
		wu_doing(run, "cuDeviceGetCount");
		rc = cu->device_get_count(&count);
	}
	wu_phase_end(run);
	if (rc == CUDA_ERROR_NO_DEVICE || (rc == CUDA_SUCCESS && count == 0)) {
		return wu_fail(run, SN_WARMUP_NO_GPUS,
			       "no visible CUDA device (CUDA_VISIBLE_DEVICES%s%s%s)",
			       cvd ? "=\"" : " unset", cvd ? cvd : "",
			       cvd ? "\"" : "");
	}
	if (rc != CUDA_SUCCESS)
		return wu_cuda_fail(run, rc, "cuInit");
	if (count < 0 || count > WU_MAX_GPUS)
		return wu_fail(run, SN_WARMUP_INTERNAL,
			       "cuDeviceGetCount reported %d devices; at most %d are supported",
			       count, WU_MAX_GPUS);

	memset(found, 0, sizeof(found));
	memset(names, 0, sizeof(names));
	for (int i = 0; i < count; i++) {
		CUuuid uuid;
		char call[64];

		found[i].index = i;
		snprintf(call, sizeof(call), "cuDeviceGet(%d)", i);
		wu_doing(run, "cuDeviceGet");
		rc = cu->device_get(&cu->dev[i], i);
		if (rc != CUDA_SUCCESS)
			return wu_cuda_fail(run, rc, call);
		/* The bus ID NCCL itself uses for its duplicate check. */
		snprintf(call, sizeof(call), "cuDeviceGetPCIBusId(%d)", i);
		wu_doing(run, "cuDeviceGetPCIBusId");
		rc = cu->device_get_pci_bus_id(found[i].busid,
					       (int)sizeof(found[i].busid),
					       cu->dev[i]);
		if (rc != CUDA_SUCCESS)
			return wu_cuda_fail(run, rc, call);
		found[i].busid[sizeof(found[i].busid) - 1] = '\0';
		snprintf(call, sizeof(call), "cuDeviceGetUuid(%d)", i);
		wu_doing(run, "cuDeviceGetUuid");
		rc = cu->device_get_uuid(&uuid, cu->dev[i]);
		if (rc != CUDA_SUCCESS)
			return wu_cuda_fail(run, rc, call);
		sn_uuid_format((const unsigned char *)uuid.bytes, false,
			       found[i].uuid, sizeof(found[i].uuid));
		snprintf(call, sizeof(call), "cuDeviceGetName(%d)", i);
		wu_doing(run, "cuDeviceGetName");
		rc = cu->device_get_name(names[i], (int)sizeof(names[i]),
					 cu->dev[i]);
		if (rc != CUDA_SUCCESS)
			return wu_cuda_fail(run, rc, call);
		names[i][sizeof(names[i]) - 1] = '\0';
	}

	pthread_mutex_lock(&run->lock);
	memcpy(run->gpus, found, sizeof(found));
	memcpy(run->gpu_names, names, sizeof(names));
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
	struct wu_cu *cu;
	int device;
	CUresult rc;
	const char *call;
};

static void *create_context(void *arg)
{
	struct ctx_job *job = arg;
	struct wu_cu *cu = job->cu;
	CUcontext ctx = NULL;

	/* The primary context: the one the CUDA runtime, NCCL and the
	 * job's framework all share on this device. */
	job->call = "cuDevicePrimaryCtxRetain";
	job->rc = cu->primary_ctx_retain(&ctx, cu->dev[job->device]);
	if (job->rc == CUDA_SUCCESS) {
		/* Each ctx slot is written by its own thread only. */
		cu->ctx[job->device] = ctx;
		job->call = "cuCtxSetCurrent";
		job->rc = cu->ctx_set_current(ctx);
	}
	return NULL;
}

int wu_gpus_create_contexts(struct wu_run *run, struct wu_cu *cu)
{
	size_t n = run->n_gpus;
	struct ctx_job jobs[WU_MAX_GPUS];
	pthread_t threads[WU_MAX_GPUS];
	bool started[WU_MAX_GPUS] = { false };
	int code = SN_WARMUP_OK;

	/* In parallel: 4 contexts serially took 0.41 s on a 4xH200 node. */
	wu_phase_begin(run, WU_PHASE_CONTEXTS, "cuDevicePrimaryCtxRetain (contexts)");
	for (size_t i = 0; i < n; i++) {
		jobs[i] = (struct ctx_job){ .cu = cu, .device = (int)i };
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

		if (jobs[i].rc == CUDA_SUCCESS)
			continue;
		snprintf(call, sizeof(call), "%s on device %zu", jobs[i].call,
			 i);
		code = wu_cuda_fail(run, jobs[i].rc, call);
	}
	return code;
}

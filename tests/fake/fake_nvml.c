/* SPDX-License-Identifier: MIT */
/*
 * A fake libnvidia-ml.so.1 (NVML, the driver's management library) for
 * tests without a GPU, built from src/warmup/nvml_api.h (which
 * tests/gpu/nvml_abi.c checks against NVIDIA's nvml.h), installed beside
 * the fake libcuda.so.1 as the driver installs both.  Its GPUs are the
 * fake driver's (FAKE_CUDA_BUSIDS, FAKE_CUDA_UUIDS, in that order), found
 * by PCI bus ID or UUID like the real library; every reading is healthy
 * by default and scriptable per GPU through FAKE_NVML_* (README.md):
 * a list "V0,V1,..." by physical GPU, one value for all, "na" for
 * NVML_ERROR_NOT_SUPPORTED.  Calls before nvmlInit_v2 return
 * NVML_ERROR_UNINITIALIZED.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fake_common.h"
#include "nvml_api.h"

/* Each function declared with nvml_api.h's type for it: a signature
 * that drifts from the helper's declarations does not compile. */
#define FN(type, name) __typeof__(*(type)0) name
FN(nvml_init_fn, nvmlInit_v2);
FN(nvml_shutdown_fn, nvmlShutdown);
FN(nvml_error_string_fn, nvmlErrorString);
FN(nvml_count_fn, nvmlDeviceGetCount_v2);
FN(nvml_by_index_fn, nvmlDeviceGetHandleByIndex_v2);
FN(nvml_uuid_fn, nvmlDeviceGetUUID);
FN(nvml_by_busid_fn, nvmlDeviceGetHandleByPciBusId_v2);
FN(nvml_by_uuid_fn, nvmlDeviceGetHandleByUUID);
FN(nvml_memory_fn, nvmlDeviceGetMemoryInfo);
FN(nvml_procs_fn, nvmlDeviceGetComputeRunningProcesses_v3);
FN(nvml_procs_fn, nvmlDeviceGetGraphicsRunningProcesses_v3);
FN(nvml_remapped_fn, nvmlDeviceGetRemappedRows);
FN(nvml_state_fn, nvmlDeviceGetRetiredPagesPendingStatus);
FN(nvml_state_fn, nvmlDeviceGetPersistenceMode);
FN(nvml_ecc_fn, nvmlDeviceGetTotalEccErrors);
FN(nvml_compute_mode_fn, nvmlDeviceGetComputeMode);
FN(nvml_uint_fn, nvmlDeviceGetCurrPcieLinkGeneration);
FN(nvml_uint_fn, nvmlDeviceGetMaxPcieLinkGeneration);
FN(nvml_uint_fn, nvmlDeviceGetCurrPcieLinkWidth);
FN(nvml_uint_fn, nvmlDeviceGetMaxPcieLinkWidth);
FN(nvml_nvlink_state_fn, nvmlDeviceGetNvLinkState);
FN(nvml_ull_fn, nvmlDeviceGetCurrentClocksEventReasons);

#define MAX_DEV 64
#define NA (-1LL)

struct nvmlDevice_st {
	int index;
	char busid[32];
	char uuid[48];
};

static struct {
	int inits;
	int n;
	struct nvmlDevice_st dev[MAX_DEV];
} fake;

/* Item I of the comma list LIST (the only item if there is one). */
static bool item(const char *list, int i, char *out, size_t len)
{
	if (!list || !*list)
		return false;
	return fake_list_item(list, strchr(list, ',') ? i : 0, out, len);
}

/* FAKE_NVML_<NAME> for GPU I: DEF if unset, NA for "na". */
static long long value(const char *name, int i, long long def)
{
	char var[64], v[32];

	snprintf(var, sizeof(var), "FAKE_NVML_%s", name);
	/* FAKE_NVML_HOSTS: the scripted readings only on those hosts. */
	if (getenv("FAKE_NVML_HOSTS") && !fake_host_listed("FAKE_NVML_HOSTS"))
		return def;
	if (!item(getenv(var), i, v, sizeof(v)))
		return def;
	if (strcasecmp(v, "na") == 0)
		return NA;
	return strtoll(v, NULL, 0);
}

static void setup(void)
{
	const char *busids = getenv("FAKE_CUDA_BUSIDS");
	const char *uuids = getenv("FAKE_CUDA_UUIDS");
	const char *mig = getenv("FAKE_CUDA_MIG");
	char it[128];

	if (!busids || !*busids)
		busids = "0000:01:00.0,0000:02:00.0,0000:03:00.0,0000:04:00.0";
	fake.n = 0;
	for (int i = 0; i < MAX_DEV; i++) {
		struct nvmlDevice_st *d = &fake.dev[i];

		/* Not item(): one bus ID is one GPU, not "all". */
		if (!fake_list_item(busids, i, it, sizeof(it)) || !it[0])
			break;
		d->index = i;
		snprintf(d->busid, sizeof(d->busid), "%.31s", it);
		if (uuids && strchr(uuids, ',') && item(uuids, i, it, sizeof(it)))
			snprintf(d->uuid, sizeof(d->uuid), "%s", it);
		else
			snprintf(d->uuid, sizeof(d->uuid),
				 "%s-fa4e%s-0000-0000-0000-0000000000%02x",
				 mig && *mig && strcmp(mig, "0") ? "MIG" : "GPU",
				 mig && *mig && strcmp(mig, "0") ? "3100" : "0000",
				 i);
		fake.n = i + 1;
	}
}

nvmlReturn_t nvmlInit_v2(void)
{
	if (fake_env_has("FAKE_NVML_FAIL", "init"))
		return NVML_ERROR_UNKNOWN;
	/* A degraded GPU's driver call that never returns. */
	if (fake_env_has("FAKE_NVML_HANG", "init"))
		fake_hang();
	if (fake.inits++ == 0)
		setup();
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
	if (fake.inits == 0)
		return NVML_ERROR_UNINITIALIZED;
	fake.inits--;
	return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
	switch (result) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	default: return "Unknown Error";
	}
}

/* "0000:01:00.0" and "00000000:01:00.0" are the same bus ID. */
static bool same_busid(const char *a, const char *b)
{
	unsigned int da, ba, va, fa, db, bb, vb, fb;

	if (sscanf(a, "%x:%x:%x.%x", &da, &ba, &va, &fa) != 4 ||
	    sscanf(b, "%x:%x:%x.%x", &db, &bb, &vb, &fb) != 4)
		return strcasecmp(a, b) == 0;
	return da == db && ba == bb && va == vb && fa == fb;
}

/* The common prologue: initialised, a device of ours, an output. */
#define CHECK_ARGS(d_, out) do { \
	if (!fake.inits) \
		return NVML_ERROR_UNINITIALIZED; \
	if (!(d_) || !(out) || (d_) < fake.dev || (d_) >= fake.dev + fake.n) \
		return NVML_ERROR_INVALID_ARGUMENT; \
} while (0)

/* Every GPU of the node, in the fake driver's order (the real NVML
 * counts in PCI order and ignores CUDA_VISIBLE_DEVICES, as here). */
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	if (!fake.inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!deviceCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	*deviceCount = (unsigned int)fake.n;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
					   nvmlDevice_t *device)
{
	if (!fake.inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!device || index >= (unsigned int)fake.n)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* FAKE_NVML_LOG=FILE: a line "index N" per lookup, to count them. */
	if (getenv("FAKE_NVML_LOG") && *getenv("FAKE_NVML_LOG")) {
		FILE *f = fopen(getenv("FAKE_NVML_LOG"), "ae");

		if (f) {
			fprintf(f, "index %u\n", index);
			fclose(f);
		}
	}
	/* "index": as a GPU the job's device cgroup hides. */
	if (fake_env_has("FAKE_NVML_FAIL", "lookup") ||
	    fake_env_has("FAKE_NVML_FAIL", "index"))
		return NVML_ERROR_NO_PERMISSION;
	*device = &fake.dev[index];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid,
			       unsigned int length)
{
	CHECK_ARGS(device, uuid);
	if (strlen(device->uuid) >= length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(uuid, device->uuid, strlen(device->uuid) + 1);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId,
					      nvmlDevice_t *device)
{
	if (!fake.inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!pciBusId || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (fake_env_has("FAKE_NVML_FAIL", "lookup") ||
	    fake_env_has("FAKE_NVML_FAIL", "busid"))
		return NVML_ERROR_NOT_FOUND;
	for (int i = 0; i < fake.n; i++)
		if (same_busid(pciBusId, fake.dev[i].busid)) {
			*device = &fake.dev[i];
			return NVML_SUCCESS;
		}
	return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
	if (!fake.inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!uuid || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (fake_env_has("FAKE_NVML_FAIL", "lookup") ||
	    fake_env_has("FAKE_NVML_FAIL", "uuid"))
		return NVML_ERROR_NOT_FOUND;
	for (int i = 0; i < fake.n; i++)
		if (strcasecmp(uuid, fake.dev[i].uuid) == 0) {
			*device = &fake.dev[i];
			return NVML_SUCCESS;
		}
	return NVML_ERROR_NOT_FOUND;
}

/* FAKE_NVML_PROCS="GPU:PID:MIB,...": MIB "na" is N/A (another user's). */
static unsigned int procs_of(int gpu, nvmlProcessInfo_t *out, unsigned int max,
			     unsigned long long *sum)
{
	const char *p = getenv("FAKE_NVML_PROCS");
	unsigned int n = 0;

	*sum = 0;
	if (getenv("FAKE_NVML_HOSTS") && !fake_host_listed("FAKE_NVML_HOSTS"))
		p = NULL;
	while (p && *p) {
		int g;
		unsigned int pid;
		char mib[16] = "";

		if (sscanf(p, "%d:%u:%15[^,]", &g, &pid, mib) == 3 && g == gpu) {
			unsigned long long b = strcasecmp(mib, "na") == 0 ?
				NVML_VALUE_NOT_AVAILABLE :
				strtoull(mib, NULL, 10) << 20;

			if (out && n < max)
				out[n] = (nvmlProcessInfo_t){ .pid = pid,
					.usedGpuMemory = b,
					.gpuInstanceId = 0xFFFFFFFFu,
					.computeInstanceId = 0xFFFFFFFFu };
			if (b != NVML_VALUE_NOT_AVAILABLE)
				*sum += b;
			n++;
		}
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return n;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
						     unsigned int *infoCount,
						     nvmlProcessInfo_t *infos)
{
	unsigned long long sum;
	unsigned int n;

	CHECK_ARGS(device, infoCount);
	n = procs_of(device->index, NULL, 0, &sum);
	if (n > *infoCount) {
		*infoCount = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	if (n && !infos)
		return NVML_ERROR_INVALID_ARGUMENT;
	*infoCount = procs_of(device->index, infos, *infoCount, &sum);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
						      unsigned int *infoCount,
						      nvmlProcessInfo_t *infos)
{
	CHECK_ARGS(device, infoCount);
	(void)infos;
	*infoCount = 0;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	unsigned long long held;

	CHECK_ARGS(device, memory);
	procs_of(device->index, NULL, 0, &held);
	memory->total = (unsigned long long)fake_env_num("FAKE_CUDA_MEM_MIB",
							 143771) << 20;
	/* The driver's own reservation, plus what the processes hold. */
	memory->used = (512ULL << 20) + held;
	if (memory->used > memory->total)
		memory->used = memory->total;
	memory->free = memory->total - memory->used;
	return NVML_SUCCESS;
}

/* One reading: NOT_SUPPORTED when scripted "na". */
#define READING(d_, out, name, def, type) do { \
	long long v_; \
	CHECK_ARGS(d_, out); \
	v_ = value(name, (d_)->index, def); \
	if (v_ == NA) \
		return NVML_ERROR_NOT_SUPPORTED; \
	*(out) = (type)v_; \
	return NVML_SUCCESS; \
} while (0)

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device,
				       unsigned int *corrRows,
				       unsigned int *uncRows,
				       unsigned int *isPending,
				       unsigned int *failureOccurred)
{
	long long pending, failure;

	CHECK_ARGS(device, corrRows);
	if (!uncRows || !isPending || !failureOccurred)
		return NVML_ERROR_INVALID_ARGUMENT;
	pending = value("REMAP_PENDING", device->index, 0);
	failure = value("REMAP_FAILURE", device->index, 0);
	if (pending == NA || failure == NA)
		return NVML_ERROR_NOT_SUPPORTED;
	*corrRows = 0;
	*uncRows = (unsigned int)(pending + failure);
	*isPending = (unsigned int)pending;
	*failureOccurred = (unsigned int)failure;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
						    nvmlEnableState_t *isPending)
{
	/* Hopper and later report row remapping instead: N/A by default. */
	READING(device, isPending, "RETIRED_PENDING", NA, nvmlEnableState_t);
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device,
					 nvmlMemoryErrorType_t errorType,
					 nvmlEccCounterType_t counterType,
					 unsigned long long *eccCounts)
{
	if (errorType != NVML_MEMORY_ERROR_TYPE_UNCORRECTED ||
	    counterType != NVML_VOLATILE_ECC) {
		CHECK_ARGS(device, eccCounts);
		*eccCounts = 0;
		return NVML_SUCCESS;
	}
	READING(device, eccCounts, "ECC_UNCORR", 0, unsigned long long);
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device,
					  nvmlEnableState_t *mode)
{
	READING(device, mode, "PERSISTENCE", 1, nvmlEnableState_t);
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device,
				      nvmlComputeMode_t *mode)
{
	READING(device, mode, "COMPUTE_MODE", 0, nvmlComputeMode_t);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device,
						 unsigned int *v)
{
	READING(device, v, "PCIE_GEN", 5, unsigned int);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device,
						unsigned int *v)
{
	READING(device, v, "PCIE_GEN_MAX", 5, unsigned int);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device,
					    unsigned int *v)
{
	READING(device, v, "PCIE_WIDTH", 16, unsigned int);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device,
					   unsigned int *v)
{
	READING(device, v, "PCIE_WIDTH_MAX", 16, unsigned int);
}

/* FAKE_NVML_NVLINKS links (default 18, an H100/H200 SXM), the first
 * FAKE_NVML_NVLINKS_ACTIVE of them active (default all). */
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
				      nvmlEnableState_t *isActive)
{
	long long links, active;

	CHECK_ARGS(device, isActive);
	links = value("NVLINKS", device->index, 18);
	active = value("NVLINKS_ACTIVE", device->index, links);
	if (links == NA || links == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	if (link >= (unsigned long long)links)
		return NVML_ERROR_INVALID_ARGUMENT;
	*isActive = (long long)link < active ? NVML_FEATURE_ENABLED :
		NVML_FEATURE_DISABLED;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
						    unsigned long long *r)
{
	READING(device, r, "CLOCK_REASONS", 0x1, unsigned long long);
}

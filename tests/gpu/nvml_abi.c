/* SPDX-License-Identifier: MIT */
/*
 * Checks src/warmup/nvml_api.h against NVIDIA's real nvml.h, where a node
 * has one (CUDA toolkit): built by tests/gpu/run-gpu-tests.sh with
 * -Werror, so a wrong signature, layout or constant fails the build.
 * Then prints what the helper's declarations give for the layouts.
 */
#include <stddef.h>
#include <stdio.h>

#include <nvml.h>

#define WU_NVML_REAL_HEADER
#include "nvml_api.h"
#include "gpu/health.h"

/* Each pointer type takes NVIDIA's function: -Werror=incompatible-pointer-types. */
static nvml_init_fn f_init = nvmlInit_v2;
static nvml_shutdown_fn f_shutdown = nvmlShutdown;
static nvml_error_string_fn f_err = nvmlErrorString;
static nvml_count_fn f_count = nvmlDeviceGetCount_v2;
static nvml_by_index_fn f_index = nvmlDeviceGetHandleByIndex_v2;
static nvml_uuid_fn f_getuuid = nvmlDeviceGetUUID;
static nvml_by_busid_fn f_busid = nvmlDeviceGetHandleByPciBusId_v2;
static nvml_by_uuid_fn f_uuid = nvmlDeviceGetHandleByUUID;
static nvml_memory_fn f_mem = nvmlDeviceGetMemoryInfo;
static nvml_procs_fn f_cp = nvmlDeviceGetComputeRunningProcesses_v3;
static nvml_procs_fn f_gp = nvmlDeviceGetGraphicsRunningProcesses_v3;
static nvml_remapped_fn f_rr = nvmlDeviceGetRemappedRows;
static nvml_state_fn f_rp = nvmlDeviceGetRetiredPagesPendingStatus;
static nvml_state_fn f_pm = nvmlDeviceGetPersistenceMode;
static nvml_ecc_fn f_ecc = nvmlDeviceGetTotalEccErrors;
static nvml_compute_mode_fn f_cm = nvmlDeviceGetComputeMode;
static nvml_uint_fn f_g = nvmlDeviceGetCurrPcieLinkGeneration;
static nvml_uint_fn f_gm = nvmlDeviceGetMaxPcieLinkGeneration;
static nvml_uint_fn f_w = nvmlDeviceGetCurrPcieLinkWidth;
static nvml_uint_fn f_wm = nvmlDeviceGetMaxPcieLinkWidth;
static nvml_nvlink_state_fn f_nl = nvmlDeviceGetNvLinkState;
static nvml_ull_fn f_cr = nvmlDeviceGetCurrentClocksEventReasons;

_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t");
_Static_assert(offsetof(nvmlProcessInfo_t, usedGpuMemory) == 8, "usedGpuMemory");
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t");
_Static_assert(NVML_COMPUTEMODE_EXCLUSIVE_PROCESS == SN_COMPUTE_EXCLUSIVE_PROCESS, "compute mode");
_Static_assert(NVML_COMPUTEMODE_PROHIBITED == SN_COMPUTE_PROHIBITED, "compute mode");
_Static_assert(NVML_MEMORY_ERROR_TYPE_UNCORRECTED == 1 && NVML_VOLATILE_ECC == 0, "ecc");
_Static_assert(NVML_ERROR_NOT_SUPPORTED == 3 && NVML_ERROR_GPU_IS_LOST == 15, "errors");
_Static_assert(nvmlClocksEventReasonGpuIdle == SN_CLOCK_IDLE, "idle");
_Static_assert(nvmlClocksThrottleReasonHwSlowdown == SN_CLOCK_HW_SLOWDOWN, "hw slowdown");
_Static_assert(nvmlClocksThrottleReasonHwThermalSlowdown == SN_CLOCK_HW_THERMAL, "hw thermal");
_Static_assert(nvmlClocksThrottleReasonHwPowerBrakeSlowdown == SN_CLOCK_HW_POWER_BRAKE, "power brake");
_Static_assert(nvmlClocksEventReasonSwThermalSlowdown == SN_CLOCK_SW_THERMAL, "sw thermal");

int main(void)
{
	void *all[] = { (void *)f_init, (void *)f_shutdown, (void *)f_err,
		(void *)f_busid, (void *)f_uuid, (void *)f_mem, (void *)f_cp,
		(void *)f_gp, (void *)f_rr, (void *)f_rp, (void *)f_pm,
		(void *)f_ecc, (void *)f_cm, (void *)f_g, (void *)f_gm,
		(void *)f_w, (void *)f_wm, (void *)f_nl, (void *)f_cr, (void *)f_count,
		(void *)f_index, (void *)f_getuuid };

	printf("nvml_abi: %zu functions match nvml.h (NVML_API_VERSION %d), nvmlProcessInfo_t %zu bytes, NVML_NVLINK_MAX_LINKS %d\n",
	       sizeof(all) / sizeof(all[0]), NVML_API_VERSION,
	       sizeof(nvmlProcessInfo_t), NVML_NVLINK_MAX_LINKS);
	return 0;
}

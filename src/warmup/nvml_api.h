/* SPDX-License-Identifier: MIT */
/*
 * The part of NVIDIA's nvml.h that nccl-warmup uses, declared here
 * because the helper links nothing of NVIDIA and build hosts need no
 * nvml.h: libnvidia-ml.so.1 comes with the driver and is loaded at run
 * time (nvml.c).  Names, values, struct layouts and signatures are
 * nvml.h's (NVML API version 13, CUDA 13 / driver R580; each of these
 * is unchanged since the version noted).  tests/fake/fake_nvml.c is
 * built against this header.
 */
#ifndef WU_NVML_API_H
#define WU_NVML_API_H

/*
 * tests/gpu/nvml_abi.c includes NVIDIA's own nvml.h first and defines
 * WU_NVML_REAL_HEADER: then only the function types below are declared,
 * and the compiler checks them against NVIDIA's prototypes.
 */
#ifndef WU_NVML_REAL_HEADER
typedef struct nvmlDevice_st *nvmlDevice_t;

typedef enum nvmlReturn_enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;

typedef enum nvmlEnableState_enum {
	NVML_FEATURE_DISABLED = 0,
	NVML_FEATURE_ENABLED = 1,
} nvmlEnableState_t;

typedef enum nvmlComputeMode_enum {
	NVML_COMPUTEMODE_DEFAULT = 0,
	NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
	NVML_COMPUTEMODE_PROHIBITED = 2,
	NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
} nvmlComputeMode_t;

typedef enum nvmlMemoryErrorType_enum {
	NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
	NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1,
} nvmlMemoryErrorType_t;

typedef enum nvmlEccCounterType_enum {
	NVML_VOLATILE_ECC = 0,
	NVML_AGGREGATE_ECC = 1,
} nvmlEccCounterType_t;

/* nvmlDeviceGetMemoryInfo (v1 struct): bytes. */
typedef struct nvmlMemory_st {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_t;

/* nvmlProcessInfo_v2_t, the _v3 process queries' element (R510+). */
typedef struct nvmlProcessInfo_v2_st {
	unsigned int pid;
	unsigned long long usedGpuMemory;	/* bytes, or N/A: */
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_t;

/* nvml.h: (-1), i.e. all ones in the unsigned long long usedGpuMemory. */
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)
#define NVML_NVLINK_MAX_LINKS 36	/* 18 before R570: extra links answer NOT_SUPPORTED/INVALID_ARGUMENT */
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96

/* nvmlClocksEventReason* (nvmlClocksThrottleReason* before R535). */
#define nvmlClocksEventReasonGpuIdle 0x0000000000000001ULL
#define nvmlClocksEventReasonHwSlowdown 0x0000000000000008ULL
#define nvmlClocksEventReasonSwThermalSlowdown 0x0000000000000020ULL
#define nvmlClocksEventReasonHwThermalSlowdown 0x0000000000000040ULL
#define nvmlClocksEventReasonHwPowerBrakeSlowdown 0x0000000000000080ULL

#endif /* WU_NVML_REAL_HEADER */

/* The functions, as pointer types (nvml.c resolves them by name). */
typedef nvmlReturn_t (*nvml_init_fn)(void);				/* nvmlInit_v2 */
typedef nvmlReturn_t (*nvml_shutdown_fn)(void);				/* nvmlShutdown */
typedef const char *(*nvml_error_string_fn)(nvmlReturn_t result);	/* nvmlErrorString */
typedef nvmlReturn_t (*nvml_count_fn)(unsigned int *deviceCount);	/* nvmlDeviceGetCount_v2 */
typedef nvmlReturn_t (*nvml_by_index_fn)(unsigned int index,
					 nvmlDevice_t *device);		/* nvmlDeviceGetHandleByIndex_v2 */
typedef nvmlReturn_t (*nvml_uuid_fn)(nvmlDevice_t device, char *uuid,
				     unsigned int length);		/* nvmlDeviceGetUUID */
typedef nvmlReturn_t (*nvml_by_busid_fn)(const char *pciBusId,
					 nvmlDevice_t *device);		/* nvmlDeviceGetHandleByPciBusId_v2 */
typedef nvmlReturn_t (*nvml_by_uuid_fn)(const char *uuid,
					nvmlDevice_t *device);		/* nvmlDeviceGetHandleByUUID */
typedef nvmlReturn_t (*nvml_memory_fn)(nvmlDevice_t device,
				       nvmlMemory_t *memory);		/* nvmlDeviceGetMemoryInfo */
typedef nvmlReturn_t (*nvml_procs_fn)(nvmlDevice_t device,
				      unsigned int *infoCount,
				      nvmlProcessInfo_t *infos);	/* nvmlDeviceGet{Compute,Graphics}RunningProcesses_v3 */
typedef nvmlReturn_t (*nvml_remapped_fn)(nvmlDevice_t device,
					 unsigned int *corrRows,
					 unsigned int *uncRows,
					 unsigned int *isPending,
					 unsigned int *failureOccurred);	/* nvmlDeviceGetRemappedRows */
typedef nvmlReturn_t (*nvml_state_fn)(nvmlDevice_t device,
				      nvmlEnableState_t *state);	/* RetiredPagesPendingStatus, PersistenceMode */
typedef nvmlReturn_t (*nvml_ecc_fn)(nvmlDevice_t device,
				    nvmlMemoryErrorType_t errorType,
				    nvmlEccCounterType_t counterType,
				    unsigned long long *eccCounts);	/* nvmlDeviceGetTotalEccErrors */
typedef nvmlReturn_t (*nvml_compute_mode_fn)(nvmlDevice_t device,
					     nvmlComputeMode_t *mode);	/* nvmlDeviceGetComputeMode */
typedef nvmlReturn_t (*nvml_uint_fn)(nvmlDevice_t device,
				     unsigned int *value);		/* {Curr,Max}PcieLink{Generation,Width} */
typedef nvmlReturn_t (*nvml_nvlink_state_fn)(nvmlDevice_t device,
					     unsigned int link,
					     nvmlEnableState_t *isActive);	/* nvmlDeviceGetNvLinkState */
typedef nvmlReturn_t (*nvml_ull_fn)(nvmlDevice_t device,
				    unsigned long long *value);		/* nvmlDeviceGetCurrentClocksEventReasons */

#endif

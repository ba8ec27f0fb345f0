/* SPDX-License-Identifier: MIT */
/*
 * The CUDA driver API (libcuda.so.1), loaded at run time.  The helper
 * links no CUDA library: a node with only the NVIDIA driver (no toolkit,
 * no libcudart) can run it, and one build serves CUDA 12 and 13 drivers,
 * because the driver API's exported symbols are a stable ABI.
 */
#ifndef WU_CUDA_DRIVER_H
#define WU_CUDA_DRIVER_H

#include <cuda.h>

#include "warmup.h"

struct wu_cu {
	void *handle;
	CUresult (*init)(unsigned int flags);
	CUresult (*driver_get_version)(int *version);
	CUresult (*device_get_count)(int *count);
	CUresult (*device_get)(CUdevice *dev, int ordinal);
	CUresult (*device_get_pci_bus_id)(char *id, int len, CUdevice dev);
	CUresult (*device_get_uuid)(CUuuid *uuid, CUdevice dev);
	CUresult (*device_get_name)(char *name, int len, CUdevice dev);
	CUresult (*primary_ctx_retain)(CUcontext *ctx, CUdevice dev);
	CUresult (*ctx_set_current)(CUcontext ctx);
	CUresult (*mem_get_info)(size_t *free_bytes, size_t *total_bytes);
	CUresult (*mem_alloc)(CUdeviceptr *ptr, size_t bytes);
	CUresult (*mem_free)(CUdeviceptr ptr);
	CUresult (*memcpy_htod)(CUdeviceptr dst, const void *src, size_t n);
	CUresult (*memcpy_dtoh)(void *dst, CUdeviceptr src, size_t n);
	CUresult (*memset_d32)(CUdeviceptr dst, unsigned int v, size_t n);
	CUresult (*stream_create)(CUstream *stream, unsigned int flags);
	CUresult (*stream_query)(CUstream stream);
	CUresult (*stream_destroy)(CUstream stream);
	CUresult (*get_error_name)(CUresult rc, const char **name);
	CUresult (*get_error_string)(CUresult rc, const char **text);

	CUdevice dev[WU_MAX_GPUS];	/* by CUDA ordinal */
	CUcontext ctx[WU_MAX_GPUS];	/* retained primary contexts */
};

/* dlopen libcuda.so.1 and resolve the entry points (run->cu = cu). */
int wu_cu_load(struct wu_run *run, struct wu_cu *cu);
/* cuCtxSetCurrent(primary context of ordinal R); wu_cuda_fail on error. */
int wu_cu_use(struct wu_run *run, int r);
/* Fills run->driver_version and run->cuda_driver_version. */
void wu_cu_driver_version(struct wu_run *run);

#endif

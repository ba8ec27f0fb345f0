/* SPDX-License-Identifier: MIT */
/*
 * Loads libcuda.so.1, the NVIDIA driver's user-space library, at run time.
 *
 * The symbols resolved are the driver's ABI names: where cuda.h maps an
 * API name to a versioned one (cuMemAlloc -> cuMemAlloc_v2, ...) the
 * versioned symbol is the one a program built against cuda.h calls, and
 * it has been exported unchanged by every driver since CUDA 3.2 (R260),
 * so dlsym of exactly those names is what a linked program would bind.
 * They are bound from the global scope (RTLD_DEFAULT) as a linked program
 * binds them, so an LD_PRELOAD interposer of the job (or of
 * tests/gpu/interpose.c) comes first; that libcuda.so.1 has each one is
 * checked on its own handle.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cuda_driver.h"
#include "failed_call.h"

#define WU_LIBCUDA "libcuda.so.1"
#define WU_DRIVER_VERSION_FILE "/proc/driver/nvidia/version"

struct sym {
	const char *name;
	const char *fallback;	/* older drivers' name, or NULL */
	size_t offset;
};

#define SYM(field, name, fallback) \
	{ name, fallback, offsetof(struct wu_cu, field) }

static const struct sym syms[] = {
	SYM(init, "cuInit", NULL),
	SYM(driver_get_version, "cuDriverGetVersion", NULL),
	SYM(device_get_count, "cuDeviceGetCount", NULL),
	SYM(device_get, "cuDeviceGet", NULL),
	SYM(device_get_pci_bus_id, "cuDeviceGetPCIBusId", NULL),
	/* _v2 (R470+) gives MIG instances their own UUIDs. */
	SYM(device_get_uuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid"),
	SYM(device_get_name, "cuDeviceGetName", NULL),
	SYM(primary_ctx_retain, "cuDevicePrimaryCtxRetain", NULL),
	SYM(ctx_set_current, "cuCtxSetCurrent", NULL),
	SYM(mem_get_info, "cuMemGetInfo_v2", NULL),
	SYM(mem_alloc, "cuMemAlloc_v2", NULL),
	SYM(mem_free, "cuMemFree_v2", NULL),
	SYM(memcpy_htod, "cuMemcpyHtoD_v2", NULL),
	SYM(memcpy_dtoh, "cuMemcpyDtoH_v2", NULL),
	SYM(memset_d32, "cuMemsetD32_v2", NULL),
	SYM(stream_create, "cuStreamCreate", NULL),
	SYM(stream_query, "cuStreamQuery", NULL),
	SYM(stream_destroy, "cuStreamDestroy_v2", NULL),
	SYM(get_error_name, "cuGetErrorName", NULL),
	SYM(get_error_string, "cuGetErrorString", NULL),
};

int wu_cu_load(struct wu_run *run, struct wu_cu *cu)
{
	const char *why;

	memset(cu, 0, sizeof(*cu));
	wu_doing(run, "dlopen(" WU_LIBCUDA ")");
	cu->handle = dlopen(WU_LIBCUDA, RTLD_NOW | RTLD_GLOBAL);
	if (!cu->handle) {
		why = dlerror();
		return wu_fail(run, SN_WARMUP_CUDA_ERROR,
			       "no NVIDIA driver: cannot load " WU_LIBCUDA " (%s); nccl-warmup needs only the driver's " WU_LIBCUDA " (no CUDA toolkit): install the NVIDIA driver or check that ld.so finds it (ldconfig -p | grep libcuda)",
			       why ? why : "not found");
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		const char *name = syms[i].name;
		void *fn = NULL;

		if (!dlsym(cu->handle, name) && syms[i].fallback)
			name = syms[i].fallback;
		if (dlsym(cu->handle, name))
			fn = dlsym(RTLD_DEFAULT, name);
		if (!fn)
			return wu_fail(run, SN_WARMUP_CUDA_ERROR,
				       WU_LIBCUDA " lacks %s: the NVIDIA driver is too old or broken (R470 or newer is needed)",
				       syms[i].name);
		memcpy((char *)cu + syms[i].offset, &fn, sizeof(fn));
	}
	run->cu = cu;
	return SN_WARMUP_OK;
}

int wu_cu_use(struct wu_run *run, int r)
{
	CUresult rc = run->cu->ctx_set_current(run->cu->ctx[r]);
	char call[48];

	if (rc == CUDA_SUCCESS)
		return SN_WARMUP_OK;
	snprintf(call, sizeof(call), "cuCtxSetCurrent(device %d)", r);
	return wu_cuda_fail(run, rc, call);
}

/*
 * "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Thu ..." (or
 * "... Open Kernel Module for x86_64  580.95.05 ..."): the first word of
 * digits and dots with at least one dot.
 */
static void read_proc_version(char *out, size_t len)
{
	char line[512];
	FILE *f = fopen(WU_DRIVER_VERSION_FILE, "re");
	char *tok, *save = NULL;

	out[0] = '\0';
	if (!f)
		return;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	for (tok = strtok_r(line, " \t\n", &save); tok;
	     tok = strtok_r(NULL, " \t\n", &save)) {
		size_t n = strspn(tok, "0123456789.");

		if (n == strlen(tok) && isdigit((unsigned char)tok[0]) &&
		    strchr(tok, '.')) {
			snprintf(out, len, "%s", tok);
			return;
		}
	}
}

void wu_cu_driver_version(struct wu_run *run)
{
	char text[32];
	int v = 0;

	read_proc_version(text, sizeof(text));
	/* cuDriverGetVersion needs no cuInit: 13000 = CUDA 13.0. */
	if (run->cu->driver_get_version(&v) != CUDA_SUCCESS)
		v = 0;
	pthread_mutex_lock(&run->lock);
	snprintf(run->driver_version, sizeof(run->driver_version), "%s", text);
	run->cuda_driver_version = v;
	pthread_mutex_unlock(&run->lock);
}

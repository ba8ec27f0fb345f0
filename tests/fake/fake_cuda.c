/* SPDX-License-Identifier: MIT */
/*
 * A fake NVIDIA driver library (libcuda.so.1) for tests without a GPU,
 * built from the real cuda.h so every signature is checked by the
 * compiler.  It follows the driver API as NVIDIA documents it, not as
 * nccl-warmup happens to call it:
 *   - every call but cuDriverGetVersion, cuGetErrorName/String returns
 *     CUDA_ERROR_NOT_INITIALIZED before a successful cuInit(0);
 *     cuInit(flags != 0) is CUDA_ERROR_INVALID_VALUE, and cuInit with no
 *     visible device is CUDA_ERROR_NO_DEVICE;
 *   - context-bound calls (memory, streams, cuCtxGetDevice) need a current
 *     context (CUDA_ERROR_INVALID_CONTEXT), which is per thread;
 *   - cuDeviceGetPCIBusId writes "dddd:bb:dd.f" (hex, lower case) and
 *     truncates to LEN - 1 characters; cuGetErrorName/String return
 *     CUDA_ERROR_INVALID_VALUE and NULL for an unknown code;
 *   - cuMemGetInfo reports the device's total minus what was allocated.
 * Device memory is host memory; streams complete at a time set by the
 * fake NCCL.  Driven by FAKE_CUDA_* (see README.md).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "fake_common.h"

#define MAX_DEV 64
#define HDR 64			/* bytes before each allocation */

struct CUstream_st {
	int device;
	double busy_until;
	bool hung;
};

struct CUctx_st {
	int device;		/* visible ordinal */
	int refs;
};

struct fake_dev {
	char busid[32];
	unsigned char uuid[16];
	char uuid_text[64];
};

struct alloc_hdr {
	size_t bytes;
	int device;
};

static struct {
	pthread_once_t once;
	pthread_mutex_t lock;
	bool initialised;
	int n_phys;
	struct fake_dev phys[MAX_DEV];
	int n_vis;
	int vis[MAX_DEV];		/* visible ordinal -> physical index */
	struct CUctx_st primary[MAX_DEV];
	size_t used[MAX_DEV];		/* bytes allocated per ordinal */
	size_t total;
} fake = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

static __thread struct CUctx_st *current;

__attribute__((constructor)) static void fake_cuda_loaded(void)
{
	fake_log_process("FAKE_CUDA_LOG", "cuda");
}

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

/* "GPU-8+4+4+4+12 hex" or "MIG-..." -> 16 bytes. */
static bool parse_uuid(const char *text, unsigned char out[16])
{
	const char *p = text + 4;
	int n = 0;

	if (strncmp(text, "GPU-", 4) && strncmp(text, "MIG-", 4))
		return false;
	for (; *p && n < 32; p++) {
		if (*p == '-')
			continue;
		if (!isxdigit((unsigned char)*p))
			return false;
		if (n % 2 == 0)
			out[n / 2] = (unsigned char)(hexval(*p) << 4);
		else
			out[n / 2] |= (unsigned char)hexval(*p);
		n++;
	}
	return n == 32 && *p == '\0';
}

static void format_uuid(const unsigned char b[16], bool mig, char *out)
{
	int o = sprintf(out, "%s", mig ? "MIG-" : "GPU-");

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		o += sprintf(out + o, "%02x", b[i]);
	}
}

static int find_visible(const char *entry)
{
	char *end;
	long idx;

	if (!strncmp(entry, "GPU-", 4) || !strncmp(entry, "MIG-", 4)) {
		for (int i = 0; i < fake.n_phys; i++)
			if (strcasecmp(entry, fake.phys[i].uuid_text) == 0)
				return i;
		return -1;
	}
	idx = strtol(entry, &end, 10);
	if (end == entry || *end || idx < 0 || idx >= fake.n_phys)
		return -1;
	return (int)idx;
}

static void fake_setup(void)
{
	const char *busids = getenv("FAKE_CUDA_BUSIDS");
	const char *uuids = getenv("FAKE_CUDA_UUIDS");
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	const char *mig_mode = getenv("FAKE_CUDA_MIG");
	bool mig = mig_mode && *mig_mode && strcmp(mig_mode, "0") != 0;
	char item[128];

	fake.total = (size_t)fake_env_num("FAKE_CUDA_MEM_MIB", 143771) << 20;
	if (!busids || !*busids)
		busids = "0000:01:00.0,0000:02:00.0,0000:03:00.0,0000:04:00.0";
	for (int i = 0; i < MAX_DEV && fake_list_item(busids, i, item,
						   sizeof(item)); i++) {
		struct fake_dev *d = &fake.phys[i];

		snprintf(d->busid, sizeof(d->busid), "%.31s", item);
		if (!uuids || !fake_list_item(uuids, i, item, sizeof(item)) ||
		    !parse_uuid(item, d->uuid)) {
			/* Distinct default UUIDs: fa4e0000-...-<index>. */
			memset(d->uuid, 0, sizeof(d->uuid));
			d->uuid[0] = 0xfa;
			d->uuid[1] = 0x4e;
			d->uuid[15] = (unsigned char)i;
			if (mig)
				d->uuid[2] = 0x31;
		}
		format_uuid(d->uuid, mig, d->uuid_text);
		fake.n_phys = i + 1;
	}

	/* CUDA semantics: unset = all; empty = none; the list stops at the
	 * first invalid or repeated entry. */
	if (!cvd) {
		for (int i = 0; i < fake.n_phys; i++)
			fake.vis[fake.n_vis++] = i;
	} else {
		for (int i = 0; *cvd && fake.n_vis < MAX_DEV &&
				fake_list_item(cvd, i, item, sizeof(item)); i++) {
			int phys = find_visible(item);
			bool seen = false;

			for (int k = 0; k < fake.n_vis; k++)
				seen |= fake.vis[k] == phys;
			if (phys < 0 || seen)
				break;
			fake.vis[fake.n_vis++] = phys;
		}
	}
	/* CUDA enumerates only one MIG instance per process;
	 * FAKE_CUDA_MIG=all lifts that to exercise the helper's MIG path. */
	if (mig && strcmp(mig_mode, "all") != 0 && fake.n_vis > 1)
		fake.n_vis = 1;
	for (int i = 0; i < fake.n_vis; i++)
		fake.primary[i].device = i;
}

#define NEED_INIT()                                     \
	do {                                            \
		if (!fake.initialised)                  \
			return CUDA_ERROR_NOT_INITIALIZED; \
	} while (0)

#define NEED_CTX()                                      \
	do {                                            \
		NEED_INIT();                            \
		if (!current)                           \
			return CUDA_ERROR_INVALID_CONTEXT; \
	} while (0)

CUresult cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = (int)fake_env_num("FAKE_CUDA_DRIVER_VERSION",
					   CUDA_VERSION);
	return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int Flags)
{
	if (Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (fake_env_has("FAKE_CUDA_HANG", "init") ||
	    fake_host_listed("FAKE_CUDA_HANG_INIT_HOSTS"))
		fake_hang();
	/* A slow driver on the hosts named: a node that joins late. */
	if (fake_host_listed("FAKE_CUDA_SLOW_INIT_HOSTS"))
		fake_sleep(fake_env_num("FAKE_CUDA_SLOW_INIT_MS", 3000) / 1e3);
	/* What a driver whose kernel module does not match reports. */
	if (fake_env_has("FAKE_CUDA_FAIL", "init"))
		return CUDA_ERROR_SYSTEM_DRIVER_MISMATCH;
	pthread_once(&fake.once, fake_setup);
	if (fake.n_vis == 0)
		return CUDA_ERROR_NO_DEVICE;
	fake.initialised = true;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
	NEED_INIT();
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = fake.n_vis;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	NEED_INIT();
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal < 0 || ordinal >= fake.n_vis)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

static bool valid_device(CUdevice dev)
{
	return dev >= 0 && dev < fake.n_vis;
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	unsigned int dom = 0, bus = 0, d = 0, fn = 0;
	const char *text;

	NEED_INIT();
	if (!valid_device(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	if (!pciBusId || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (fake_env_has("FAKE_CUDA_FAIL", "busid"))
		return CUDA_ERROR_UNKNOWN;
	/* FAKE_CUDA_BUSIDS entries are taken as the driver would format
	 * them: "%04x:%02x:%02x.%x"; others are passed through verbatim
	 * (a driver printing the same ID twice is what is under test). */
	text = fake.phys[fake.vis[dev]].busid;
	if (sscanf(text, "%x:%x:%x.%x", &dom, &bus, &d, &fn) == 4) {
		char buf[32];

		snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", dom, bus, d,
			 fn);
		snprintf(pciBusId, (size_t)len, "%s", buf);
	} else {
		snprintf(pciBusId, (size_t)len, "%s", text);
	}
	return CUDA_SUCCESS;
}

static CUresult get_uuid(CUuuid *uuid, CUdevice dev)
{
	NEED_INIT();
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_device(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	memcpy(uuid->bytes, fake.phys[fake.vis[dev]].uuid, 16);
	return CUDA_SUCCESS;
}

/* cuda.h maps cuDeviceGetUuid to _v2; both are exported, as by R470+. */
#undef cuDeviceGetUuid
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	return get_uuid(uuid, dev);
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	return get_uuid(uuid, dev);
}

/* The model name: FAKE_CUDA_NAME, else what the fake GPUs claim to be. */
CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	const char *want = getenv("FAKE_CUDA_NAME");

	NEED_INIT();
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_device(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	/* As the driver does: truncated to LEN bytes, NUL-terminated. */
	snprintf(name, (size_t)len, "%s", want && *want ? want :
		 "NVIDIA Fake GPU");
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	NEED_INIT();
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_device(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	if (fake_env_has("FAKE_CUDA_HANG", "context"))
		fake_hang();
	/* The last device fails: the failure names a device index. */
	if (fake_env_has("FAKE_CUDA_FAIL", "context") && dev == fake.n_vis - 1)
		return CUDA_ERROR_DEVICE_UNAVAILABLE;
	/* Another process holds the GPU's memory (measured on an H200). */
	if (fake_env_has("FAKE_CUDA_FAIL", "context-oom") &&
	    dev == fake.n_vis - 1)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&fake.lock);
	fake.primary[dev].refs++;
	pthread_mutex_unlock(&fake.lock);
	*pctx = &fake.primary[dev];
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	NEED_INIT();
	if (!valid_device(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&fake.lock);
	if (fake.primary[dev].refs > 0)
		fake.primary[dev].refs--;
	pthread_mutex_unlock(&fake.lock);
	return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	NEED_INIT();
	if (ctx && (ctx < fake.primary || ctx >= fake.primary + fake.n_vis ||
		    ctx->refs == 0))
		return CUDA_ERROR_INVALID_CONTEXT;
	current = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	NEED_INIT();
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = current;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
	NEED_CTX();
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	*device = current->device;
	return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
	NEED_CTX();
	if (!free_bytes || !total)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fake.lock);
	*total = fake.total;
	*free_bytes = fake.total - fake.used[current->device];
	pthread_mutex_unlock(&fake.lock);
	return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	struct alloc_hdr *h;
	CUresult rc = CUDA_SUCCESS;

	NEED_CTX();
	if (!dptr || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (fake_env_has("FAKE_CUDA_FAIL", "malloc"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&fake.lock);
	if (bytesize > fake.total - fake.used[current->device])
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	else
		fake.used[current->device] += bytesize;
	pthread_mutex_unlock(&fake.lock);
	if (rc != CUDA_SUCCESS)
		return rc;
	/* Pages never touched (NCCL's reserve) never become resident. */
	h = malloc(HDR + bytesize);
	if (!h)
		return CUDA_ERROR_OUT_OF_MEMORY;
	h->bytes = bytesize;
	h->device = current->device;
	*dptr = (CUdeviceptr)(uintptr_t)((char *)h + HDR);
	return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	struct alloc_hdr *h;

	NEED_CTX();
	if (!dptr)
		return CUDA_SUCCESS;
	h = (struct alloc_hdr *)((char *)(uintptr_t)dptr - HDR);
	pthread_mutex_lock(&fake.lock);
	fake.used[h->device] -= h->bytes;
	pthread_mutex_unlock(&fake.lock);
	free(h);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
	NEED_CTX();
	memmove((void *)(uintptr_t)dst, src, n);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	NEED_CTX();
	memmove(dst, (const void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}

CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int ui, size_t n)
{
	unsigned int *p = (unsigned int *)(uintptr_t)dst;

	NEED_CTX();
	for (size_t i = 0; i < n; i++)
		p[i] = ui;
	return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	struct CUstream_st *s;

	NEED_CTX();
	if (!phStream || (Flags & ~(unsigned int)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	s = calloc(1, sizeof(*s));
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s->device = current->device;
	*phStream = s;
	return CUDA_SUCCESS;
}

CUresult cuStreamQuery(CUstream hStream)
{
	NEED_INIT();
	if (hStream && (hStream->hung || fake_now() < hStream->busy_until))
		return CUDA_ERROR_NOT_READY;
	return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
	NEED_INIT();
	if (!hStream)
		return CUDA_SUCCESS;
	if (hStream->hung)
		fake_hang();
	fake_sleep(hStream->busy_until - fake_now());
	return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream hStream)
{
	NEED_INIT();
	if (!hStream)
		return CUDA_ERROR_INVALID_HANDLE;
	free(hStream);
	return CUDA_SUCCESS;
}

static const struct {
	CUresult code;
	const char *name;
	const char *text;
} errors[] = {
	{ CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
	{ CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
	{ CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
	{ CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
	{ CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
	{ CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
	{ CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable" },
	{ CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
	{ CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
	{ CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready" },
	{ CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination" },
	{ CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error" },
};

static CUresult lookup(CUresult error, const char **out, bool name)
{
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
		if (errors[i].code == error) {
			*out = name ? errors[i].name : errors[i].text;
			return CUDA_SUCCESS;
		}
	}
	*out = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
	return lookup(error, pStr, true);
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	return lookup(error, pStr, false);
}

/* ---- private: used by the fake libnccl ------------------------------- */

void fake_cuda_stream_enqueue(struct CUstream_st *stream, double seconds)
{
	double now = fake_now();

	if (!stream)
		return;
	if (stream->busy_until < now)
		stream->busy_until = now;
	stream->busy_until += seconds;
}

void fake_cuda_stream_hang(struct CUstream_st *stream)
{
	if (stream)
		stream->hung = true;
}

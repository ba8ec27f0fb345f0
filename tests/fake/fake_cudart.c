/* SPDX-License-Identifier: MIT */
/*
 * A fake CUDA runtime (libcudart.so.13) for tests without a GPU, built from
 * the real cuda_runtime_api.h so every signature is checked by the
 * compiler.  Device memory is host memory; streams complete at a time set
 * by the fake NCCL.  Driven by FAKE_CUDA_* (see README.md).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "fake_common.h"

#define MAX_DEV 64

struct CUstream_st {
	int device;
	double busy_until;
	bool hung;
};

struct fake_dev {
	char busid[32];
	unsigned char uuid[16];
	char uuid_text[64];
};

static struct {
	pthread_once_t once;
	int n_phys;
	struct fake_dev phys[MAX_DEV];
	int n_vis;
	int vis[MAX_DEV];		/* visible ordinal -> physical index */
} fake = { .once = PTHREAD_ONCE_INIT };

static __thread int current_device;

__attribute__((constructor)) static void fake_cudart_loaded(void)
{
	fake_log_process("FAKE_CUDA_LOG", "cudart");
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

/* Item I of comma list LIST into OUT (LEN bytes); false if absent. */
static bool list_item(const char *list, int i, char *out, size_t len)
{
	const char *p = list;

	for (; p && i > 0; i--) {
		p = strchr(p, ',');
		if (p)
			p++;
	}
	if (!p)
		return false;
	snprintf(out, len, "%.*s", (int)strcspn(p, ","), p);
	return true;
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

static void fake_init(void)
{
	const char *busids = getenv("FAKE_CUDA_BUSIDS");
	const char *uuids = getenv("FAKE_CUDA_UUIDS");
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	const char *mig_mode = getenv("FAKE_CUDA_MIG");
	bool mig = mig_mode && *mig_mode && strcmp(mig_mode, "0") != 0;
	char item[128];

	if (!busids || !*busids)
		busids = "0000:01:00.0,0000:02:00.0,0000:03:00.0,0000:04:00.0";
	for (int i = 0; i < MAX_DEV && list_item(busids, i, item,
						   sizeof(item)); i++) {
		struct fake_dev *d = &fake.phys[i];

		snprintf(d->busid, sizeof(d->busid), "%.31s", item);
		if (!uuids || !list_item(uuids, i, item, sizeof(item)) ||
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
				list_item(cvd, i, item, sizeof(item)); i++) {
			int phys = find_visible(item);
			bool seen = false;

			for (int k = 0; k < fake.n_vis; k++)
				seen |= fake.vis[k] == phys;
			if (phys < 0 || seen)
				break;
			fake.vis[fake.n_vis++] = phys;
		}
	}
	/* The CUDA runtime enumerates only one MIG instance per process;
	 * FAKE_CUDA_MIG=all lifts that to exercise the helper's MIG path. */
	if (mig && strcmp(mig_mode, "all") != 0 && fake.n_vis > 1)
		fake.n_vis = 1;
}

static void ensure_init(void)
{
	pthread_once(&fake.once, fake_init);
}

static bool valid_device(int device)
{
	ensure_init();
	return device >= 0 && device < fake.n_vis;
}

cudaError_t cudaGetDeviceCount(int *count)
{
	if (fake_env_has("FAKE_CUDA_HANG", "init"))
		fake_hang();
	if (fake_env_has("FAKE_CUDA_FAIL", "init"))
		return cudaErrorInitializationError;
	ensure_init();
	if (fake.n_vis == 0)
		return cudaErrorNoDevice;
	*count = fake.n_vis;
	return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
	if (!valid_device(device))
		return cudaErrorInvalidDevice;
	if (fake_env_has("FAKE_CUDA_FAIL", "busid"))
		return cudaErrorUnknown;
	if (len <= 0 || !pciBusId)
		return cudaErrorInvalidValue;
	snprintf(pciBusId, (size_t)len, "%s", fake.phys[fake.vis[device]].busid);
	return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
	const struct fake_dev *d;
	unsigned int dom = 0, bus = 0, dev = 0;

	if (!valid_device(device))
		return cudaErrorInvalidDevice;
	d = &fake.phys[fake.vis[device]];
	memset(prop, 0, sizeof(*prop));
	snprintf(prop->name, sizeof(prop->name), "Fake GPU %d", device);
	memcpy(prop->uuid.bytes, d->uuid, sizeof(d->uuid));
	sscanf(d->busid, "%x:%x:%x", &dom, &bus, &dev);
	prop->pciDomainID = (int)dom;
	prop->pciBusID = (int)bus;
	prop->pciDeviceID = (int)dev;
	prop->major = 9;
	prop->totalGlobalMem = 141ULL << 30;
	prop->multiProcessorCount = 132;
	return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
	if (!valid_device(device))
		return cudaErrorInvalidDevice;
	if (fake_env_has("FAKE_CUDA_HANG", "context"))
		fake_hang();
	/* The last device fails: the failure names a device index. */
	if (fake_env_has("FAKE_CUDA_FAIL", "context") &&
	    device == fake.n_vis - 1)
		return cudaErrorDevicesUnavailable;
	current_device = device;
	return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
	*device = current_device;
	return cudaSuccess;
}

cudaError_t cudaFree(void *devPtr)
{
	free(devPtr);
	return cudaSuccess;
}

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	if (fake_env_has("FAKE_CUDA_FAIL", "malloc"))
		return cudaErrorMemoryAllocation;
	*devPtr = malloc(size ? size : 1);
	return *devPtr ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
		       enum cudaMemcpyKind kind)
{
	(void)kind;
	memmove(dst, src, count);
	return cudaSuccess;
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
	memset(devPtr, value, count);
	return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream,
				      unsigned int flags)
{
	struct CUstream_st *s = calloc(1, sizeof(*s));

	(void)flags;
	if (!s)
		return cudaErrorMemoryAllocation;
	s->device = current_device;
	*pStream = s;
	return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
	return cudaStreamCreateWithFlags(pStream, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	free(stream);
	return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
	if (stream && (stream->hung || fake_now() < stream->busy_until))
		return cudaErrorNotReady;
	return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	if (!stream)
		return cudaSuccess;
	if (stream->hung)
		fake_hang();
	fake_sleep(stream->busy_until - fake_now());
	return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
	return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
	return cudaSuccess;
}

cudaError_t cudaPeekAtLastError(void)
{
	return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
	*runtimeVersion = CUDART_VERSION;
	return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *driverVersion)
{
	*driverVersion = CUDART_VERSION;
	return cudaSuccess;
}

static const struct {
	cudaError_t code;
	const char *name;
	const char *text;
} errors[] = {
	{ cudaSuccess, "cudaSuccess", "no error" },
	{ cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument" },
	{ cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory" },
	{ cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error" },
	{ cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected" },
	{ cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal" },
	{ cudaErrorDevicesUnavailable, "cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable" },
	{ cudaErrorNotReady, "cudaErrorNotReady", "device not ready" },
	{ cudaErrorUnknown, "cudaErrorUnknown", "unknown error" },
};

const char *cudaGetErrorName(cudaError_t error)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].code == error)
			return errors[i].name;
	return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t error)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].code == error)
			return errors[i].text;
	return "unrecognized error code";
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

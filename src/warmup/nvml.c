/* SPDX-License-Identifier: MIT */
/*
 * The GPU health checks' reading side (issue 24): loads the driver's
 * libnvidia-ml.so.1 at run time (nvml_api.h declares what is used), finds
 * each of the step's GPUs by its PCI bus ID (the UUID when that fails) and
 * reads what src/core/gpu/health.c judges.  Runs after cuInit and before
 * any CUDA context, so the memory in use is other processes', and a GPU
 * held by another job is named before cuDevicePrimaryCtxRetain runs out
 * of memory.  NVML calls need no root for any value read here.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvml_api.h"
#include "warmup.h"

#define WU_LIBNVML "libnvidia-ml.so.1"
#define WU_NVML_PROCS_MAX 64

struct wu_nvml {
	void *handle;
	nvml_init_fn init;
	nvml_error_string_fn error_string;
	nvml_by_busid_fn by_busid;
	nvml_by_uuid_fn by_uuid;
	nvml_memory_fn memory;
	nvml_procs_fn compute_procs, graphics_procs;
	nvml_remapped_fn remapped_rows;
	nvml_state_fn retired_pending, persistence;
	nvml_ecc_fn ecc;
	nvml_compute_mode_fn compute_mode;
	nvml_uint_fn pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
	nvml_nvlink_state_fn nvlink_state;
	nvml_ull_fn clock_reasons;
};

struct nvml_sym {
	const char *name;
	size_t offset;
	bool required;
};

#define NSYM(field, name, req) { name, offsetof(struct wu_nvml, field), req }

static const struct nvml_sym nvml_syms[] = {
	NSYM(init, "nvmlInit_v2", true),
	NSYM(error_string, "nvmlErrorString", true),
	NSYM(by_busid, "nvmlDeviceGetHandleByPciBusId_v2", true),
	NSYM(by_uuid, "nvmlDeviceGetHandleByUUID", false),
	NSYM(memory, "nvmlDeviceGetMemoryInfo", false),
	NSYM(compute_procs, "nvmlDeviceGetComputeRunningProcesses_v3", false),
	NSYM(graphics_procs, "nvmlDeviceGetGraphicsRunningProcesses_v3", false),
	NSYM(remapped_rows, "nvmlDeviceGetRemappedRows", false),
	NSYM(retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus", false),
	NSYM(persistence, "nvmlDeviceGetPersistenceMode", false),
	NSYM(ecc, "nvmlDeviceGetTotalEccErrors", false),
	NSYM(compute_mode, "nvmlDeviceGetComputeMode", false),
	NSYM(pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration", false),
	NSYM(pcie_gen_max, "nvmlDeviceGetMaxPcieLinkGeneration", false),
	NSYM(pcie_width, "nvmlDeviceGetCurrPcieLinkWidth", false),
	NSYM(pcie_width_max, "nvmlDeviceGetMaxPcieLinkWidth", false),
	NSYM(nvlink_state, "nvmlDeviceGetNvLinkState", false),
	NSYM(clock_reasons, "nvmlDeviceGetCurrentClocksEventReasons", false),
};

/* "" when LIB lacks a required symbol or does not load; WHY says. */
static bool nvml_load(struct wu_nvml *n, char *why, size_t len)
{
	const char *e;

	memset(n, 0, sizeof(*n));
	n->handle = dlopen(WU_LIBNVML, RTLD_NOW | RTLD_LOCAL);
	if (!n->handle) {
		e = dlerror();
		snprintf(why, len, "cannot load " WU_LIBNVML " (%s)",
			 e ? e : "not found");
		return false;
	}
	for (size_t i = 0; i < sizeof(nvml_syms) / sizeof(nvml_syms[0]); i++) {
		void *fn = dlsym(n->handle, nvml_syms[i].name);

		if (!fn && nvml_syms[i].required) {
			snprintf(why, len, WU_LIBNVML " lacks %s (driver older than R510?)",
				 nvml_syms[i].name);
			return false;
		}
		memcpy((char *)n + nvml_syms[i].offset, &fn, sizeof(fn));
	}
	return true;
}

/* /proc/PID/status's real uid as a name; "" if not visible. */
static void proc_user(unsigned int pid, char *out, size_t len)
{
	char path[64], line[256];
	struct passwd pw, *res = NULL;
	char buf[1024];
	unsigned int uid;
	bool found = false;
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %u", &uid) == 1) {
			found = true;
			break;
		}
	fclose(f);
	if (!found)
		return;
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res)
		snprintf(out, len, "%s", pw.pw_name);
	else
		snprintf(out, len, "uid %u", uid);
}

static void add_procs(const struct wu_nvml *n, nvml_procs_fn fn,
		      nvmlDevice_t dev, struct sn_gpu_health *h)
{
	nvmlProcessInfo_t infos[WU_NVML_PROCS_MAX];
	unsigned int count = WU_NVML_PROCS_MAX;
	unsigned int self = (unsigned int)getpid();

	(void)n;
	if (!fn || fn(dev, &count, infos) != NVML_SUCCESS)
		return;
	for (unsigned int i = 0; i < count && i < WU_NVML_PROCS_MAX; i++) {
		bool seen = false;
		struct sn_gpu_proc *p;

		if (infos[i].pid == self)
			continue;
		for (unsigned int k = 0; k < h->n_procs &&
		     k < SN_HEALTH_MAX_PROCS; k++)
			seen |= h->procs[k].pid == infos[i].pid;
		if (seen)
			continue;
		if (h->n_procs++ >= SN_HEALTH_MAX_PROCS)
			continue;
		p = &h->procs[h->n_procs - 1];
		p->pid = infos[i].pid;
		p->mib = infos[i].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE ?
			SN_HV_NA : (long long)(infos[i].usedGpuMemory >> 20);
		proc_user(p->pid, p->user, sizeof(p->user));
	}
}

static long long get_uint(nvml_uint_fn fn, nvmlDevice_t dev)
{
	unsigned int v;

	return fn && fn(dev, &v) == NVML_SUCCESS ? (long long)v : SN_HV_NA;
}

static long long get_state(nvml_state_fn fn, nvmlDevice_t dev)
{
	nvmlEnableState_t s;

	return fn && fn(dev, &s) == NVML_SUCCESS ?
		(long long)(s == NVML_FEATURE_ENABLED) : SN_HV_NA;
}

static void read_memory(const struct wu_nvml *n, nvmlDevice_t dev,
			struct sn_gpu_health *h)
{
	unsigned int corr, unc, pending, failure;
	unsigned long long ecc;
	nvmlMemory_t mem;

	if (n->memory && n->memory(dev, &mem) == NVML_SUCCESS) {
		h->mem_used_mib = (long long)(mem.used >> 20);
		h->mem_total_mib = (long long)(mem.total >> 20);
	}
	add_procs(n, n->compute_procs, dev, h);
	add_procs(n, n->graphics_procs, dev, h);
	if (n->remapped_rows && n->remapped_rows(dev, &corr, &unc, &pending,
						 &failure) == NVML_SUCCESS) {
		h->remap_pending = pending != 0;
		h->remap_failure = failure != 0;
	}
	h->retired_pending = get_state(n->retired_pending, dev);
	if (n->ecc && n->ecc(dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
			     NVML_VOLATILE_ECC, &ecc) == NVML_SUCCESS)
		h->ecc_volatile_uncorr = (long long)ecc;
}

static void read_links(const struct wu_nvml *n, nvmlDevice_t dev,
		       struct sn_gpu_health *h)
{
	nvmlComputeMode_t mode;
	unsigned long long reasons;

	h->persistence = get_state(n->persistence, dev);
	if (n->compute_mode && n->compute_mode(dev, &mode) == NVML_SUCCESS)
		h->compute_mode = (long long)mode;
	h->pcie_gen = get_uint(n->pcie_gen, dev);
	h->pcie_gen_max = get_uint(n->pcie_gen_max, dev);
	h->pcie_width = get_uint(n->pcie_width, dev);
	h->pcie_width_max = get_uint(n->pcie_width_max, dev);
	if (n->nvlink_state) {
		/* Links the GPU lacks answer NOT_SUPPORTED or
		 * INVALID_ARGUMENT; a PCIe SKU has none. */
		h->nvlinks = h->nvlinks_active = 0;
		for (unsigned int l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
			nvmlEnableState_t active;

			if (n->nvlink_state(dev, l, &active) != NVML_SUCCESS)
				continue;
			h->nvlinks++;
			h->nvlinks_active += active == NVML_FEATURE_ENABLED;
		}
	}
	if (n->clock_reasons && n->clock_reasons(dev, &reasons) ==
	    NVML_SUCCESS)
		h->clock_reasons = (long long)reasons;
}

static nvmlReturn_t find_gpu(const struct wu_nvml *n,
			     const struct sn_gpu_identity *g,
			     nvmlDevice_t *dev)
{
	nvmlReturn_t rc = n->by_busid(g->busid, dev);

	if (rc != NVML_SUCCESS && n->by_uuid && !g->mig)
		rc = n->by_uuid(g->uuid, dev);
	return rc;
}

static bool all_off(const struct sn_health_policy *p)
{
	for (int c = 0; c < SN_HC_COUNT; c++)
		if (p->level[c] != SN_HL_OFF)
			return false;
	return true;
}

/* One GPU's queries, on a thread of its own (read_all). */
struct gpu_read {
	const struct wu_nvml *n;
	const struct sn_gpu_identity *id;
	struct sn_gpu_health *h;
	nvmlReturn_t rc;
	pthread_t thread;
	bool threaded;
};

static void *read_gpu(void *arg)
{
	struct gpu_read *r = arg;
	nvmlDevice_t dev;

	r->rc = find_gpu(r->n, r->id, &dev);
	if (r->rc != NVML_SUCCESS)
		return NULL;
	r->h->read = true;
	read_memory(r->n, dev, r->h);
	read_links(r->n, dev, r->h);
	return NULL;
}

/*
 * dlopen + nvmlInit_v2 (~20 ms on 4 H200s), started by wu_health_start
 * on a thread of its own before cuInit (0.5-1 s there), so the wait is
 * hidden behind the driver's own start; wu_health_check joins it.
 */
struct wu_nvml_boot {
	struct wu_nvml n;
	bool loaded;
	nvmlReturn_t rc;
	char why_not[160];
	pthread_t thread;
};

static void *nvml_boot(void *arg)
{
	struct wu_nvml_boot *b = arg;

	b->loaded = nvml_load(&b->n, b->why_not, sizeof(b->why_not));
	if (b->loaded)
		b->rc = b->n.init();
	return NULL;
}

/* Fills HS from NVML; false (HS->why_not says why) if NVML is unusable. */
static bool read_all(struct wu_run *run, struct wu_health *hs)
{
	struct gpu_read reads[WU_MAX_GPUS];
	struct wu_nvml n;
	int ordinals[WU_MAX_GPUS];
	nvmlReturn_t rc;

	/* dlopen and nvmlInit_v2: started early, or here (fabric mode). */
	wu_doing(run, "nvmlInit_v2 (" WU_LIBNVML ")");
	if (!run->nvml_boot && wu_health_start(run) != 0) {
		snprintf(hs->why_not, sizeof(hs->why_not),
			 "no memory or thread for loading NVML");
		return false;
	}
	pthread_join(run->nvml_boot->thread, NULL);
	n = run->nvml_boot->n;
	rc = run->nvml_boot->rc;
	snprintf(hs->why_not, sizeof(hs->why_not), "%s",
		 run->nvml_boot->why_not);
	free(run->nvml_boot);
	run->nvml_boot = NULL;
	if (hs->why_not[0])
		return false;
	if (rc != NVML_SUCCESS) {
		snprintf(hs->why_not, sizeof(hs->why_not), "nvmlInit_v2: %s",
			 n.error_string(rc));
		return false;
	}
	wu_doing(run, "NVML health queries");
	/*
	 * A GPU's first queries cost ~8 ms each (PCIe, NVLink, ECC: measured
	 * on 4 H200s, 34 ms one after another); NVML is thread-safe, so
	 * each GPU is read on its own thread: 8 ms for all four.  A thread
	 * that cannot start reads in line.
	 */
	for (size_t i = 0; i < run->n_gpus; i++) {
		struct gpu_read *r = &reads[i];

		sn_gpu_health_unknown(&hs->gpu[i]);
		ordinals[i] = run->gpus[i].index;
		hs->gpu[i].mig = run->gpus[i].mig;
		*r = (struct gpu_read){ .n = &n, .id = &run->gpus[i],
					.h = &hs->gpu[i] };
		r->threaded = i > 0 &&
			pthread_create(&r->thread, NULL, read_gpu, r) == 0;
		if (!r->threaded)
			read_gpu(r);
	}
	for (size_t i = 0; i < run->n_gpus; i++) {
		if (reads[i].threaded)
			pthread_join(reads[i].thread, NULL);
		if (reads[i].rc != NVML_SUCCESS)
			wu_note(run, "NVML does not know GPU %d (%s): %s",
				run->gpus[i].index, run->gpus[i].busid,
				n.error_string(reads[i].rc));
	}
	sn_health_evaluate(&run->opt.health, hs->gpu, ordinals, run->n_gpus,
			   &hs->verdict);
	/*
	 * No nvmlShutdown (9-10 ms on 4 H200s) and no dlclose: NVML stays
	 * initialised until the helper exits, which releases it.  NCCL
	 * initialises NVML itself for its topology; nvmlInit_v2 is
	 * reference-counted, so NCCL's finds it up.  dlclose of driver
	 * libraries is not safe while their threads may run.
	 */
	return true;
}

int wu_health_start(struct wu_run *run)
{
	struct wu_nvml_boot *b;

	if (all_off(&run->opt.health) || run->nvml_boot)
		return 0;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -1;
	if (pthread_create(&b->thread, NULL, nvml_boot, b) != 0) {
		free(b);
		return -1;
	}
	run->nvml_boot = b;
	return 0;
}

int wu_health_check(struct wu_run *run)
{
	/* Filled outside the lock (NVML may block), then copied in. */
	struct wu_health *hs;
	double t0 = sn_clock_ms();
	char text[WU_MESSAGE_MAX - 64];
	int code;

	if (all_off(&run->opt.health))
		return SN_WARMUP_OK;
	hs = calloc(1, sizeof(*hs));
	if (!hs)
		return wu_fail(run, SN_WARMUP_INTERNAL,
			       "out of memory for the GPU health checks");
	hs->checked = read_all(run, hs);
	hs->ms = sn_clock_ms() - t0;
	hs->ran = true;
	pthread_mutex_lock(&run->lock);
	run->health = *hs;
	pthread_mutex_unlock(&run->lock);
	if (!hs->checked)
		wu_note(run, "GPU health not checked: %s", hs->why_not);
	code = hs->verdict.exit_code;
	if (code)
		sn_health_verdict_text(&hs->verdict, SN_HL_FAIL, text,
				       sizeof(text));
	free(hs);
	return code ? wu_fail(run, code, "%s", text) : SN_WARMUP_OK;
}

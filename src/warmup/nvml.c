/* SPDX-License-Identifier: MIT */
/*
 * The GPU health checks' NVML side (issue 24): loads the driver's
 * libnvidia-ml.so.1 at run time (nvml_api.h declares what is used),
 * initialises it and opens every GPU NVML can open, each on a thread of
 * its own, while cuInit runs (wu_health_start); reads them once cuInit is
 * done (wu_health_cuda_ready); then matches the step's GPUs to those
 * readings by UUID, and
 * reads any left over (MIG instances, an NVML without enumeration) by PCI
 * bus ID, else UUID.  Readings are taken before any CUDA context, so the
 * memory in use is other processes', and a GPU held by another job is
 * named before cuDevicePrimaryCtxRetain runs out of memory.  What each
 * reading is: nvml_read.c.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nvml_int.h"

struct nvml_sym {
	const char *name;
	size_t offset;
	bool required;
};

#define NSYM(field, name, req) { name, offsetof(struct wu_nvml, field), req }

static const struct nvml_sym nvml_syms[] = {
	NSYM(init, "nvmlInit_v2", true),
	NSYM(error_string, "nvmlErrorString", true),
	NSYM(count, "nvmlDeviceGetCount_v2", false),
	NSYM(by_index, "nvmlDeviceGetHandleByIndex_v2", false),
	NSYM(uuid, "nvmlDeviceGetUUID", false),
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

/*
 * The boot: dlopen + nvmlInit_v2 (18 ms on 4 H200s), then every GPU NVML
 * enumerates, each on a thread of its own: handle and UUID (the first
 * ~9 ms, the other three ~5 ms more), then, once cuInit is done, the
 * readings (~29 ms for four: the driver serves them mostly one after
 * another).  The driver also serves NVML and cuInit in turn: what NVML
 * does beside cuInit makes cuInit longer.  Init and handles beside it
 * cost less there than after it, the readings did not (7 ms less added
 * in check mode on 4 H200s, median of 20 paired runs; the readings
 * beside cuInit made it 76 ms longer: docs/dev/benchmarks.md, 12-14).
 * Every GPU NVML has, matched to the step's by UUID (only_visible
 * narrows it where CUDA_VISIBLE_DEVICES allows).  The readings of GPUs
 * that are not the step's are never shown, and their processes' users
 * are never looked up.
 */
struct nvml_seen {
	char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	bool named;			/* past the UUID (found or not) */
	bool done;			/* and past the readings */
	bool read;			/* readings in h */
	struct sn_gpu_health h;
	struct wu_nvml_boot *boot;
	unsigned int index;
	pthread_t thread;
};

struct wu_nvml_boot {
	struct wu_nvml n;
	bool loaded;
	nvmlReturn_t rc;
	char why_not[160];
	pthread_t thread;
	/* The enumeration: lock guards named/done/uuid of seen[]. */
	pthread_mutex_t lock;
	pthread_cond_t changed;
	unsigned int n_seen;		/* threads started, seen[0..n_seen) */
	struct nvml_seen seen[WU_MAX_GPUS];
	/* NVML indices to enumerate: all, or CUDA_VISIBLE_DEVICES's. */
	bool only_some;
	bool only[WU_MAX_GPUS];
	bool cuda_ready;		/* cuInit done: read (under lock) */
};

/* Under B's lock: what waiters in seen_wait look at. */
static void seen_named(struct nvml_seen *s, const char *uuid)
{
	pthread_mutex_lock(&s->boot->lock);
	snprintf(s->uuid, sizeof(s->uuid), "%s", uuid);
	s->named = true;
	pthread_cond_broadcast(&s->boot->changed);
	pthread_mutex_unlock(&s->boot->lock);
}

static void seen_done(struct nvml_seen *s)
{
	pthread_mutex_lock(&s->boot->lock);
	s->done = true;
	pthread_cond_broadcast(&s->boot->changed);
	pthread_mutex_unlock(&s->boot->lock);
}

static void *read_index(void *arg)
{
	struct nvml_seen *s = arg;
	const struct wu_nvml *n = &s->boot->n;
	char uuid[sizeof(s->uuid)] = "";
	nvmlDevice_t dev;
	bool found;

	found = n->by_index(s->index, &dev) == NVML_SUCCESS &&
		n->uuid(dev, uuid, sizeof(uuid)) == NVML_SUCCESS;
	seen_named(s, found ? uuid : "");
	pthread_mutex_lock(&s->boot->lock);
	while (found && !s->boot->cuda_ready)
		pthread_cond_wait(&s->boot->changed, &s->boot->lock);
	pthread_mutex_unlock(&s->boot->lock);
	if (found) {
		/* Written before seen_done's unlock, read after its lock. */
		sn_gpu_health_unknown(&s->h);
		wu_nvml_read(n, dev, &s->h);
		s->read = true;
	}
	seen_done(s);
	return NULL;
}

static void enumerate(struct wu_nvml_boot *b)
{
	unsigned int count, started = 0;

	if (!b->n.count || !b->n.by_index || !b->n.uuid ||
	    b->n.count(&count) != NVML_SUCCESS)
		return;
	for (unsigned int i = 0; i < count && i < WU_MAX_GPUS; i++) {
		struct nvml_seen *s = &b->seen[started];

		if (b->only_some && !b->only[i])
			continue;
		s->boot = b;
		s->index = i;
		if (pthread_create(&s->thread, NULL, read_index, s) != 0)
			break;
		started++;
	}
	pthread_mutex_lock(&b->lock);
	b->n_seen = started;
	pthread_mutex_unlock(&b->lock);
}

static void *nvml_boot(void *arg)
{
	struct wu_nvml_boot *b = arg;

	b->loaded = nvml_load(&b->n, b->why_not, sizeof(b->why_not));
	if (b->loaded)
		b->rc = b->n.init();
	if (b->loaded && b->rc == NVML_SUCCESS)
		enumerate(b);
	return NULL;
}

/*
 * The enumerated GPU with UUID, once read; NULL if none has it.  Waits
 * (B->lock held) only while the answer can still change: a GPU with that
 * UUID still reading, or a GPU whose UUID is not yet known.  A GPU that
 * never answers is the watchdog's (the run's deadline).
 */
static struct nvml_seen *seen_wait(struct wu_nvml_boot *b, const char *uuid)
{
	for (;;) {
		bool pending = false;

		for (unsigned int i = 0; i < b->n_seen; i++) {
			struct nvml_seen *s = &b->seen[i];

			if (!s->named) {
				pending = true;
				continue;
			}
			if (s->uuid[0] && strcasecmp(s->uuid, uuid) == 0) {
				if (s->done)
					return s->read ? s : NULL;
				pending = true;
				break;
			}
		}
		if (!pending)
			return NULL;
		pthread_cond_wait(&b->changed, &b->lock);
	}
}

/* A step GPU NVML's enumeration did not give, read on its own thread. */
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
	if (r->rc == NVML_SUCCESS)
		wu_nvml_read(r->n, dev, r->h);
	return NULL;
}

/*
 * Frees B once every enumeration thread is done; false if one is still in
 * the driver (a GPU that is not the step's may be slow to answer): then B
 * stays for the process's exit, which comes soon.
 */
static bool boot_release(struct wu_nvml_boot *b)
{
	bool all = true;

	pthread_mutex_lock(&b->lock);
	for (unsigned int i = 0; i < b->n_seen; i++)
		all &= b->seen[i].done;
	pthread_mutex_unlock(&b->lock);
	if (!all)
		return false;
	for (unsigned int i = 0; i < b->n_seen; i++)
		pthread_join(b->seen[i].thread, NULL);
	pthread_cond_destroy(&b->changed);
	pthread_mutex_destroy(&b->lock);
	free(b);
	return true;
}

/* The step's GPUs from the enumeration, by UUID (a MIG instance's is
 * not its GPU's); the rest by bus ID or UUID, one thread each. */
static void read_step_gpus(struct wu_run *run, struct wu_nvml_boot *b,
			   struct wu_health *hs)
{
	struct gpu_read reads[WU_MAX_GPUS];
	size_t n_left = 0;

	pthread_mutex_lock(&b->lock);
	for (size_t i = 0; i < run->n_gpus; i++) {
		const struct sn_gpu_identity *g = &run->gpus[i];
		struct nvml_seen *s = g->mig ? NULL : seen_wait(b, g->uuid);

		sn_gpu_health_unknown(&hs->gpu[i]);
		if (s)
			hs->gpu[i] = s->h;
		hs->gpu[i].mig = g->mig;
		if (!s)
			reads[n_left++] = (struct gpu_read){ .n = &b->n,
				.id = g, .h = &hs->gpu[i] };
	}
	pthread_mutex_unlock(&b->lock);
	for (size_t i = 0; i < n_left; i++) {
		reads[i].threaded = i > 0 && pthread_create(&reads[i].thread,
							    NULL, read_gpu,
							    &reads[i]) == 0;
		if (!reads[i].threaded)
			read_gpu(&reads[i]);
	}
	for (size_t i = 0; i < n_left; i++) {
		if (reads[i].threaded)
			pthread_join(reads[i].thread, NULL);
		if (reads[i].rc != NVML_SUCCESS)
			wu_note(run, "NVML does not know GPU %d (%s): %s",
				reads[i].id->index, reads[i].id->busid,
				b->n.error_string(reads[i].rc));
	}
	for (size_t i = 0; i < run->n_gpus; i++)
		if (hs->gpu[i].read)
			wu_nvml_name_holders(&hs->gpu[i]);
}

/* Fills HS from NVML; false (HS->why_not says why) if NVML is unusable. */
static bool read_all(struct wu_run *run, struct wu_health *hs)
{
	struct wu_nvml_boot *b;
	int ordinals[WU_MAX_GPUS];

	/* Started beside cuInit (run_all), or here. */
	wu_doing(run, "nvmlInit_v2 (" WU_LIBNVML ")");
	if (wu_health_cuda_ready(run) != 0) {
		snprintf(hs->why_not, sizeof(hs->why_not),
			 "no memory or thread for loading NVML");
		return false;
	}
	b = run->nvml_boot;
	pthread_join(b->thread, NULL);
	snprintf(hs->why_not, sizeof(hs->why_not), "%s", b->why_not);
	if (!hs->why_not[0] && b->rc != NVML_SUCCESS)
		snprintf(hs->why_not, sizeof(hs->why_not), "nvmlInit_v2: %s",
			 b->n.error_string(b->rc));
	if (hs->why_not[0]) {
		if (boot_release(b))
			run->nvml_boot = NULL;
		return false;
	}
	wu_doing(run, "NVML health queries");
	read_step_gpus(run, b, hs);
	for (size_t i = 0; i < run->n_gpus; i++)
		ordinals[i] = run->gpus[i].index;
	sn_health_evaluate(&run->opt.health, hs->gpu, ordinals, run->n_gpus,
			   &hs->verdict);
	/*
	 * No nvmlShutdown (9-10 ms on 4 H200s) and no dlclose: NVML stays
	 * initialised until the helper exits, which releases it.  NCCL
	 * initialises NVML itself for its topology; nvmlInit_v2 is
	 * reference-counted, so NCCL's finds it up.  dlclose of driver
	 * libraries is not safe while their threads may run.
	 */
	if (boot_release(b))
		run->nvml_boot = NULL;
	return true;
}

/*
 * The step's GPUs before cuInit knows them: CUDA_VISIBLE_DEVICES of
 * plain indices (a step of some of the node's GPUs without device
 * cgroups) names NVML's indices too when CUDA orders the GPUs by PCI bus
 * ID, as it does for GPUs of one model (NVML always does).  Then only
 * those are enumerated: a 1-GPU step on a 4-GPU node read all four (66 ms
 * added on 4 H200s, docs/dev/benchmarks.md, 12).  A wrong guess costs
 * nothing but time: a step GPU not enumerated is read by bus ID after
 * cuInit (read_step_gpus).  UUIDs, MIG or anything else: every GPU.
 */
static void only_visible(struct wu_nvml_boot *b)
{
	const char *p = getenv("CUDA_VISIBLE_DEVICES");

	if (!p)
		return;
	memset(b->only, 0, sizeof(b->only));
	while (*p) {
		char *end;
		unsigned long i;

		while (*p == ' ')
			p++;
		if (*p < '0' || *p > '9')
			return;
		i = strtoul(p, &end, 10);
		while (*end == ' ')
			end++;
		if (i >= WU_MAX_GPUS || (*end && *end != ','))
			return;
		b->only[i] = true;
		p = *end ? end + 1 : end;
	}
	b->only_some = true;
}

static int health_start(struct wu_run *run, bool cuda_ready)
{
	struct wu_nvml_boot *b;

	if (all_off(&run->opt.health) || run->nvml_boot)
		return 0;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -1;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->changed, NULL);
	only_visible(b);
	b->cuda_ready = cuda_ready;
	if (pthread_create(&b->thread, NULL, nvml_boot, b) != 0) {
		pthread_cond_destroy(&b->changed);
		pthread_mutex_destroy(&b->lock);
		free(b);
		return -1;
	}
	run->nvml_boot = b;
	return 0;
}

int wu_health_start(struct wu_run *run)
{
	return health_start(run, false);
}

int wu_health_cuda_ready(struct wu_run *run)
{
	struct wu_nvml_boot *b = run->nvml_boot;

	if (!b)
		return health_start(run, true);
	pthread_mutex_lock(&b->lock);
	b->cuda_ready = true;
	pthread_cond_broadcast(&b->changed);
	pthread_mutex_unlock(&b->lock);
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

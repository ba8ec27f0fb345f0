/* SPDX-License-Identifier: MIT */
/*
 * One GPU's NVML readings for the health checks (src/core/gpu/health.c
 * judges them): memory in use and its processes, row remapping, retired
 * pages, volatile ECC, persistence and compute mode, PCIe link, NVLinks,
 * clock-event reasons.  No value read here needs root.
 */
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nvml_int.h"

#define WU_NVML_PROCS_MAX 64

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

static void add_procs(nvml_procs_fn fn, nvmlDevice_t dev,
		      struct sn_gpu_health *h)
{
	nvmlProcessInfo_t infos[WU_NVML_PROCS_MAX];
	unsigned int count = WU_NVML_PROCS_MAX;
	unsigned int self = (unsigned int)getpid();

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
	add_procs(n->compute_procs, dev, h);
	add_procs(n->graphics_procs, dev, h);
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

void wu_nvml_read(const struct wu_nvml *n, nvmlDevice_t dev,
		  struct sn_gpu_health *h)
{
	h->read = true;
	read_memory(n, dev, h);
	read_links(n, dev, h);
}

void wu_nvml_name_holders(struct sn_gpu_health *h)
{
	for (unsigned int k = 0; k < h->n_procs && k < SN_HEALTH_MAX_PROCS; k++)
		proc_user(h->procs[k].pid, h->procs[k].user,
			  sizeof(h->procs[k].user));
}

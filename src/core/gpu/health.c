/* SPDX-License-Identifier: MIT */
/*
 * The GPU health verdict: each check's rule over what NVML read
 * (health.h).  A value NVML did not give skips its check: a GPU model
 * without row remapping (pre-Ampere) or without NVLink (PCIe SKUs) is
 * not a fault.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpu/health.h"
#include "protocol/helper_protocol.h"

void sn_gpu_health_unknown(struct sn_gpu_health *h)
{
	memset(h, 0, sizeof(*h));
	h->mem_used_mib = h->mem_total_mib = SN_HV_NA;
	h->remap_pending = h->remap_failure = SN_HV_NA;
	h->retired_pending = SN_HV_NA;
	h->ecc_volatile_uncorr = SN_HV_NA;
	h->persistence = SN_HV_NA;
	h->compute_mode = SN_HV_NA;
	h->pcie_gen = h->pcie_gen_max = SN_HV_NA;
	h->pcie_width = h->pcie_width_max = SN_HV_NA;
	h->nvlinks = h->nvlinks_active = SN_HV_NA;
	h->clock_reasons = SN_HV_NA;
}

static void add(const struct sn_health_policy *policy,
		struct sn_health_verdict *v, enum sn_health_check c, int gpu,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void add(const struct sn_health_policy *policy,
		struct sn_health_verdict *v, enum sn_health_check c, int gpu,
		const char *fmt, ...)
{
	struct sn_health_finding *f;
	va_list ap;

	if (policy->level[c] == SN_HL_OFF)
		return;
	if (v->n == SN_HEALTH_MAX_FINDINGS) {
		v->dropped++;
	} else {
		f = &v->f[v->n++];
		f->check = c;
		f->level = policy->level[c];
		f->gpu = gpu;
		va_start(ap, fmt);
		vsnprintf(f->detail, sizeof(f->detail), fmt, ap);
		va_end(ap);
	}
	if (policy->level[c] != SN_HL_FAIL)
		return;
	if (c != SN_HC_BUSY)
		v->exit_code = SN_WARMUP_GPU_HEALTH;
	else if (v->exit_code == 0)
		v->exit_code = SN_WARMUP_GPU_BUSY;
}

static void note(struct sn_health_verdict *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void note(struct sn_health_verdict *v, const char *fmt, ...)
{
	size_t o = strlen(v->notes);
	va_list ap;

	if (o + 2 >= sizeof(v->notes))
		return;
	if (o)
		o += (size_t)snprintf(v->notes + o, sizeof(v->notes) - o, "; ");
	va_start(ap, fmt);
	vsnprintf(v->notes + o, sizeof(v->notes) - o, fmt, ap);
	va_end(ap);
}

/* "pid 4242 (alice) 70000 MiB, pid 17 ..." */
static void list_procs(const struct sn_gpu_health *h, char *out, size_t len)
{
	size_t o = 0;
	unsigned int shown = h->n_procs < SN_HEALTH_MAX_PROCS ?
		h->n_procs : SN_HEALTH_MAX_PROCS;

	out[0] = '\0';
	for (unsigned int i = 0; i < shown && o < len; i++) {
		const struct sn_gpu_proc *p = &h->procs[i];
		char mib[32] = "? MiB";

		if (p->mib != SN_HV_NA)
			snprintf(mib, sizeof(mib), "%lld MiB", p->mib);
		o += (size_t)snprintf(out + o, len - o, "%spid %u (%s) %s",
				      i ? ", " : "", p->pid,
				      p->user[0] ? p->user : "user unknown",
				      mib);
	}
	if (shown < h->n_procs && o < len)
		snprintf(out + o, len - o, " and %u more",
			 h->n_procs - shown);
}

/* MiB held by other processes; the used memory when they do not say. */
static long long held_mib(const struct sn_gpu_health *h)
{
	long long sum = 0;

	for (unsigned int i = 0; i < h->n_procs && i < SN_HEALTH_MAX_PROCS;
	     i++) {
		if (h->procs[i].mib == SN_HV_NA)
			return h->mem_used_mib;
		sum += h->procs[i].mib;
	}
	return sum;
}

static void check_busy(const struct sn_health_policy *policy,
		       const struct sn_gpu_health *h, int gpu,
		       struct sn_health_verdict *v)
{
	char procs[160];
	long long held;

	if (h->n_procs == 0 || h->mig)
		return;
	held = held_mib(h);
	list_procs(h, procs, sizeof(procs));
	if (held != SN_HV_NA && (unsigned long long)held <= policy->busy_mib) {
		note(v, "GPU %d in use by %s (at most health_busy_mib=%llu)",
		     gpu, procs, policy->busy_mib);
		return;
	}
	add(policy, v, SN_HC_BUSY, gpu,
	    "held by another process: %s (above health_busy_mib=%llu)",
	    procs, policy->busy_mib);
}

static void check_memory(const struct sn_health_policy *policy,
			 const struct sn_gpu_health *h, int gpu,
			 struct sn_health_verdict *v)
{
	if (h->remap_failure > 0)
		add(policy, v, SN_HC_ROW_REMAP, gpu,
		    "row remapping failed (no spare rows left): the GPU needs service");
	else if (h->remap_pending > 0)
		add(policy, v, SN_HC_ROW_REMAP, gpu,
		    "row remap pending: reset the GPU (nvidia-smi -r) to apply it");
	if (h->retired_pending > 0)
		add(policy, v, SN_HC_RETIRED_PAGES, gpu,
		    "retired pages pending: reset the GPU (nvidia-smi -r) to retire them");
	if (h->ecc_volatile_uncorr > 0)
		add(policy, v, SN_HC_ECC, gpu,
		    "%lld volatile uncorrectable ECC error%s since the driver loaded",
		    h->ecc_volatile_uncorr,
		    h->ecc_volatile_uncorr == 1 ? "" : "s");
}

static void check_modes(const struct sn_health_policy *policy,
			const struct sn_gpu_health *h, int gpu,
			struct sn_health_verdict *v)
{
	if (h->persistence == 0)
		add(policy, v, SN_HC_PERSISTENCE, gpu,
		    "persistence mode off: every job pays the driver's init (nvidia-smi -pm 1, or nvidia-persistenced)");
	if (h->compute_mode == SN_COMPUTE_PROHIBITED)
		add(policy, v, SN_HC_COMPUTE_MODE, gpu,
		    "compute mode Prohibited: no process can create a context (nvidia-smi -c DEFAULT)");
	else if ((h->compute_mode == SN_COMPUTE_EXCLUSIVE_PROCESS ||
		  h->compute_mode == SN_COMPUTE_EXCLUSIVE_THREAD) &&
		 h->n_procs > 0)
		add(policy, v, SN_HC_COMPUTE_MODE, gpu,
		    "compute mode Exclusive_Process and another process (pid %u) holds the GPU: the job cannot create its context",
		    h->procs[0].pid);
}

/*
 * NVML's max link generation/width is the most the GPU and its slot
 * allow together.  An idle GPU lowers its link generation to save power
 * (NVIDIA: read the current generation under load), so a lower
 * generation while the Idle clock reason is set is a note; a narrower
 * link is not power saving, and is a fault either way.
 */
static void check_pcie(const struct sn_health_policy *policy,
		       const struct sn_gpu_health *h, int gpu,
		       struct sn_health_verdict *v)
{
	bool idle = h->clock_reasons != SN_HV_NA &&
		(h->clock_reasons & (long long)SN_CLOCK_IDLE);

	if (h->pcie_width != SN_HV_NA && h->pcie_width_max != SN_HV_NA &&
	    h->pcie_width < h->pcie_width_max) {
		add(policy, v, SN_HC_PCIE, gpu,
		    "PCIe link x%lld, below its x%lld: reseat the GPU or check the riser/slot",
		    h->pcie_width, h->pcie_width_max);
		return;
	}
	if (h->pcie_gen == SN_HV_NA || h->pcie_gen_max == SN_HV_NA ||
	    h->pcie_gen >= h->pcie_gen_max)
		return;
	if (idle)
		note(v, "GPU %d PCIe gen %lld of %lld while idle (power saving)",
		     gpu, h->pcie_gen, h->pcie_gen_max);
	else
		add(policy, v, SN_HC_PCIE, gpu,
		    "PCIe link gen %lld, below its gen %lld while not idle: check the slot and BIOS link speed",
		    h->pcie_gen, h->pcie_gen_max);
}

static void check_links_clocks(const struct sn_health_policy *policy,
			       const struct sn_gpu_health *h, int gpu,
			       struct sn_health_verdict *v)
{
	long long r = h->clock_reasons;

	/* nvlinks 0: a PCIe SKU (or VM) without NVLink, by design. */
	if (h->nvlinks > 0 && h->nvlinks_active != SN_HV_NA &&
	    h->nvlinks_active < h->nvlinks)
		add(policy, v, SN_HC_NVLINK, gpu,
		    "%lld of its %lld NVLink links inactive (nvidia-smi nvlink -s)",
		    h->nvlinks - h->nvlinks_active, h->nvlinks);
	if (r == SN_HV_NA || !(r & (long long)SN_CLOCK_BAD))
		return;
	add(policy, v, SN_HC_CLOCKS, gpu, "clocks slowed down:%s%s%s%s",
	    r & (long long)SN_CLOCK_HW_SLOWDOWN ? " HW slowdown" : "",
	    r & (long long)SN_CLOCK_HW_THERMAL ? " HW thermal" : "",
	    r & (long long)SN_CLOCK_HW_POWER_BRAKE ? " HW power brake" : "",
	    r & (long long)SN_CLOCK_SW_THERMAL ? " SW thermal" : "");
}

void sn_health_evaluate(const struct sn_health_policy *policy,
			const struct sn_gpu_health *h, const int *ordinals,
			size_t n, struct sn_health_verdict *v)
{
	memset(v, 0, sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		if (!h[i].read)
			continue;
		if (policy->level[SN_HC_BUSY] != SN_HL_OFF)
			check_busy(policy, &h[i], ordinals[i], v);
		check_memory(policy, &h[i], ordinals[i], v);
		check_modes(policy, &h[i], ordinals[i], v);
		check_pcie(policy, &h[i], ordinals[i], v);
		check_links_clocks(policy, &h[i], ordinals[i], v);
	}
}

void sn_health_verdict_text(const struct sn_health_verdict *v,
			    enum sn_health_level level, char *out,
			    size_t len)
{
	size_t o = 0;

	if (len)
		out[0] = '\0';
	for (size_t i = 0; i < v->n && o < len; i++) {
		const struct sn_health_finding *f = &v->f[i];
		int k;

		if (f->level != level)
			continue;
		k = snprintf(out + o, len - o, "%sGPU %d %s: %s",
			     o ? "; " : "", f->gpu,
			     sn_health_check_name(f->check), f->detail);
		if (k < 0)
			break;
		o += (size_t)k;
	}
	if (v->dropped && o < len)
		snprintf(out + o, len - o, " (and %zu more)", v->dropped);
}

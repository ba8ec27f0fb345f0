/* SPDX-License-Identifier: MIT */
/*
 * The GPU health checks of nccl-warmup (issue 24): what NVML says about
 * each of the step's GPUs before the job's first CUDA context, and the
 * verdict.  Pure logic: src/warmup/nvml.c reads the values into struct
 * sn_gpu_health, sn_health_evaluate() decides.  The policy (one per
 * check: fail, warn or off) is plugstack.conf's health= and
 * health_busy_mib=, passed to the helper as --health and
 * --health-busy-mib, parsed by the same functions on both sides.
 */
#ifndef SN_HEALTH_H
#define SN_HEALTH_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "protocol/helper_protocol.h"

enum sn_health_check {
	SN_HC_BUSY,		/* memory held by other processes */
	SN_HC_ROW_REMAP,	/* row remap pending or failed */
	SN_HC_RETIRED_PAGES,	/* page retirement pending */
	SN_HC_ECC,		/* volatile uncorrectable ECC errors */
	SN_HC_PERSISTENCE,	/* persistence mode off */
	SN_HC_COMPUTE_MODE,	/* prohibited, or exclusive and taken */
	SN_HC_PCIE,		/* link below its maximum (not idle downshift) */
	SN_HC_NVLINK,		/* NVLink links of the GPU inactive */
	SN_HC_CLOCKS,		/* HW slowdown, thermal, power brake */
	SN_HC_COUNT,
};

enum sn_health_level { SN_HL_OFF, SN_HL_WARN, SN_HL_FAIL };

struct sn_health_policy {
	enum sn_health_level level[SN_HC_COUNT];
	unsigned long long busy_mib;	/* held above this fails "busy" */
};

#define SN_HEALTH_BUSY_MIB_DEFAULT 1024	/* a plain literal: config.c writes it out */
#define SN_HEALTH_BUSY_MIB_MAX (1ULL << 24)	/* 16 TiB: a typo above */
#define SN_HEALTH_SPEC_MAX 256			/* canonical spec text */
/*
 * The summary line's clause for checks that warn: spank_nccl.so prints a
 * passing warmup's summary, verbose or not, when it holds this.
 */
#define SN_HEALTH_WARNING_CLAUSE ", health" SN_SUMMARY_WARNING

const char *sn_health_check_name(enum sn_health_check c);
const char *sn_health_level_name(enum sn_health_level l);
void sn_health_policy_defaults(struct sn_health_policy *p);
/*
 * "default|fail|warn|off" (every check) and/or CHECK:LEVEL items, comma
 * separated, applied left to right onto P's current levels: e.g.
 * "warn,busy:fail,pcie:off".  0, or -1 with ERR saying what was wrong
 * (P unchanged).
 */
int sn_health_policy_parse(const char *spec, struct sn_health_policy *p,
			   struct sn_error *err);
/* Every check as CHECK:LEVEL (parsable back), into OUT. */
void sn_health_policy_format(const struct sn_health_policy *p, char *out,
			     size_t len);
/* Whole MiB, 0 to SN_HEALTH_BUSY_MIB_MAX. */
int sn_health_parse_busy_mib(const char *value, unsigned long long *out);

/* A value NVML did not give (NOT_SUPPORTED, N/A): the check is skipped. */
#define SN_HV_NA (-1LL)
#define SN_HEALTH_MAX_PROCS 8

/* Clock event reasons (nvml.h nvmlClocksEventReason*). */
#define SN_CLOCK_IDLE 0x1ULL
#define SN_CLOCK_SW_THERMAL 0x20ULL
#define SN_CLOCK_HW_SLOWDOWN 0x8ULL
#define SN_CLOCK_HW_THERMAL 0x40ULL
#define SN_CLOCK_HW_POWER_BRAKE 0x80ULL
#define SN_CLOCK_BAD (SN_CLOCK_HW_SLOWDOWN | SN_CLOCK_HW_THERMAL | \
		      SN_CLOCK_HW_POWER_BRAKE | SN_CLOCK_SW_THERMAL)

/* nvmlComputeMode_t */
#define SN_COMPUTE_DEFAULT 0
#define SN_COMPUTE_EXCLUSIVE_THREAD 1
#define SN_COMPUTE_PROHIBITED 2
#define SN_COMPUTE_EXCLUSIVE_PROCESS 3

struct sn_gpu_proc {
	unsigned int pid;
	long long mib;			/* SN_HV_NA if NVML does not say */
	char user[33];			/* "" if not visible (other pid ns) */
};

/* What NVML says about one GPU; every number SN_HV_NA when unknown. */
struct sn_gpu_health {
	bool read;			/* NVML found this GPU */
	bool mig;			/* a MIG instance: busy check skipped */
	long long mem_used_mib, mem_total_mib;
	unsigned int n_procs;		/* all of them (procs[] holds the first) */
	struct sn_gpu_proc procs[SN_HEALTH_MAX_PROCS];
	long long remap_pending, remap_failure;
	long long retired_pending;
	long long ecc_volatile_uncorr;
	long long persistence;		/* 1 enabled, 0 disabled */
	long long compute_mode;
	long long pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
	long long nvlinks, nvlinks_active;	/* links the GPU has */
	long long clock_reasons;	/* bitmask */
};

void sn_gpu_health_unknown(struct sn_gpu_health *h);

struct sn_health_finding {
	enum sn_health_check check;
	enum sn_health_level level;	/* WARN or FAIL */
	int gpu;			/* CUDA ordinal */
	char detail[200];
};

#define SN_HEALTH_MAX_FINDINGS 32

struct sn_health_verdict {
	size_t n;
	struct sn_health_finding f[SN_HEALTH_MAX_FINDINGS];
	size_t dropped;			/* findings past the array */
	/* The helper exit code: 0, SN_WARMUP_GPU_BUSY or _GPU_HEALTH. */
	int exit_code;
	/* Not faults, said in the summary: "GPU 0: PCIe gen 1/5 (idle)". */
	char notes[256];
};

/*
 * Applies POLICY to the N GPUS (H[i] is CUDA ordinal ORDINALS[i]).  A
 * failing busy check alone gives SN_WARMUP_GPU_BUSY; any other failing
 * check SN_WARMUP_GPU_HEALTH (it wins: it is the node's fault).
 */
void sn_health_evaluate(const struct sn_health_policy *policy,
			const struct sn_gpu_health *h, const int *ordinals,
			size_t n, struct sn_health_verdict *v);
/* "GPU 0 busy: ...; GPU 1 ecc: ..." (failures first), into OUT. */
void sn_health_verdict_text(const struct sn_health_verdict *v,
			    enum sn_health_level level, char *out,
			    size_t len);

#endif

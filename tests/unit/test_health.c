/* SPDX-License-Identifier: MIT */
/*
 * The GPU health checks' policy parsing and verdict (src/core/gpu/health*.c):
 * each check with a reading that passes and one that fails, policies
 * fail/warn/off, the busy threshold, and plugstack.conf's keys.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "config.h"
#include "health.h"
#include "helper_protocol.h"

/* A healthy idle H200 as measured: gen 5/5 x16/x16, 18 links, idle. */
static void healthy(struct sn_gpu_health *h)
{
	sn_gpu_health_unknown(h);
	h->read = true;
	h->mem_used_mib = 618;
	h->mem_total_mib = 143771;
	h->remap_pending = h->remap_failure = 0;
	h->ecc_volatile_uncorr = 0;
	h->persistence = 1;
	h->compute_mode = SN_COMPUTE_DEFAULT;
	h->pcie_gen = h->pcie_gen_max = 5;
	h->pcie_width = h->pcie_width_max = 16;
	h->nvlinks = h->nvlinks_active = 18;
	h->clock_reasons = (long long)SN_CLOCK_IDLE;
}

static struct sn_health_verdict verdict_of(const struct sn_gpu_health *h,
					   const char *spec)
{
	struct sn_health_policy p;
	struct sn_health_verdict v;
	struct sn_error err;
	int ord = 3;

	sn_health_policy_defaults(&p);
	if (spec)
		assert_int_equal(sn_health_policy_parse(spec, &p, &err), 0);
	sn_health_evaluate(&p, h, &ord, 1, &v);
	return v;
}

/* H fails check C (exit CODE) under "C:fail", warns under "C:warn",
 * says nothing under "C:off", and passes once FIX is applied. */
static void want_check(struct sn_gpu_health *h, enum sn_health_check c,
			 int code, const char *words)
{
	char spec[64];
	struct sn_health_verdict v;

	snprintf(spec, sizeof(spec), "%s:fail", sn_health_check_name(c));
	v = verdict_of(h, spec);
	assert_int_equal(v.exit_code, code);
	assert_int_equal(v.n, 1);
	assert_int_equal(v.f[0].check, c);
	assert_int_equal(v.f[0].gpu, 3);
	assert_non_null(strstr(v.f[0].detail, words));
	snprintf(spec, sizeof(spec), "%s:warn", sn_health_check_name(c));
	v = verdict_of(h, spec);
	assert_int_equal(v.exit_code, 0);
	assert_int_equal(v.n, 1);
	assert_int_equal(v.f[0].level, SN_HL_WARN);
	snprintf(spec, sizeof(spec), "%s:off", sn_health_check_name(c));
	v = verdict_of(h, spec);
	assert_int_equal(v.exit_code, 0);
	assert_int_equal(v.n, 0);
}

static void test_healthy_passes(void **state)
{
	struct sn_gpu_health h;
	struct sn_health_verdict v;

	(void)state;
	healthy(&h);
	v = verdict_of(&h, "fail");
	assert_int_equal(v.exit_code, 0);
	assert_int_equal(v.n, 0);
	assert_string_equal(v.notes, "");
}

static void test_busy(void **state)
{
	struct sn_gpu_health h;
	struct sn_health_verdict v;

	(void)state;
	healthy(&h);
	h.n_procs = 1;
	h.procs[0] = (struct sn_gpu_proc){ .pid = 628, .mib = 142848 };
	strcpy(h.procs[0].user, "alice");
	want_check(&h, SN_HC_BUSY, SN_WARMUP_GPU_BUSY,
		     "pid 628 (alice) 142848 MiB");
	/* At or below the threshold: a note, not a finding. */
	h.procs[0].mib = 1024;
	v = verdict_of(&h, NULL);
	assert_int_equal(v.exit_code, 0);
	assert_int_equal(v.n, 0);
	assert_non_null(strstr(v.notes, "GPU 3 in use by pid 628 (alice)"));
	/* Memory not reported (another user's): the GPU's used memory. */
	h.procs[0].mib = SN_HV_NA;
	h.procs[0].user[0] = '\0';
	h.mem_used_mib = 9000;
	v = verdict_of(&h, NULL);
	assert_int_equal(v.exit_code, SN_WARMUP_GPU_BUSY);
	assert_non_null(strstr(v.f[0].detail, "pid 628 (user unknown) ? MiB"));
	/* MIG instances share the parent's processes: not checked. */
	h.mig = true;
	v = verdict_of(&h, NULL);
	assert_int_equal(v.exit_code, 0);
}

static void test_memory_faults(void **state)
{
	struct sn_gpu_health h;

	(void)state;
	healthy(&h);
	h.remap_pending = 1;
	want_check(&h, SN_HC_ROW_REMAP, SN_WARMUP_GPU_HEALTH, "row remap pending");
	healthy(&h);
	h.remap_failure = 1;
	want_check(&h, SN_HC_ROW_REMAP, SN_WARMUP_GPU_HEALTH, "row remapping failed");
	healthy(&h);
	h.retired_pending = 1;
	want_check(&h, SN_HC_RETIRED_PAGES, SN_WARMUP_GPU_HEALTH, "retired pages pending");
	healthy(&h);
	h.ecc_volatile_uncorr = 2;
	want_check(&h, SN_HC_ECC, SN_WARMUP_GPU_HEALTH, "2 volatile uncorrectable ECC errors");
}

static void test_modes(void **state)
{
	struct sn_gpu_health h;
	struct sn_health_verdict v;

	(void)state;
	healthy(&h);
	h.persistence = 0;
	want_check(&h, SN_HC_PERSISTENCE, SN_WARMUP_GPU_HEALTH, "persistence mode off");
	healthy(&h);
	h.compute_mode = SN_COMPUTE_PROHIBITED;
	want_check(&h, SN_HC_COMPUTE_MODE, SN_WARMUP_GPU_HEALTH, "Prohibited");
	/* Exclusive-process alone is fine; with a process it is not. */
	healthy(&h);
	h.compute_mode = SN_COMPUTE_EXCLUSIVE_PROCESS;
	v = verdict_of(&h, "fail");
	assert_int_equal(v.n, 0);
	h.n_procs = 1;
	h.procs[0] = (struct sn_gpu_proc){ .pid = 77, .mib = 10 };
	want_check(&h, SN_HC_COMPUTE_MODE, SN_WARMUP_GPU_HEALTH, "pid 77");
}

static void test_pcie(void **state)
{
	struct sn_gpu_health h;
	struct sn_health_verdict v;

	(void)state;
	healthy(&h);
	h.pcie_width = 8;
	want_check(&h, SN_HC_PCIE, SN_WARMUP_GPU_HEALTH, "x8, below its x16");
	/* A narrower link is a fault even when idle (width is no power saving). */
	assert_true(h.clock_reasons & (long long)SN_CLOCK_IDLE);
	/* Lower generation while idle: power saving, a note only. */
	healthy(&h);
	h.pcie_gen = 1;
	v = verdict_of(&h, "fail");
	assert_int_equal(v.n, 0);
	assert_non_null(strstr(v.notes, "PCIe gen 1 of 5 while idle"));
	/* The same while not idle: downtrained. */
	h.clock_reasons = 0;
	want_check(&h, SN_HC_PCIE, SN_WARMUP_GPU_HEALTH, "gen 1, below its gen 5");
	/* Slot max below the GPU's: NVML's max is the pair's, so equal passes. */
	healthy(&h);
	h.pcie_gen = h.pcie_gen_max = 4;
	h.clock_reasons = 0;
	assert_int_equal(verdict_of(&h, "fail").n, 0);
}

static void test_nvlink_and_clocks(void **state)
{
	struct sn_gpu_health h;

	(void)state;
	healthy(&h);
	h.nvlinks_active = 16;
	want_check(&h, SN_HC_NVLINK, SN_WARMUP_GPU_HEALTH, "2 of its 18 NVLink links inactive");
	/* A PCIe SKU without NVLink (no link answers): not a fault. */
	healthy(&h);
	h.nvlinks = h.nvlinks_active = 0;
	assert_int_equal(verdict_of(&h, "fail").n, 0);
	h.nvlinks = h.nvlinks_active = SN_HV_NA;
	assert_int_equal(verdict_of(&h, "fail").n, 0);

	healthy(&h);
	h.clock_reasons = (long long)(SN_CLOCK_HW_SLOWDOWN | SN_CLOCK_IDLE);
	want_check(&h, SN_HC_CLOCKS, SN_WARMUP_GPU_HEALTH, "HW slowdown");
	h.clock_reasons = (long long)SN_CLOCK_HW_POWER_BRAKE;
	want_check(&h, SN_HC_CLOCKS, SN_WARMUP_GPU_HEALTH, "HW power brake");
	h.clock_reasons = (long long)SN_CLOCK_HW_THERMAL;
	want_check(&h, SN_HC_CLOCKS, SN_WARMUP_GPU_HEALTH, "HW thermal");
	/* SW power cap (0x4) and app clocks (0x2) are not faults. */
	h.clock_reasons = 0x6;
	assert_int_equal(verdict_of(&h, "fail").n, 0);
}

static void test_unknown_values_skip(void **state)
{
	struct sn_gpu_health h;

	(void)state;
	sn_gpu_health_unknown(&h);
	h.read = true;
	assert_int_equal(verdict_of(&h, "fail").n, 0);
	/* A GPU NVML did not find is not judged at all. */
	healthy(&h);
	h.read = false;
	h.ecc_volatile_uncorr = 5;
	assert_int_equal(verdict_of(&h, "fail").n, 0);
}

static void test_health_beats_busy(void **state)
{
	struct sn_gpu_health h[2];
	struct sn_health_policy p;
	struct sn_health_verdict v;
	int ord[2] = { 0, 1 };
	char text[512];

	(void)state;
	healthy(&h[0]);
	healthy(&h[1]);
	h[0].n_procs = 1;
	h[0].procs[0] = (struct sn_gpu_proc){ .pid = 5, .mib = 5000 };
	h[1].ecc_volatile_uncorr = 1;
	h[1].persistence = 0;
	sn_health_policy_defaults(&p);
	sn_health_evaluate(&p, h, ord, 2, &v);
	assert_int_equal(v.exit_code, SN_WARMUP_GPU_HEALTH);
	sn_health_verdict_text(&v, SN_HL_FAIL, text, sizeof(text));
	assert_non_null(strstr(text, "GPU 0 busy: "));
	assert_non_null(strstr(text, "; GPU 1 ecc: 1 volatile"));
	assert_null(strstr(text, "persistence"));
	sn_health_verdict_text(&v, SN_HL_WARN, text, sizeof(text));
	assert_non_null(strstr(text, "GPU 1 persistence: "));
}

static void test_policy_parse(void **state)
{
	struct sn_health_policy p;
	struct sn_error err;
	char text[SN_HEALTH_SPEC_MAX];

	(void)state;
	sn_health_policy_defaults(&p);
	assert_int_equal(p.level[SN_HC_BUSY], SN_HL_FAIL);
	assert_int_equal(p.level[SN_HC_PCIE], SN_HL_WARN);
	assert_int_equal(p.busy_mib, SN_HEALTH_BUSY_MIB_DEFAULT);
	assert_int_equal(sn_health_policy_parse("warn,busy:fail,PCIE:off", &p, &err), 0);
	assert_int_equal(p.level[SN_HC_ECC], SN_HL_WARN);
	assert_int_equal(p.level[SN_HC_BUSY], SN_HL_FAIL);
	assert_int_equal(p.level[SN_HC_PCIE], SN_HL_OFF);
	sn_health_policy_format(&p, text, sizeof(text));
	assert_string_equal(text, "busy:fail,row_remap:warn,retired_pages:warn,ecc:warn,persistence:warn,compute_mode:warn,pcie:off,nvlink:warn,clocks:warn");
	/* The canonical text parses back to the same policy. */
	{
		struct sn_health_policy q;

		sn_health_policy_defaults(&q);
		assert_int_equal(sn_health_policy_parse(text, &q, &err), 0);
		assert_memory_equal(q.level, p.level, sizeof(p.level));
	}
	assert_int_equal(sn_health_policy_parse("default", &p, &err), 0);
	assert_int_equal(p.level[SN_HC_CLOCKS], SN_HL_WARN);
	assert_int_equal(p.level[SN_HC_NVLINK], SN_HL_FAIL);

	assert_int_equal(sn_health_policy_parse("fial", &p, &err), -1);
	assert_non_null(strstr(err.msg, "\"fial\" is not default, fail, warn or off"));
	assert_int_equal(sn_health_policy_parse("ecc:maybe", &p, &err), -1);
	assert_non_null(strstr(err.msg, "health check ecc: level \"maybe\""));
	assert_int_equal(sn_health_policy_parse("xid:fail", &p, &err), -1);
	assert_non_null(strstr(err.msg, "unknown health check \"xid\": the checks are busy,"));
	assert_int_equal(sn_health_policy_parse("fail,,warn", &p, &err), -1);
	assert_non_null(strstr(err.msg, "empty item"));
	assert_int_equal(sn_health_policy_parse("", &p, &err), -1);
	/* A bad spec leaves the policy alone. */
	assert_int_equal(p.level[SN_HC_CLOCKS], SN_HL_WARN);
}

static void test_busy_mib_parse(void **state)
{
	unsigned long long v = 7;

	(void)state;
	assert_int_equal(sn_health_parse_busy_mib("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(sn_health_parse_busy_mib("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(sn_health_parse_busy_mib("-1", &v), -1);
	assert_int_equal(sn_health_parse_busy_mib("1G", &v), -1);
	assert_int_equal(sn_health_parse_busy_mib("99999999999", &v), -1);
	assert_int_equal(v, 4096);
}

static void test_plugstack_keys(void **state)
{
	struct sn_config cfg;
	struct sn_error err;
	char *good[] = { "health=off,ecc:fail", "health_busy_mib=2048" };
	char *bad1[] = { "health=sometimes" };
	char *bad2[] = { "health_busy_mib=lots" };

	(void)state;
	sn_config_defaults(&cfg);
	assert_false(cfg.health_given);
	assert_int_equal(sn_config_parse(&cfg, 2, good, &err), 0);
	assert_true(cfg.health_given);
	assert_int_equal(cfg.health.level[SN_HC_ECC], SN_HL_FAIL);
	assert_int_equal(cfg.health.level[SN_HC_BUSY], SN_HL_OFF);
	assert_int_equal(cfg.health.busy_mib, 2048);
	assert_int_equal(sn_config_parse(&cfg, 1, bad1, &err), -1);
	assert_non_null(strstr(err.msg, "plugstack.conf argument \"health=sometimes\": \"sometimes\" is not"));
	assert_int_equal(sn_config_parse(&cfg, 1, bad2, &err), -1);
	assert_non_null(strstr(err.msg, "health_busy_mib=lots\": expected whole MiB"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy_passes),
		cmocka_unit_test(test_busy),
		cmocka_unit_test(test_memory_faults),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_pcie),
		cmocka_unit_test(test_nvlink_and_clocks),
		cmocka_unit_test(test_unknown_values_skip),
		cmocka_unit_test(test_health_beats_busy),
		cmocka_unit_test(test_policy_parse),
		cmocka_unit_test(test_busy_mib_parse),
		cmocka_unit_test(test_plugstack_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

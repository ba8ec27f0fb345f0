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

#include "config/config.h"
#include "gpu/health.h"
#include "protocol/helper_protocol.h"

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
	/* Idle: the cases' PCIe width and gen rely on it. */
	assert_true(h.clock_reasons & (long long)SN_CLOCK_IDLE);
}

/* A reading of a healthy GPU changed for a case. */
struct reading {
	size_t at;	/* offsetof() a long long of sn_gpu_health; 0 ends */
	long long value;
};

#define SET(field, v) { offsetof(struct sn_gpu_health, field), (long long)(v) }
/* Offset 0 (read, a bool) is never SET: it ends the list. */
_Static_assert(offsetof(struct sn_gpu_health, read) == 0, "read first");

/* One check with a reading that fails it, or one that passes. */
struct health_case {
	const char *what;
	struct reading set[3];		/* on a healthy() GPU */
	struct sn_gpu_proc proc;	/* its one process, if .pid */
	bool mig;
	enum sn_health_check check;	/* fails this check (want_check()) */
	int code;			/* ... with this exit code; 0: passes */
	const char *words;		/* in the finding; passing: a note */
};

#define CLOCKS(reasons) SET(clock_reasons, reasons)
/* Fails check C (a health one, not busy), with words W. */
#define FAILS(c, w) .check = (c), .code = SN_WARMUP_GPU_HEALTH, .words = (w)

static const struct health_case cases[] = {
	{ "busy", .proc = { .pid = 628, .mib = 142848, .user = "alice" },
	  .check = SN_HC_BUSY, .code = SN_WARMUP_GPU_BUSY,
	  .words = "pid 628 (alice) 142848 MiB" },
	/* At or below the threshold: a note, not a finding. */
	{ "busy: below the threshold",
	  .proc = { .pid = 628, .mib = 1024, .user = "alice" },
	  .words = "GPU 3 in use by pid 628 (alice)" },
	/* Memory not reported (another user's): the GPU's used memory. */
	{ "busy: another user's process", .set = { SET(mem_used_mib, 9000) },
	  .proc = { .pid = 628, .mib = SN_HV_NA }, .check = SN_HC_BUSY,
	  .code = SN_WARMUP_GPU_BUSY, .words = "pid 628 (user unknown) ? MiB" },
	/* MIG instances share the parent's processes: not checked. */
	{ "busy: a MIG instance", .set = { SET(mem_used_mib, 9000) },
	  .proc = { .pid = 628, .mib = SN_HV_NA }, .mig = true },
	{ "row remap pending", .set = { SET(remap_pending, 1) },
	  FAILS(SN_HC_ROW_REMAP, "row remap pending") },
	{ "row remap failed", .set = { SET(remap_failure, 1) },
	  FAILS(SN_HC_ROW_REMAP, "row remapping failed") },
	{ "retired pages", .set = { SET(retired_pending, 1) },
	  FAILS(SN_HC_RETIRED_PAGES, "retired pages pending") },
	{ "ecc", .set = { SET(ecc_volatile_uncorr, 2) },
	  FAILS(SN_HC_ECC, "2 volatile uncorrectable ECC errors") },
	{ "persistence", .set = { SET(persistence, 0) },
	  FAILS(SN_HC_PERSISTENCE, "persistence mode off") },
	{ "compute mode prohibited",
	  .set = { SET(compute_mode, SN_COMPUTE_PROHIBITED) },
	  FAILS(SN_HC_COMPUTE_MODE, "Prohibited") },
	/* Exclusive-process alone is fine; with a process it is not. */
	{ "compute mode exclusive, no process",
	  .set = { SET(compute_mode, SN_COMPUTE_EXCLUSIVE_PROCESS) } },
	{ "compute mode exclusive, a process",
	  .set = { SET(compute_mode, SN_COMPUTE_EXCLUSIVE_PROCESS) },
	  .proc = { .pid = 77, .mib = 10 },
	  FAILS(SN_HC_COMPUTE_MODE, "pid 77") },
	/* A narrower link is a fault even when idle (width is no power
	 * saving: healthy() is idle). */
	{ "pcie width", .set = { SET(pcie_width, 8) },
	  FAILS(SN_HC_PCIE, "x8, below its x16") },
	/* Lower generation while idle: power saving, a note only. */
	{ "pcie gen, idle", .set = { SET(pcie_gen, 1) },
	  .words = "PCIe gen 1 of 5 while idle" },
	/* The same while not idle: downtrained. */
	{ "pcie gen, not idle", .set = { SET(pcie_gen, 1), CLOCKS(0) },
	  FAILS(SN_HC_PCIE, "gen 1, below its gen 5") },
	/* Slot max below the GPU's: NVML's max is the pair's, so equal
	 * passes. */
	{ "pcie gen at a lower max",
	  .set = { SET(pcie_gen, 4), SET(pcie_gen_max, 4), CLOCKS(0) } },
	{ "nvlink", .set = { SET(nvlinks_active, 16) },
	  FAILS(SN_HC_NVLINK, "2 of its 18 NVLink links inactive") },
	/* A PCIe SKU without NVLink (no link answers): not a fault. */
	{ "nvlink: none", .set = { SET(nvlinks, 0), SET(nvlinks_active, 0) } },
	{ "nvlink: not answered",
	  .set = { SET(nvlinks, SN_HV_NA), SET(nvlinks_active, SN_HV_NA) } },
	{ "clocks: HW slowdown",
	  .set = { CLOCKS(SN_CLOCK_HW_SLOWDOWN | SN_CLOCK_IDLE) },
	  FAILS(SN_HC_CLOCKS, "HW slowdown") },
	{ "clocks: HW power brake", .set = { CLOCKS(SN_CLOCK_HW_POWER_BRAKE) },
	  FAILS(SN_HC_CLOCKS, "HW power brake") },
	{ "clocks: HW thermal", .set = { CLOCKS(SN_CLOCK_HW_THERMAL) },
	  FAILS(SN_HC_CLOCKS, "HW thermal") },
	/* SW power cap (0x4) and app clocks (0x2) are not faults. */
	{ "clocks: SW power cap, app clocks", .set = { CLOCKS(0x6) } },
};

/* A failing case fails its check (want_check()); a passing one has no
 * finding, under the defaults and under "fail", and says its note. */
static void test_case(void **state)
{
	const struct health_case *c = *state;
	const struct reading *r;
	struct sn_gpu_health h;
	struct sn_health_verdict v;
	const char *spec[] = { NULL, "fail" };
	size_t i;

	healthy(&h);
	for (r = c->set; r < c->set + 3 && r->at; r++)
		*(long long *)((char *)&h + r->at) = r->value;
	if (c->proc.pid) {
		h.n_procs = 1;
		h.procs[0] = c->proc;
	}
	h.mig = c->mig;
	if (c->code) {
		want_check(&h, c->check, c->code, c->words);
		return;
	}
	for (i = 0; i < 2; i++) {
		v = verdict_of(&h, spec[i]);
		assert_int_equal(v.exit_code, 0);
		assert_int_equal(v.n, 0);
		if (c->words)
			assert_non_null(strstr(v.notes, c->words));
	}
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

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_healthy_passes),
		cmocka_unit_test(test_unknown_values_skip),
		cmocka_unit_test(test_health_beats_busy),
		cmocka_unit_test(test_policy_parse),
		cmocka_unit_test(test_busy_mib_parse),
		cmocka_unit_test(test_plugstack_keys),
	};
	struct CMUnitTest tests[sizeof(fixed) / sizeof(fixed[0]) + N_CASES];
	size_t i, n = sizeof(fixed) / sizeof(fixed[0]);

	memcpy(tests, fixed, sizeof(fixed));
	/* One test per case, named by it. */
	for (i = 0; i < N_CASES; i++)
		tests[n + i] = (struct CMUnitTest){
			.name = cases[i].what, .test_func = test_case,
			.initial_state = (void *)&cases[i],
		};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * The node's .prom file (prom.c): its metrics from the records, what a
 * job's own helper cannot change, the state read back, and concurrent
 * writers.
 */
#include "record_testutil.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fleet/prom.h"

static struct sn_error err;

#define KEY(s) "spank_nccl_warmup_" s

static bool prom_line_ok(const char *l)
{
	if (l[0] == '#')
		return strncmp(l, "# HELP spank_nccl_warmup_", 25) == 0 ||
		       strncmp(l, "# TYPE spank_nccl_warmup_", 25) == 0;
	return strncmp(l, "spank_nccl_warmup_", 18) == 0;
}

static void test_prom_render(void **state)
{
	static struct sn_warmup_result res;
	static char text[65536];
	static struct sn_prom_state st;
	struct sn_record r;
	size_t len;
	char *save, *l;

	(void)state;
	parse_helper(&res);
	res.bytes = 64 << 20;
	snprintf(res.driver_version, sizeof(res.driver_version),
		 "1\"} 1\nspank_nccl_warmup_passes_total 999");
	snprintf(res.gpus[0].name, sizeof(res.gpus[0].name), "x\"}\nevil 1");
	fill(&r, &res);
	sn_prom_state_init(&st);
	assert_int_equal(sn_prom_state_add(&st, &r), 0);
	len = sn_prom_render(&st, &r, text, sizeof(text));
	assert_true(len > 0);
	assert_null(strstr(text, "\nspank_nccl_warmup_passes_total 999"));
	assert_null(strstr(text, "\nevil"));
	assert_contains(text, KEY("passes_total{mode=\"bandwidth\",source=\"plugin\"} 1\n"));
	/* Every mode, source and fault at 0: increase() sees the first. */
	assert_contains(text, KEY("failures_total{mode=\"check\",source=\"prolog\",fault=\"node\"} 0\n"));
	assert_contains(text, KEY("last_success{mode=\"bandwidth\",source=\"plugin\"} 1\n"));
	assert_contains(text, KEY("last_busbw_bytes_per_second 350500000000\n"));
	assert_contains(text, KEY("last_busbw_message_bytes 67108864\n"));
	/* dcgm-exporter's labels: NVML's bus ID spelling and the UUID. */
	assert_contains(text, KEY("last_nccl_memory_bytes{pci_bus_id=\"00000000:01:00.0\",UUID=\"GPU-a\"} 310378496\n"));
	/* Histograms: 1.6 s in le 2, not in le 1; comm_init 0.48 s. */
	assert_contains(text, KEY("duration_seconds_bucket{mode=\"bandwidth\",le=\"2\"} 1\n"));
	assert_contains(text, KEY("duration_seconds_bucket{mode=\"bandwidth\",le=\"1\"} 0\n"));
	assert_contains(text, KEY("duration_seconds_sum{mode=\"bandwidth\"} 1.6\n"));
	assert_contains(text, KEY("phase_duration_seconds_bucket{phase=\"comm_init\",le=\"0.5\"} 1\n"));
	assert_contains(text, KEY("phase_duration_seconds_bucket{phase=\"comm_init\",le=\"0.25\"} 0\n"));
	/* The node's NCCL (system) is in _info; no source label there. */
	assert_non_null(strstr(text, "nccl_version=\"2.28.9\"} 1\n"));
	/* No job, user or step label: bounded cardinality. */
	assert_null(strstr(text, "job="));	/* fault="job" is a value */
	assert_null(strstr(text, "alice"));
	assert_null(strstr(text, "step"));
	for (l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (!prom_line_ok(l))
			fail_msg("foreign line: %s", l);
}

/*
 * The health checks' gauge: per check, the GPUs it hit in the last run
 * the job's user cannot reach; a job's own helper's findings (or phase
 * timings) change nothing (issue 30); it carries over the file.
 */
static void test_prom_health(void **state)
{
	static struct sn_warmup_result res, forged;
	static char text[65536];
	static struct sn_prom_state st, back;
	struct sn_record r;
	size_t len;

	(void)state;
	parse_helper(&res);
	fill(&r, &res);
	sn_prom_state_init(&st);
	/* Not run (health=off, an older helper): no series. */
	assert_int_equal(sn_prom_state_add(&st, &r), 0);
	assert_true(sn_prom_render(&st, &r, text, sizeof(text)) > 0);
	assert_null(strstr(text, "last_health_findings{"));
	snprintf(res.health_status, sizeof(res.health_status), "gpu_health");
	snprintf(res.health_findings, sizeof(res.health_findings),
		 "GPU 0 ecc: 2 volatile uncorrectable ECC errors since the driver loaded; GPU 3 ecc: 1 volatile; GPU 12 pcie: PCIe link x8, below its x16 (not a GPU 9 nvlink: here)");
	assert_int_equal(sn_prom_state_add(&st, &r), 0);
	/* The job's helper's: every GPU sick, every phase 1 ms. */
	forged = res;
	snprintf(forged.health_findings, sizeof(forged.health_findings),
		 "GPU 0 busy: x; GPU 1 busy: x; GPU 2 clocks: x");
	for (int i = 0; i < SN_RESULT_PHASES; i++)
		forged.phase_ms[i] = 1;
	r.result = &forged;
	r.trusted = NULL;
	assert_int_equal(sn_prom_state_add(&st, &r), 0);
	len = sn_prom_render(&st, &r, text, sizeof(text));
	assert_true(len > 0);
	assert_int_equal(sn_prom_state_parse(text, len, &back, &err), 0);
	assert_true(sn_prom_state_get(&back, KEY("last_health_findings{check=\"ecc\"}")) == 2);
	assert_true(sn_prom_state_get(&back, KEY("last_health_findings{check=\"pcie\"}")) == 1);
	assert_true(sn_prom_state_get(&back, KEY("last_health_findings{check=\"nvlink\"}")) == 1);
	assert_true(sn_prom_state_get(&back, KEY("last_health_findings{check=\"busy\"}")) == 0);
	assert_true(sn_prom_state_get(&back, KEY("last_health_findings{check=\"clocks\"}")) == 0);
	/* The two trusted runs' phases only (comm_init 0.48 s: not <= 10 ms). */
	assert_true(sn_prom_state_get(&back, KEY("phase_duration_seconds_count{phase=\"comm_init\"}")) == 2);
	assert_true(sn_prom_state_get(&back, KEY("phase_duration_seconds_bucket{phase=\"comm_init\",le=\"0.01\"}")) == 0);
	assert_non_null(strstr(text, "# TYPE spank_nccl_warmup_last_health_findings gauge\n"));
}

static void test_prom_state(void **state)
{
	static char text[65536];
	static struct sn_warmup_result res;
	static struct sn_prom_state st, back;
	struct sn_record r;
	size_t len;

	(void)state;
	fill(&r, NULL);
	sn_prom_state_init(&st);
	sn_prom_state_add(&st, &r);
	/* A Prolog check pass does not hide a plugin comm failure. */
	r.source = "prolog";
	snprintf(r.mode, sizeof(r.mode), "check");
	sn_prom_state_add(&st, &r);
	r.source = "spank";
	snprintf(r.mode, sizeof(r.mode), "comm");
	r.pass = false;
	r.class = SN_CLASS_TIMEOUT;
	r.fault = SN_FAULT_NODE;
	sn_prom_state_add(&st, &r);
	sn_prom_state_add(&st, &r);
	/* A job's bad nccl=: its own series, never the node's. */
	r.class = SN_CLASS_NCCL_ERROR;
	r.fault = SN_FAULT_JOB;
	sn_prom_state_add(&st, &r);
	len = sn_prom_render(&st, &r, text, sizeof(text));
	assert_int_equal(sn_prom_state_parse(text, len, &back, &err), 0);
	assert_true(sn_prom_state_get(&back, KEY("passes_total{mode=\"bandwidth\",source=\"plugin\"}")) == 1);
	assert_true(sn_prom_state_get(&back, KEY("failures_total{mode=\"comm\",source=\"plugin\",fault=\"node\"}")) == 2);
	assert_true(sn_prom_state_get(&back, KEY("failures_total{mode=\"comm\",source=\"plugin\",fault=\"job\"}")) == 1);
	assert_true(sn_prom_state_get(&back, KEY("failure_classes_total{class=\"nccl_error\",fault=\"job\"}")) == 1);
	assert_true(sn_prom_state_get(&back, KEY("failure_classes_total{class=\"nccl_error\",fault=\"node\"}")) == 0);
	assert_true(sn_prom_state_get(&back, KEY("failure_classes_total{class=\"timeout\",fault=\"node\"}")) == 2);
	assert_true(sn_prom_state_get(&back, KEY("last_success{mode=\"check\",source=\"prolog\"}")) == 1);
	assert_true(sn_prom_state_get(&back, KEY("last_success{mode=\"comm\",source=\"plugin\"}")) == 0);
	assert_true(sn_prom_state_get(&back, KEY("duration_seconds_count{mode=\"comm\"}")) == 3);
	assert_true(sn_prom_state_get(&back, KEY("last_busbw_bytes_per_second")) < 0);
	/* Read back, added to, rendered again: the same counters go on. */
	sn_prom_state_add(&back, &r);
	assert_true(sn_prom_state_get(&back, KEY("failures_total{mode=\"comm\",source=\"plugin\",fault=\"job\"}")) == 2);
	assert_int_equal(back.n, st.n);
	/* A fabric warmup's busbw is the network's: not the node's gauge. */
	memset(&res, 0, sizeof(res));
	res.busbw_gbps = 12.5;
	res.bytes = -1;
	fill(&r, &res);
	snprintf(r.mode, sizeof(r.mode), "fabric");
	sn_prom_state_add(&st, &r);
	assert_true(sn_prom_state_get(&st, KEY("last_busbw_bytes_per_second")) < 0);
	snprintf(r.mode, sizeof(r.mode), "bandwidth");
	sn_prom_state_add(&st, &r);
	assert_true(sn_prom_state_get(&st, KEY("last_busbw_bytes_per_second")) == 12.5e9);
	/* The job's helper's words alone (no root run): none of the node's
	 * facts change, and no per-GPU series is added (issue 30). */
	{
		static struct sn_warmup_result forged;
		size_t before = st.n;

		forged = res;
		forged.busbw_gbps = 999;
		forged.n_gpus = 1;
		snprintf(forged.gpus[0].uuid, sizeof(forged.gpus[0].uuid),
			 "GPU-forged");
		forged.gpus[0].nccl_mem_mib = 1;
		snprintf(forged.driver_version,
			 sizeof(forged.driver_version), "forged");
		r.result = &forged;
		r.trusted = NULL;
		sn_prom_state_add(&st, &r);
		assert_true(sn_prom_state_get(&st, KEY("last_busbw_bytes_per_second")) == 12.5e9);
		assert_int_equal(st.n, before);
		len = sn_prom_render(&st, &r, text, sizeof(text));
		assert_null(strstr(text, "forged"));
		/* Its GPU count neither: the step's GPUs, as slurmstepd set
		 * CUDA_VISIBLE_DEVICES. */
		forged.n_gpus = 64;
		snprintf(r.gpus_requested, sizeof(r.gpus_requested), "0,1");
		len = sn_prom_render(&st, &r, text, sizeof(text));
		assert_non_null(strstr(text, "\nspank_nccl_warmup_last_gpus 2\n"));
		r.gpus_requested[0] = '\0';
		r.result = &res;
		r.trusted = &res;
	}
	/* _info keeps the node's NCCL: a job's own does not churn it. */
	snprintf(res.nccl_version, sizeof(res.nccl_version), "2.21.5");
	snprintf(res.nccl_source, sizeof(res.nccl_source), "system");
	sn_prom_state_add(&st, &r);
	snprintf(res.nccl_version, sizeof(res.nccl_version), "2.99.1");
	snprintf(res.nccl_source, sizeof(res.nccl_source), "user");
	sn_prom_state_add(&st, &r);
	len = sn_prom_render(&st, &r, text, sizeof(text));
	assert_non_null(strstr(text, "nccl_version=\"2.21.5\"} 1\n"));
	assert_null(strstr(text, "2.99.1"));
	/* A damaged line or an older release's restarts the counters. */
	assert_int_equal(sn_prom_state_parse(
		"spank_nccl_warmup_failures_total{class=\"nope\"} 1\n",
		49, &back, &err), -1);
	assert_int_equal(back.n, 0);
	assert_int_equal(sn_prom_state_parse(
		"spank_nccl_warmup_passes_total{mode=\"comm\",source=\"plugin\"} -1\n",
		64, &back, &err), -1);
	/* Foreign lines and series of the last warmup only are ignored. */
	assert_int_equal(sn_prom_state_parse(
		"other_metric 5\nspank_nccl_warmup_last_gpus 2\nspank_nccl_warmup_passes_total{mode=\"comm\",source=\"plugin\"} 3\n",
		108, &back, &err), 0);
	assert_int_equal(back.n, 1);
	assert_true(sn_prom_state_get(&back, KEY("passes_total{mode=\"comm\",source=\"plugin\"}")) == 3);
}

/* Concurrent steps on one node: no counter increment is lost. */
static void test_prom_concurrent(void **state)
{
	/* Few enough that under valgrind (ci.d/30-valgrind.sh) the last writer
	 * still gets the lock inside prom.c's 5 s deadline. */
	enum { WRITERS = 4, EACH = 6 };
	static char text[65536];
	static struct sn_prom_state st;
	char tmpdir[64], path[128];
	struct sn_record r;
	ssize_t n;
	int fd, status;

	(void)state;
	make_tmpdir(tmpdir);
	fill(&r, NULL);
	for (int w = 0; w < WRITERS; w++) {
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			for (int i = 0; i < EACH; i++)
				if (sn_prom_update(tmpdir, &r, &err) < 0)
					_exit(1);
			_exit(0);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		assert_true(wait(&status) > 0);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	snprintf(path, sizeof(path), "%s/" SN_PROM_FILE, tmpdir);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, text, sizeof(text));
	close(fd);
	assert_true(n > 0);
	assert_int_equal(sn_prom_state_parse(text, (size_t)n, &st, &err), 0);
	assert_int_equal((int)sn_prom_state_get(&st,
		"spank_nccl_warmup_passes_total{mode=\"bandwidth\",source=\"plugin\"}"),
		WRITERS * EACH);
	remove_tmpdir(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prom_render),
		cmocka_unit_test(test_prom_health),
		cmocka_unit_test(test_prom_state),
		cmocka_unit_test(test_prom_concurrent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

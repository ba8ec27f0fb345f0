/* SPDX-License-Identifier: MIT */
/*
 * The fleet record (record.c), its reader (record_read.c, json.c) and the
 * node's .prom file (prom.c).
 */
#include "core_testutil.h"

#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fleet/prom.h"
#include "fleet/record.h"
#include "fleet/record_read.h"
#include "protocol/helper_protocol.h"

static struct sn_json doc;
static struct sn_record_view view;
static struct sn_error err;
static char line[SN_RECORD_MAX_BYTES];

static const char helper_json[] =
	"{\"version\":1,\"status\":\"ok\",\"exit_code\":0,\"mode\":\"bandwidth\","
	"\"nccl_version\":\"2.28.9\",\"driver_version\":\"580.95.05\","
	"\"cuda_driver_version\":13000,\"nccl_path\":\"/usr/lib/libnccl.so.2\","
	"\"nccl_source\":\"system\",\"gpus\":[{\"index\":0,\"busid\":\"0000:01:00.0\","
	"\"uuid\":\"GPU-a\",\"name\":\"NVIDIA H200\",\"nccl_mem_mib\":296},"
	"{\"index\":1,\"busid\":\"0000:02:00.0\",\"uuid\":\"GPU-b\",\"name\":\"NVIDIA H200\","
	"\"nccl_mem_mib\":null}],\"timings_ms\":{\"cuda_init\":600,\"comm_init\":480,\"collectives\":15,"
	"\"bandwidth\":null,\"total\":1500},\"busbw_gbps\":350.5,"
	"\"collectives\":{\"allreduce\":1.25,\"sendrecv\":null}}";

static void fill(struct sn_record *r, struct sn_warmup_result *res)
{
	memset(r, 0, sizeof(*r));
	r->source = "spank";
	r->time = 1795389000.25;
	snprintf(r->node, sizeof(r->node), "n1");
	r->job = 42;
	r->step = 0;
	snprintf(r->user, sizeof(r->user), "alice");
	r->uid = 1000;
	snprintf(r->mode, sizeof(r->mode), "bandwidth");
	r->pass = true;
	r->class = SN_CLASS_OK;
	r->exit_code = 0;
	r->policy = "fail";
	r->elapsed_ms = 1600;
	r->result = res;
	/* As from a root run (the Prolog, a confirmation). */
	r->trusted = res;
}

static void parse_helper(struct sn_warmup_result *res)
{
	assert_int_equal(sn_warmup_result_parse(helper_json,
						strlen(helper_json), res,
						&err), 0);
}

/* The record of a failed run, whose helper printed TEXT, formatted into
 * line; its length.  MODE: the record's, or NULL for fill()'s. */
static size_t format_failed(const char *text, const char *mode,
			    enum sn_record_class class, int exit_code,
			    struct sn_warmup_result *res, struct sn_record *r)
{
	size_t len;

	assert_int_equal(sn_warmup_result_parse(text, strlen(text), res, &err),
			 0);
	fill(r, res);
	if (mode)
		snprintf(r->mode, sizeof(r->mode), "%s", mode);
	r->pass = false;
	r->class = class;
	r->exit_code = exit_code;
	len = sn_record_format(r, line, sizeof(line));
	assert_true(len > 0);
	return len;
}

static void test_result_optional_keys(void **state)
{
	static struct sn_warmup_result res;

	(void)state;
	parse_helper(&res);
	assert_string_equal(res.driver_version, "580.95.05");
	assert_int_equal(res.cuda_driver_version, 13000);
	assert_string_equal(res.nccl_source, "system");
	assert_string_equal(res.gpus[0].name, "NVIDIA H200");
	assert_true(res.gpus[0].nccl_mem_mib == 296);
	assert_true(res.gpus[1].nccl_mem_mib < 0);
	assert_true(res.phase_ms[0] == 600);	/* cuda_init */
	assert_true(res.phase_ms[1] < 0);	/* contexts: absent */
	assert_true(res.phase_ms[3] < 0);	/* allreduce: absent */
	assert_true(res.phase_ms[4] == 15);	/* collectives */
	assert_true(res.phase_ms[5] < 0);	/* bandwidth: null */
	assert_true(res.collective_ms[0] == 1.25);
	assert_true(res.collective_ms[4] < 0);
	/* Negative and duplicate optional values are refused. */
	assert_int_equal(sn_warmup_result_parse(
		"{\"version\":1,\"status\":\"ok\",\"exit_code\":0,\"timings_ms\":{\"comm_init\":-1}}",
		80, &res, &err), -1);
	assert_int_equal(sn_warmup_result_parse(
		"{\"version\":1,\"status\":\"ok\",\"exit_code\":0,\"collectives\":{\"allreduce\":1,\"allreduce\":2}}",
		93, &res, &err), -1);
}

static void test_round_trip(void **state)
{
	static struct sn_warmup_result res;
	struct sn_record r;
	size_t len;

	(void)state;
	parse_helper(&res);
	fill(&r, &res);
	len = sn_record_format(&r, line, sizeof(line));
	assert_true(len > 0);
	assert_int_equal(line[len - 1], '\n');
	assert_ptr_equal(memchr(line, '\n', len), line + len - 1);
	assert_int_equal(sn_record_read(line, len - 1, &doc, &view, &err), 0);
	assert_string_equal(view.node, "n1");
	assert_int_equal(view.job, 42);
	assert_true(view.pass);
	assert_string_equal(view.class, "ok");
	assert_string_equal(view.gpu_model, "NVIDIA H200");
	assert_int_equal(view.gpu_count, 2);
	assert_true(view.busbw_gbps > 350.4 && view.busbw_gbps < 350.6);
	assert_true(view.total_ms == 1500);
	assert_string_equal(view.driver_version, "580.95.05");
	assert_non_null(strstr(line, "\"nccl_mem_mib\":296.0"));
	assert_non_null(strstr(line, "\"step\":0,"));
	/* Every phase, the collectives' included (schema 3). */
	assert_non_null(strstr(line, "\"allreduce\":null,\"collectives\":15.0,\"bandwidth\":null"));
	assert_non_null(strstr(line, "\"time\":\"2026-11-22T23:10:00.250Z\",\"ts\":1795389000.250,"));
}

/* Whatever the helper's strings hold, the record stays one line and the
 * reader gets the same text back. */
static void test_escaping(void **state)
{
	static struct sn_warmup_result res;
	struct sn_record r;
	size_t len;

	(void)state;
	parse_helper(&res);
	snprintf(res.nccl_version, sizeof(res.nccl_version),
		 "2\"}\n{\"x\":1\\");
	fill(&r, &res);
	r.pass = false;
	r.class = SN_CLASS_NCCL_ERROR;
	snprintf(r.message, sizeof(r.message),
		 "bad\n{\"record\":\"spank-nccl-warmup\"}\r\x1b[31m\xff");
	/* RAS's verdict is the job's processes' word. */
	snprintf(r.hang, sizeof(r.hang), "rank 1 (\"x\"\n, GPU 1) is dead");
	len = sn_record_format(&r, line, sizeof(line));
	assert_true(len > 0);
	assert_ptr_equal(memchr(line, '\n', len), line + len - 1);
	assert_null(memchr(line, '\r', len));
	assert_null(memchr(line, 0x1b, len));
	assert_int_equal(sn_record_read(line, len, &doc, &view, &err), 0);
	assert_string_equal(view.nccl_version, "2\"}\n{\"x\":1\\");
	assert_string_equal(view.message,
			    "bad\n{\"record\":\"spank-nccl-warmup\"}\r\x1b[31m?");
	assert_false(view.pass);
	assert_string_equal(view.class, "nccl_error");
	assert_non_null(strstr(line, "\"hang\":\"rank 1 (\\\"x\\\"\\n, GPU 1) is dead\""));
	assert_string_equal(view.hang, "rank 1 (\"x\"\n, GPU 1) is dead");
}

static void test_classes(void **state)
{
	(void)state;
	assert_int_equal(sn_record_class_of_exit(SN_WARMUP_DUPLICATE_BUSID),
			 SN_CLASS_DUPLICATE_BUSID);
	assert_int_equal(sn_record_class_of_exit(77), SN_CLASS_INTERNAL);
	assert_string_equal(sn_record_class_name(SN_CLASS_CRASH), "crash");
	assert_string_equal(sn_record_class_name(SN_CLASS_LOW_BANDWIDTH),
			    "low_bandwidth");
	for (int c = 0; c < SN_CLASS_COUNT; c++)
		assert_non_null(sn_record_class_name(c));
	/* Fabric: another node at fault is not this node's failure. */
	assert_int_equal(sn_record_class_of_exit(SN_WARMUP_PEER_FAILED),
			 SN_CLASS_PEER_FAILED);
	assert_int_equal(sn_record_class_of_exit(SN_WARMUP_TRANSPORT),
			 SN_CLASS_TRANSPORT);
	assert_string_equal(sn_record_class_name(SN_CLASS_PEER_FAILED),
			    "peer_failed");
	assert_string_equal(sn_record_class_name(SN_CLASS_TRANSPORT),
			    "transport");
	assert_false(sn_record_class_is_own_fault("peer_failed"));
	assert_true(sn_record_class_is_own_fault("transport"));
	assert_true(sn_record_class_is_own_fault("nccl_error"));
}

/* A fabric run's record carries the transport and the node at fault. */
static void test_fabric_record(void **state)
{
	static const char text[] =
		"{\"version\":1,\"status\":\"peer_failed\",\"exit_code\":10,"
		"\"mode\":\"fabric\",\"transport\":\"NET/IB\","
		"\"fabric\":{\"blame_index\":2,\"blame_node\":\"n3\\\"x\"}}";
	struct sn_warmup_result res;
	struct sn_record r;
	size_t len;

	(void)state;
	len = format_failed(text, "fabric", SN_CLASS_PEER_FAILED, 10, &res, &r);
	assert_non_null(strstr(line, "\"class\":\"peer_failed\""));
	assert_non_null(strstr(line, "\"transport\":\"NET/IB\""));
	assert_non_null(strstr(line, "\"blame_node\":\"n3\\\"x\""));
	assert_int_equal(sn_record_read(line, len, &doc, &view, &err), 0);
	assert_string_equal(view.class, "peer_failed");
	/* Other modes: null. */
	res.blame_node[0] = '\0';
	len = sn_record_format(&r, line, sizeof(line));
	assert_non_null(strstr(line, "\"blame_node\":null"));
}

/* The GPU health checks' status and findings reach the record (schema 3). */
static void test_health_record(void **state)
{
	static const char text[] =
		"{\"version\":1,\"status\":\"gpu_busy\",\"exit_code\":14,"
		"\"health_status\":\"gpu_busy\",\"health_findings\":"
		"\"GPU 0 busy: held by another process: pid 7 (alice) 900 MiB\","
		"\"health\":{\"checked\":true,\"gpus\":[{\"index\":0}]}}";
	struct sn_warmup_result res;
	struct sn_record r;
	size_t len;

	(void)state;
	len = format_failed(text, NULL, SN_CLASS_GPU_BUSY, 14, &res, &r);
	assert_non_null(strstr(line, "\"class\":\"gpu_busy\""));
	assert_non_null(strstr(line, "\"health_status\":\"gpu_busy\""));
	assert_non_null(strstr(line, "\"health_findings\":\"GPU 0 busy: held by another process: pid 7 (alice) 900 MiB\""));
	assert_non_null(strstr(line, "\"schema\":4"));
	assert_non_null(strstr(line, "\"hang\":null"));
	assert_int_equal(sn_record_read(line, len, &doc, &view, &err), 0);
	assert_int_equal(sn_record_class_of_exit(13), SN_CLASS_GPU_HEALTH);
	assert_int_equal(sn_record_class_of_exit(14), SN_CLASS_GPU_BUSY);
	assert_true(sn_record_class_is_own_fault("gpu_busy"));
	/* health=off: no keys from the helper, null in the record. */
	res.health_status[0] = res.health_findings[0] = '\0';
	len = sn_record_format(&r, line, sizeof(line));
	assert_non_null(strstr(line, "\"health_status\":null"));
	assert_non_null(strstr(line, "\"health_findings\":null"));
}

#define REJECT(text, why) do { \
	assert_int_equal(sn_record_read(text, strlen(text), &doc, &view, \
					&err), -1); \
	if (!strstr(err.msg, why)) \
		fail_msg("\"%s\" lacks \"%s\" for %s", err.msg, why, text); \
} while (0)

#define HEAD "{\"record\":\"spank-nccl-warmup\",\"version\":1,\"ts\":1,"

static void test_reader_rejects(void **state)
{
	static char deep[64];

	(void)state;
	REJECT("[1]", "not a JSON object");
	REJECT("{\"record\":\"other\"}", "not a spank-nccl warmup record");
	REJECT("{\"record\":\"spank-nccl-warmup\",\"version\":2,\"ts\":1}",
	       "version 2");
	REJECT(HEAD "\"verdict\":\"pass\",\"class\":\"ok\"}", "\"node\"");
	REJECT(HEAD "\"node\":\"n\",\"verdict\":\"maybe\",\"class\":\"ok\"}",
	       "verdict");
	REJECT(HEAD "\"node\":\"n\",\"verdict\":\"pass\",\"class\":\"bogus\"}",
	       "unknown \"class\"");
	REJECT(HEAD "\"node\":\"n\\u00e9\",\"verdict\":\"pass\",\"class\":\"ok\"}",
	       "ASCII");
	REJECT(HEAD "\"node\":\"a\",\"node\":\"b\",\"verdict\":\"pass\",\"class\":\"ok\"}",
	       "duplicate key");
	REJECT(HEAD "\"node\":\"n\",\"verdict\":\"pass\",\"class\":\"ok\"} x",
	       "trailing data");
	REJECT(HEAD "\"node\":\"n\",\"verdict\":\"pass\",\"class\":\"ok\",\"busbw_gbps\":01}",
	       "expected ',' or '}'");
	REJECT(HEAD "\"node\":\"n\",\"verdict\":\"pass\",\"class\":\"ok\",\"busbw_gbps\":-3}",
	       "busbw_gbps");
	memset(deep, '[', 20);
	REJECT(deep, "nested too deep");
	REJECT("{\"a\":\"x\ny\"}", "control");
}

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

static char tmpdir[64];

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/sn-test-record.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	assert_int_equal(system(cmd), 0);
}

/* Concurrent steps on one node: no counter increment is lost. */
static void test_prom_concurrent(void **state)
{
	/* Few enough that under valgrind (ci.d/30-valgrind.sh) the last writer
	 * still gets the lock inside prom.c's 5 s deadline. */
	enum { WRITERS = 4, EACH = 6 };
	static char text[65536];
	static struct sn_prom_state st;
	char path[128];
	struct sn_record r;
	ssize_t n;
	int fd, status;

	(void)state;
	make_tmpdir();
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
	remove_tmpdir();
}

static mode_t current_umask(void)
{
	mode_t m = umask(0);

	umask(m);
	return m;
}

static void test_paths_and_append(void **state)
{
	char path[256], target[128], data[256];
	ssize_t n;
	int fd;

	(void)state;
	assert_int_equal(sn_record_path(path, sizeof(path), "/a/%n/x%%.jsonl",
					"n7"), 0);
	assert_string_equal(path, "/a/n7/x%.jsonl");
	assert_int_equal(sn_record_path(path, sizeof(path), "/a/%j", "n7"), -1);
	assert_int_equal(sn_record_path(path, sizeof(path), "/a/%n", ".."), -1);
	assert_int_equal(sn_record_path(path, sizeof(path), "/a/%n", "a/b"), -1);
	assert_int_equal(sn_record_path(path, 8, "/abc/%n", "node1"), -1);
	assert_false(sn_record_path_valid("/x%"));

	make_tmpdir();
	snprintf(path, sizeof(path), "%s/%%n.jsonl", tmpdir);
	assert_int_equal(sn_record_append(path, "n1", "a\n", 2, &err), 0);
	assert_int_equal(sn_record_append(path, "n1", "b\n", 2, &err), 0);
	snprintf(target, sizeof(target), "%s/n1.jsonl", tmpdir);
	fd = open(target, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, data, sizeof(data));
	close(fd);
	assert_int_equal(n, 4);
	assert_memory_equal(data, "a\nb\n", 4);
	/* logrotate renames the file: the next record starts a new one
	 * (mode 0640), the rotated file keeps what it had. */
	{
		char rotated[160];
		struct stat sb;

		snprintf(rotated, sizeof(rotated), "%s.1", target);
		assert_int_equal(rename(target, rotated), 0);
		assert_int_equal(sn_record_append(path, "n1", "c\n", 2, &err),
				 0);
		assert_int_equal(stat(target, &sb), 0);
		assert_int_equal(sb.st_size, 2);
		assert_int_equal(sb.st_mode & 0777, 0640 & ~current_umask());
		assert_int_equal(stat(rotated, &sb), 0);
		assert_int_equal(sb.st_size, 4);
	}
	/* A planted symlink is not followed. */
	snprintf(target, sizeof(target), "%s/n2.jsonl", tmpdir);
	assert_int_equal(symlink("/dev/null", target), 0);
	assert_int_equal(sn_record_append(path, "n2", "c\n", 2, &err), -1);
	assert_non_null(strstr(err.msg, "cannot open record_file"));
	snprintf(path, sizeof(path), "%s/missing/x.jsonl", tmpdir);
	assert_int_equal(sn_record_append(path, "n1", "c\n", 2, &err), -1);
	assert_non_null(strstr(err.msg, "No such file"));
	/* A device is no sink (test_hostile_sink.c has the rest). */
	assert_int_equal(sn_record_append("/dev/full", "n1", "c\n", 2, &err),
			 -1);
	assert_non_null(strstr(err.msg, "is a character device, not a regular file"));
	remove_tmpdir();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_result_optional_keys),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_health_record),
		cmocka_unit_test(test_prom_health),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_fabric_record),
		cmocka_unit_test(test_reader_rejects),
		cmocka_unit_test(test_prom_render),
		cmocka_unit_test(test_prom_state),
		cmocka_unit_test(test_prom_concurrent),
		cmocka_unit_test(test_paths_and_append),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

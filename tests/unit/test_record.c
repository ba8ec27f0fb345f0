/* SPDX-License-Identifier: MIT */
/*
 * The fleet record (record.c): its line, its reader (record_read.c,
 * json.c) and its file; the node's .prom file is test_prom.c's.
 */
#include "record_testutil.h"

#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fleet/record_read.h"

static struct sn_json doc;
static struct sn_record_view view;
static struct sn_error err;
static char line[SN_RECORD_MAX_BYTES];

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

static mode_t current_umask(void)
{
	mode_t m = umask(0);

	umask(m);
	return m;
}

static void test_paths_and_append(void **state)
{
	char tmpdir[64], path[256], target[128], data[256];
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

	make_tmpdir(tmpdir);
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
	remove_tmpdir(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_result_optional_keys),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_health_record),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_fabric_record),
		cmocka_unit_test(test_reader_rejects),
		cmocka_unit_test(test_paths_and_append),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

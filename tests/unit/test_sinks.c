/* SPDX-License-Identifier: MIT */
/*
 * The fan-out of a fleet record (sinks.c): every configured sink is
 * tried whatever happened to the others, and each failure names its sink
 * and its cause.  Messages to /dev/log are caught by replacing
 * sn_syslog_send, so the parts are counted without a syslog daemon.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core_testutil.h"
#include "protocol/json.h"
#include "fleet/prom.h"
#include "fleet/record.h"
#include "fleet/sinks.h"

/* What reached "/dev/log": every message (sn_syslog_send replaced: this
 * program's definition wins over the library's). */
#define MAX_MSGS 80
static int syslog_count;
static char syslog_msgs[MAX_MSGS][SN_SYSLOG_MAX_BYTES + 64];
static size_t syslog_lens[MAX_MSGS];

int sn_syslog_send(const char *msg, size_t len)
{
	if (syslog_count < MAX_MSGS) {
		assert_true(len < sizeof(syslog_msgs[0]));
		memcpy(syslog_msgs[syslog_count], msg, len);
		syslog_msgs[syslog_count][len] = '\0';
		syslog_lens[syslog_count] = len;
	}
	syslog_count++;
	return 0;
}

/*
 * The messages: N of them, each under 1 KiB, from ident spank-nccl at
 * daemon.info, "@cee:" and one JSON object naming the record and its
 * part; their "gpus" items add up to N_GPUS.
 */
static void assert_syslog_parts(int n, size_t n_gpus, const char *node)
{
	static struct sn_json doc;
	struct sn_error err;
	char head[64];
	size_t gpus = 0;

	assert_int_equal(syslog_count, n);
	snprintf(head, sizeof(head), "<30>spank-nccl[%ld]: @cee:{",
		 (long)getpid());
	for (int k = 0; k < n; k++) {
		const char *json = syslog_msgs[k] + strlen(head) - 1;
		int i;

		assert_true(syslog_lens[k] <= SN_SYSLOG_MAX_BYTES);
		assert_int_equal(strncmp(syslog_msgs[k], head, strlen(head)), 0);
		if (sn_json_parse(&doc, json, strlen(json), &err) != 0)
			fail_msg("part %d: %s: %s", k + 1, err.msg, json);
		i = sn_json_member(&doc, 0, "part");
		assert_true(i >= 0 && doc.v[i].num == k + 1);
		i = sn_json_member(&doc, 0, "parts");
		assert_true(i >= 0 && doc.v[i].num == n);
		assert_string_equal(sn_json_str(&doc, sn_json_member(&doc, 0, "node")),
				    node);
		assert_non_null(sn_json_str(&doc, sn_json_member(&doc, 0, "rid")));
		i = sn_json_member(&doc, 0, "gpus");
		for (int g = i >= 0 ? doc.v[i].first : -1; g >= 0; g = doc.v[g].next)
			gpus++;
	}
	assert_int_equal(gpus, n_gpus);
}

struct fixture {
	char dir[64];
	char file_pattern[128];		/* DIR/%n.jsonl */
	char file[128];			/* DIR/n1.jsonl */
	char prom[128];			/* DIR/spank_nccl.prom */
	char missing[128];		/* DIR/missing */
	struct sn_record r;
	char line[SN_RECORD_MAX_BYTES];	/* the record's line */
	size_t len;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/sn-test-sinks.XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(fx->file_pattern, sizeof(fx->file_pattern), "%s/%%n.jsonl",
		 fx->dir);
	snprintf(fx->file, sizeof(fx->file), "%s/n1.jsonl", fx->dir);
	snprintf(fx->prom, sizeof(fx->prom), "%s/" SN_PROM_FILE, fx->dir);
	snprintf(fx->missing, sizeof(fx->missing), "%s/missing", fx->dir);
	fx->r.source = "spank";
	fx->r.time = 1795389000.25;
	snprintf(fx->r.node, sizeof(fx->r.node), "n1");
	fx->r.job = 42;
	fx->r.uid = 1000;
	snprintf(fx->r.mode, sizeof(fx->r.mode), "comm");
	fx->r.pass = true;
	fx->r.class = SN_CLASS_OK;
	fx->len = sn_record_format(&fx->r, fx->line, sizeof(fx->line));
	if (!fx->len)
		return -1;
	syslog_count = 0;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];
	int rc;

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	rc = system(cmd);
	free(fx);
	return rc == 0 ? 0 : -1;
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* The file holds exactly the record's line. */
static void assert_file_has_record(const struct fixture *fx)
{
	char *text = slurp(fx->file);

	assert_non_null(text);
	assert_string_equal(text, fx->line);
	free(text);
}

/* No GPUs: the scalars and the timings. */
static void assert_syslog_has_record(const struct fixture *fx)
{
	assert_syslog_parts(2, 0, fx->r.node);
	assert_contains(syslog_msgs[0], "\"verdict\":\"pass\",\"class\":\"ok\",\"fault\":null");
	assert_contains(syslog_msgs[1], "\"timings_ms\":{");
}

static void all_sinks_written(void **state)
{
	struct fixture *fx = *state;
	struct sn_sinks s = { fx->file_pattern, true, fx->dir };
	struct sn_sinks_report rep;

	assert_int_equal(sn_sinks_write(&s, &fx->r, &rep), 0);
	assert_string_equal(rep.file.msg, "");
	assert_string_equal(rep.syslog.msg, "");
	assert_string_equal(rep.prom.msg, "");
	assert_file_has_record(fx);
	assert_syslog_has_record(fx);
	assert_true(exists(fx->prom));
}

static void nothing_configured(void **state)
{
	struct fixture *fx = *state;
	struct sn_sinks s = { NULL, false, "" };
	struct sn_sinks_report rep;

	assert_int_equal(sn_sinks_write(&s, &fx->r, &rep), 0);
	assert_int_equal(syslog_count, 0);
	assert_false(exists(fx->file));
	assert_false(exists(fx->prom));
}

/* A missing directory for the file: syslog and the metrics still go. */
static void failing_file_stops_nothing(void **state)
{
	struct fixture *fx = *state;
	char pattern[160];
	struct sn_sinks s = { pattern, true, fx->dir };
	struct sn_sinks_report rep;

	snprintf(pattern, sizeof(pattern), "%s/%%n.jsonl", fx->missing);
	assert_int_equal(sn_sinks_write(&s, &fx->r, &rep), 1);
	assert_contains(rep.file.msg, "cannot open record_file");
	assert_contains(rep.file.msg, "/missing/n1.jsonl: No such file");
	assert_string_equal(rep.syslog.msg, "");
	assert_string_equal(rep.prom.msg, "");
	assert_syslog_has_record(fx);
	assert_true(exists(fx->prom));
}

/* A missing metrics directory: the file and syslog still get the line. */
static void failing_prom_stops_nothing(void **state)
{
	struct fixture *fx = *state;
	struct sn_sinks s = { fx->file_pattern, true, fx->missing };
	struct sn_sinks_report rep;

	assert_int_equal(sn_sinks_write(&s, &fx->r, &rep), 1);
	assert_string_equal(rep.file.msg, "");
	assert_contains(rep.prom.msg, fx->missing);
	assert_file_has_record(fx);
	assert_syslog_has_record(fx);
}

/* Both files refused (a FIFO planted as the record file): syslog goes. */
static void two_failures_each_named(void **state)
{
	struct fixture *fx = *state;
	struct sn_sinks s = { fx->file_pattern, true, fx->missing };
	struct sn_sinks_report rep;

	assert_int_equal(mkfifo(fx->file, 0600), 0);
	assert_int_equal(sn_sinks_write(&s, &fx->r, &rep), 2);
	assert_contains(rep.file.msg, "is a FIFO, not a regular file");
	assert_contains(rep.prom.msg, fx->missing);
	assert_string_equal(rep.syslog.msg, "");
	assert_syslog_has_record(fx);
}

/* A line that does not fit: the file says so; syslog's parts fit 1 KiB
 * each (the names cut); the metrics go. */
static void record_too_large(void **state)
{
	struct fixture *fx = *state;
	struct sn_sinks s = { fx->file_pattern, true, fx->dir };
	struct sn_sinks_report rep;
	static struct sn_warmup_result res;

	/* 64 GPUs whose names escape to 6 bytes a character. */
	res.n_gpus = SN_RESULT_MAX_GPUS;
	for (size_t i = 0; i < res.n_gpus; i++) {
		memset(res.gpus[i].name, 1, sizeof(res.gpus[i].name) - 1);
		res.gpus[i].nccl_mem_mib = -1;
	}
	fx->r.result = &res;
	assert_int_equal(sn_sinks_write(&s, &fx->r, &rep), 1);
	assert_contains(rep.file.msg, "larger than 32768 bytes");
	assert_string_equal(rep.syslog.msg, "");
	assert_string_equal(rep.prom.msg, "");
	assert_syslog_parts(2 + SN_RESULT_MAX_GPUS, SN_RESULT_MAX_GPUS,
			    fx->r.node);
	assert_false(exists(fx->file));
	assert_true(exists(fx->prom));
}

/* A reused pass ran nothing: the metrics are left alone. */
static void reused_pass_leaves_metrics(void **state)
{
	struct fixture *fx = *state;
	struct sn_sinks s = { fx->file_pattern, false, fx->dir };
	struct sn_sinks_report rep;

	fx->r.reused = true;
	fx->len = sn_record_format(&fx->r, fx->line, sizeof(fx->line));
	assert_int_equal(sn_sinks_write(&s, &fx->r, &rep), 0);
	assert_file_has_record(fx);
	assert_false(exists(fx->prom));
	assert_int_equal(syslog_count, 0);
}

/* A killed step's hang record (step_hang.c) is no warmup: no metrics. */
static void hang_record_leaves_metrics(void **state)
{
	struct fixture *fx = *state;
	struct sn_sinks s = { fx->file_pattern, false, fx->dir };
	struct sn_sinks_report rep;

	snprintf(fx->r.hang, sizeof(fx->r.hang), "rank 1 (task 1 on n1) is dead");
	fx->len = sn_record_format(&fx->r, fx->line, sizeof(fx->line));
	assert_int_equal(sn_sinks_write(&s, &fx->r, &rep), 0);
	assert_file_has_record(fx);
	assert_false(exists(fx->prom));
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(all_sinks_written),
		T(nothing_configured),
		T(failing_file_stops_nothing),
		T(failing_prom_stops_nothing),
		T(hang_record_leaves_metrics),
		T(two_failures_each_named),
		T(record_too_large),
		T(reused_pass_leaves_metrics),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}

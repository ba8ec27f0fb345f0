/* SPDX-License-Identifier: MIT */
/*
 * The fan-out of a fleet record (sinks.c): every configured sink is
 * tried whatever happened to the others, and each failure names its sink
 * and its cause.  syslog(3) is replaced below (this program's definition
 * wins over libc's), so the messages are counted without a syslog daemon.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core_testutil.h"
#include "prom.h"
#include "record.h"
#include "sinks.h"

/* What reached "syslog": the count and the last message. */
static int syslog_count;
static char syslog_last[SN_RECORD_MAX_BYTES + 64];

static void capture(const char *fmt, va_list ap)
{
	vsnprintf(syslog_last, sizeof(syslog_last), fmt, ap);
	syslog_count++;
}

/* Not from <syslog.h>: _FORTIFY_SOURCE makes syslog an inline wrapper
 * of __syslog_chk there; record.c calls one or the other. */
void syslog(int pri, const char *fmt, ...);
void __syslog_chk(int pri, int flag, const char *fmt, ...);

void syslog(int pri, const char *fmt, ...)
{
	va_list ap;

	(void)pri;
	va_start(ap, fmt);
	capture(fmt, ap);
	va_end(ap);
}

void __syslog_chk(int pri, int flag, const char *fmt, ...)
{
	va_list ap;

	(void)pri;
	(void)flag;
	va_start(ap, fmt);
	capture(fmt, ap);
	va_end(ap);
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
	syslog_last[0] = '\0';
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

static void assert_syslog_has_record(const struct fixture *fx)
{
	assert_int_equal(syslog_count, 1);
	assert_contains(syslog_last, "spank-nccl: record {\"record\":");
	/* The same line as the file's, without its newline. */
	assert_int_equal(strncmp(syslog_last + strlen("spank-nccl: record "),
				 fx->line, fx->len - 1), 0);
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

/* A line that does not fit: the file and syslog say so, metrics go. */
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
	assert_int_equal(sn_sinks_write(&s, &fx->r, &rep), 2);
	assert_contains(rep.file.msg, "larger than 32768 bytes");
	assert_contains(rep.syslog.msg, "larger than 32768 bytes");
	assert_string_equal(rep.prom.msg, "");
	assert_int_equal(syslog_count, 0);
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

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(all_sinks_written),
		T(nothing_configured),
		T(failing_file_stops_nothing),
		T(failing_prom_stops_nothing),
		T(two_failures_each_named),
		T(record_too_large),
		T(reused_pass_leaves_metrics),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}

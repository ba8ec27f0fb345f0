/* SPDX-License-Identifier: MIT */
/*
 * The helper protocol (src/core/protocol/helper_protocol.c): the exit-code table,
 * the document that quotes it (nccl-warmup(8)) and the
 * argument parsers the plugin and nccl-warmup share.
 */
#include <stdlib.h>

#include "core_testutil.h"

#include "protocol/fault.h"
#include "protocol/helper_protocol.h"

static void test_exit_names_and_hints(void **state)
{
	assert_string_equal(sn_warmup_exit_name(SN_WARMUP_DUPLICATE_BUSID),
			    "duplicate PCI bus ID");
	assert_string_equal(sn_warmup_exit_status(SN_WARMUP_DUPLICATE_BUSID),
			    "duplicate_busid");
	assert_true(strstr(sn_warmup_exit_hint(SN_WARMUP_DUPLICATE_BUSID),
			   "drain the node") != NULL);
	assert_true(strstr(sn_warmup_exit_hint(SN_WARMUP_TIMEOUT),
			   "nvidia-smi") != NULL);
	for (int code = 0; code <= SN_WARMUP_EXIT_LAST; code++) {
		assert_true(strlen(sn_warmup_exit_hint(code)) > 20);
		assert_string_not_equal(sn_warmup_exit_name(code),
					"unknown exit code");
	}
	assert_string_equal(sn_warmup_exit_name(42), "unknown exit code");
	assert_string_equal(sn_warmup_exit_status(-1), "internal");
	assert_true(strlen(sn_warmup_exit_hint(139)) > 20);
}

/* Whose fault (fault.c): the job's NCCL or settings never blame the node. */
static void test_fault_decide(void **state)
{
	static const struct {
		struct sn_fault_facts facts;
		enum sn_fault fault;
	} cases[] = {
		{ { SN_WARMUP_NCCL_ERROR, false, false }, SN_FAULT_NODE },
		/* nccl=PATH: invalid ELF header */
		{ { SN_WARMUP_NCCL_ERROR, true, false }, SN_FAULT_JOB },
		/* An unusable library of the job's is an NCCL failure only. */
		{ { SN_WARMUP_TIMEOUT, true, false }, SN_FAULT_NODE },
		{ { SN_WARMUP_NCCL_ERROR, false, true }, SN_FAULT_JOB },
		{ { SN_WARMUP_LOW_BANDWIDTH, false, true }, SN_FAULT_JOB },
		{ { SN_WARMUP_TRANSPORT, false, true }, SN_FAULT_JOB },
		/* Hardware stays the node's whatever the job set. */
		{ { SN_WARMUP_CUDA_ERROR, false, true }, SN_FAULT_NODE },
		{ { SN_WARMUP_DUPLICATE_BUSID, false, true }, SN_FAULT_NODE },
		/* Silent corruption: the node's whatever the job set. */
		{ { SN_WARMUP_WRONG_RESULT, true, true }, SN_FAULT_NODE },
		/* NVML's health and busy GPUs: the node's, NCCL_* or not. */
		{ { SN_WARMUP_GPU_HEALTH, true, true }, SN_FAULT_NODE },
		{ { SN_WARMUP_GPU_BUSY, true, true }, SN_FAULT_NODE },
		{ { SN_WARMUP_FABRIC_SETUP, false, false }, SN_FAULT_ENVIRONMENT },
		{ { SN_WARMUP_PEER_FAILED, false, false }, SN_FAULT_ENVIRONMENT },
		{ { SN_WARMUP_NO_GPUS, false, false }, SN_FAULT_JOB },
		{ { SN_WARMUP_OK, false, false }, SN_FAULT_NONE },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum sn_fault got = sn_fault_decide(&cases[i].facts);

		if (got != cases[i].fault)
			print_message("case %zu (exit %d)\n", i,
				      cases[i].facts.exit_code);
		assert_int_equal(got, cases[i].fault);
	}
	assert_null(sn_fault_name(SN_FAULT_NONE));
	for (int i = SN_FAULT_NODE; i < SN_FAULT_COUNT; i++)
		assert_int_equal(sn_fault_parse(sn_fault_name(i)), i);
	assert_int_equal(sn_fault_parse("Node"), SN_FAULT_NONE);
	assert_int_equal(sn_fault_parse(NULL), SN_FAULT_NONE);
	/* The root side's own classes. */
	assert_int_equal(sn_fault_of_class(SN_CLASS_CRASH), SN_FAULT_NODE);
	assert_int_equal(sn_fault_of_class(SN_CLASS_PEER_FAILED),
			 SN_FAULT_ENVIRONMENT);
	assert_false(sn_fault_from_helper(SN_CLASS_CRASH));
	assert_true(sn_fault_from_helper(SN_CLASS_NCCL_ERROR));
	/* NCCL_DEBUG only logs; NCCL_ALGO shapes what NCCL does. */
	assert_false(sn_fault_is_nccl_setting("NCCL_DEBUG=INFO"));
	assert_false(sn_fault_is_nccl_setting("NCCL_DEBUG_SUBSYS=INIT"));
	assert_false(sn_fault_is_nccl_setting("PATH=/bin"));
	assert_true(sn_fault_is_nccl_setting("NCCL_ALGO=Tree"));
	assert_true(sn_fault_is_nccl_setting("NCCL_DEBUGGER=1"));
	/* ras=step sets it in every step: no failure becomes the job's. */
	assert_false(sn_fault_is_nccl_setting("NCCL_RAS_ADDR=127.0.0.1:28100"));
	assert_false(sn_fault_is_nccl_setting("NCCL_RAS_ENABLE=0"));
	/* Named NCCL_* but never read by NCCL: images' labels, build paths. */
	assert_true(sn_fault_is_nccl_setting("NCCL_VERSIONS=1"));
	assert_false(sn_fault_is_nccl_setting("NCCL_VERSION=2.28.3-1"));
	assert_false(sn_fault_is_nccl_setting("NCCL_HOME=/opt/nccl"));
	assert_false(sn_fault_is_nccl_setting("NCCL_LIB_DIR=/x"));
	assert_false(sn_fault_is_nccl_setting("TORCH_NCCL_ASYNC=1"));
	assert_false(sn_fault_is_nccl_setting("NCCL_ALGO"));
}

/* A user error never says "report the node". */
static void test_fault_hints(void **state)
{
	(void)state;
	for (int code = 1; code <= SN_WARMUP_EXIT_LAST; code++) {
		const char *h = sn_fault_hint(code, SN_FAULT_JOB);

		if (code == SN_WARMUP_NO_GPUS)
			continue;
		assert_null(strstr(h, "report the node"));
		assert_null(strstr(h, "drain"));
		assert_non_null(strstr(h, "not a fault of the node"));
	}
	assert_string_equal(sn_fault_hint(SN_WARMUP_CUDA_ERROR, SN_FAULT_NODE),
			    sn_warmup_exit_hint(SN_WARMUP_CUDA_ERROR));
}

/* Counts LINES of TEXT and the characters the user reads of them, each
 * line with its "spank-nccl: ". */
static size_t told(const char *text, int *lines)
{
	size_t n = 0;

	*lines = 1;
	for (const char *p = text; *p; p++)
		if (*p == '\n')
			++*lines;
		else
			n++;
	return n + (size_t)*lines * strlen("spank-nccl: ");
}

/*
 * Every exit class, whoever is at fault: three lines (failed where; why;
 * what to do), SN_FAULT_TELL_MAX characters at most however long the
 * helper's message, never NCCL's debug advice, never both parties.
 */
static void test_fault_tell_every_class(void **state)
{
	static const enum sn_fault faults[] = {
		SN_FAULT_NODE, SN_FAULT_JOB, SN_FAULT_ENVIRONMENT,
	};
	char message[1200], out[2048];
	int lines;

	(void)state;
	snprintf(message, sizeof(message), "NCCL communicator init (rank 0) failed: unhandled system error (run with NCCL_DEBUG=WARN for details) (2): %0200d" SN_DETAIL_SEP "NCCL_* in effect: NCCL_ALGO=Tree", 7);
	for (int code = 1; code <= SN_WARMUP_EXIT_LAST; code++) {
		for (size_t f = 0; f < sizeof(faults) / sizeof(faults[0]); f++) {
			const char *hint = sn_fault_hint(code, faults[f]);
			struct sn_fault_tell_in in = {
				.node = "gpu-node-0173", .gpus = "0,1,2,3,4,5,6,7",
				.message = message, .hint = hint,
				/* As the plugin asks for it. */
				.nccl_advice = code == SN_WARMUP_NCCL_ERROR ||
					       code == SN_WARMUP_TIMEOUT,
			};
			char *l2, *l3;

			sn_fault_tell(&in, out, sizeof(out));
			if (told(out, &lines) > SN_FAULT_TELL_MAX || lines != 3)
				fail_msg("code %d fault %zu: %zu chars, %d lines: %s",
					 code, f, told(out, &lines), lines, out);
			if (strncmp(out, "warmup failed on node gpu-node-0173 (GPUs 0,1,2,3,4,5,6,7): NCCL communicator init (rank 0)", 91) != 0)
				fail_msg("code %d fault %zu: %s", code, f, out);
			assert_contains(out, "...\n");	/* cut, and says so */
			assert_not_contains(out, "for details)");
			assert_not_contains(out, "NCCL_* in effect");
			l2 = strchr(out, '\n') + 1;
			l3 = strchr(l2, '\n') + 1;
			/* Why, then what to do: both said. */
			assert_true(l3 - l2 > 10 && strlen(l3) > 10);
			assert_true(strncmp(l2, hint, (size_t)(l3 - l2 - 1)) == 0);
			if (in.nccl_advice)
				assert_contains(l3, "NCCL_DEBUG=INFO shows");
			if (strstr(out, "not a fault of the node"))
				assert_not_contains(out, "report the node");
			assert_not_contains(out, "--nccl-profile=");
		}
	}
}

/* Advice the user already followed is not given; detail under verbose. */
static void test_fault_tell_cases(void **state)
{
	static const char algo[] = "NCCL broadcast failed: NCCL_ALGO=Tree leaves it no algorithm on NCCL >= 2.24: unset NCCL_ALGO" SN_DETAIL_SEP "invalid usage (run with NCCL_DEBUG=WARN for details) (5); NCCL_* in effect: NCCL_ALGO=Tree NCCL_DEBUG=INFO";
	struct sn_fault_tell_in in = {
		.node = "n1", .gpus = "0,1", .message = algo,
		.hint = sn_fault_hint(SN_WARMUP_NCCL_ERROR, SN_FAULT_JOB),
		.nccl_debug = "INFO", .nccl_advice = true,
	};
	char out[2048];
	int lines;

	(void)state;
	sn_fault_tell(&in, out, sizeof(out));
	assert_string_equal(out,
		"warmup failed on node n1 (GPUs 0,1): NCCL broadcast failed: NCCL_ALGO=Tree leaves it no algorithm on NCCL >= 2.24: unset NCCL_ALGO\n"
		"the job's NCCL or NCCL_* setting failed, not a fault of the node\n"
		"fix or unset the setting named above");
	assert_true(told(out, &lines) <= SN_FAULT_TELL_MAX);
	/* NCCL_DEBUG=WARN (not INFO) set: INFO is worth saying. */
	in.nccl_debug = "WARN";
	sn_fault_tell(&in, out, sizeof(out));
	assert_contains(out, "fix or unset the setting named above (NCCL_DEBUG=INFO shows why)");
	in.nccl_debug = "trace";
	sn_fault_tell(&in, out, sizeof(out));
	assert_not_contains(out, "NCCL_DEBUG=INFO shows");
	/* verbose: a fourth line, all of the helper's message. */
	in.verbose = true;
	sn_fault_tell(&in, out, sizeof(out));
	told(out, &lines);
	assert_int_equal(lines, 4);
	assert_contains(out, "\ndetail: NCCL broadcast failed: ");
	assert_contains(out, "NCCL_* in effect: NCCL_ALGO=Tree NCCL_DEBUG=INFO");
	/* A wrong nccl=: said once, with the option the user typed. */
	in.verbose = false;
	in.message = "--nccl-warmup=...,nccl=/x: file or directory does not exist";
	sn_fault_tell(&in, out, sizeof(out));
	assert_contains(out, "(GPUs 0,1): --nccl-warmup=...,nccl=/x: file or directory does not exist\n");
	/* A tiny buffer: cut, terminated. */
	sn_fault_tell(&in, out, 16);
	assert_int_equal(strlen(out), 15);
}

static void test_table_in_code_order(void **state)
{
	size_t i, j;

	assert_int_equal(sn_warmup_n_exits, SN_WARMUP_EXIT_LAST + 1);
	for (i = 0; i < sn_warmup_n_exits; i++) {
		assert_int_equal(sn_warmup_exits[i].code, i);
		for (j = 0; j < i; j++)
			assert_string_not_equal(sn_warmup_exits[i].status,
						sn_warmup_exits[j].status);
	}
}

/* The text from the line holding START up to END (exclusive), in place. */
static char *section(char *text, const char *start, const char *end)
{
	char *s = strstr(text, start), *e;

	if (!s)
		fail_msg("no \"%s\" in the document", start);
	e = strstr(s + strlen(start), end);
	if (e)
		*e = '\0';
	return s;
}

/* Lines that start a table row with a number: man (tbl) or Markdown. */
static size_t count_rows(const char *text, bool markdown)
{
	size_t n = 0;
	const char *line = text;

	for (; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		int code;
		char c;

		if ((markdown ? sscanf(line, "| %d |%c", &code, &c)
			      : sscanf(line, "%d\t%c", &code, &c)) == 2)
			n++;
	}
	return n;
}

/*
 * The document at PATH quotes the table between START and END: one row a
 * code, nothing more.  Man page (tbl): "CODE<TAB>STATUS<TAB>...";
 * Markdown: "| CODE | `STATUS` | NAME |".
 */
static void check_doc(const char *path, const char *start, const char *end,
		      bool markdown)
{
	char *text = slurp(path);
	char *table = section(text, start, end);
	char row[256];
	size_t i;

	for (i = 0; i < sn_warmup_n_exits; i++) {
		const struct sn_warmup_exit_info *e = &sn_warmup_exits[i];

		if (markdown)
			snprintf(row, sizeof(row), "\n| %d | `%s` | %s |\n",
				 (int)i, e->status, e->name);
		else
			snprintf(row, sizeof(row), "\n%d\t%s\t", (int)i,
				 e->status);
		assert_contains(table, row);
	}
	assert_int_equal(count_rows(table, markdown), sn_warmup_n_exits);
	free(text);
}

static void test_man_page_agrees(void **state)
{
	check_doc(SN_SRCDIR "/man/nccl-warmup.8", ".SH EXIT STATUS", ".TE",
		  false);
}

static void test_timeout(void **state)
{
	unsigned int t = 7;

	assert_int_equal(sn_parse_timeout_s("1", &t), 0);
	assert_int_equal(t, 1);
	assert_int_equal(sn_parse_timeout_s("540", &t), 0);
	assert_int_equal(t, SN_WARMUP_TIMEOUT_MAX_S);
	assert_int_equal(sn_parse_timeout_s("0060", &t), 0);
	assert_int_equal(t, 60);
	t = 7;
	for (const char *const *v = (const char *const[]){ "0", "541", "",
		"-1", "+5", " 5", "5s", "1.5", "0x10", "99999999999999999999",
		NULL }; *v; v++)
		assert_int_equal(sn_parse_timeout_s(*v, &t), -1);
	assert_int_equal(t, 7);
}

static void test_bytes(void **state)
{
	unsigned long long b = 7;

	assert_int_equal(sn_parse_bytes("1K", &b), 0);
	assert_int_equal(b, 1024);
	assert_int_equal(sn_parse_bytes("64m", &b), 0);
	assert_int_equal(b, SN_WARMUP_BYTES_DEFAULT);
	assert_int_equal(sn_parse_bytes("16G", &b), 0);
	assert_int_equal(b, SN_WARMUP_BYTES_MAX);
	assert_int_equal(sn_parse_bytes("1048576", &b), 0);
	assert_int_equal(b, 1ULL << 20);
	/* Leading zeros count for nothing, however many (once: 12 digits). */
	assert_int_equal(sn_parse_bytes("00000000000000001k", &b), 0);
	assert_int_equal(b, 1024);
	b = 7;
	for (const char *const *v = (const char *const[]){ "3", "1023",
		"17G", "1T", "", "K", "-1M", "1.5M", " 1M", "1MB",
		"9999999999999G", "+1M", "0x400", "1M ", "16777217K",
		"18446744073709551617", NULL }; *v; v++)
		assert_int_equal(sn_parse_bytes(*v, &b), -1);
	assert_int_equal(b, 7);
}

static void test_busbw_and_teardown(void **state)
{
	double d = 7;
	bool exit_ = false;

	assert_int_equal(sn_parse_busbw("0", &d), 0);
	assert_true(d == 0.0);
	assert_int_equal(sn_parse_busbw("37.5", &d), 0);
	assert_true(d == 37.5);
	d = 7;
	for (const char *const *v = (const char *const[]){ "-1", "inf",
		"nan", "0x10", "1e3", "1.2.3", "", ".", "100001", NULL };
	     *v; v++)
		assert_int_equal(sn_parse_busbw(*v, &d), -1);
	assert_true(d == 7);

	assert_int_equal(sn_parse_teardown("EXIT", &exit_), 0);
	assert_true(exit_);
	assert_int_equal(sn_parse_teardown("clean", &exit_), 0);
	assert_false(exit_);
	assert_int_equal(sn_parse_teardown("fast", &exit_), -1);
	assert_string_equal(sn_teardown_name(SN_WARMUP_TEARDOWN_EXIT_DEFAULT),
			    "exit");
}

static void test_fabric_transport(void **state)
{
	bool refuse = true;

	(void)state;
	assert_int_equal(sn_parse_fabric_transport("ANY", &refuse), 0);
	assert_false(refuse);
	assert_int_equal(sn_parse_fabric_transport("no-socket", &refuse), 0);
	assert_true(refuse);
	for (const char *const *v = (const char *const[]){ "", "ib",
		"no_socket", "no-socket ", "anything", NULL }; *v; v++)
		assert_int_equal(sn_parse_fabric_transport(*v, &refuse), -1);
	assert_true(refuse);
	assert_string_equal(sn_transport_policy_name(false), "any");
	assert_string_equal(sn_transport_policy_name(true), "no-socket");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_names_and_hints),
		cmocka_unit_test(test_table_in_code_order),
		cmocka_unit_test(test_fault_decide),
		cmocka_unit_test(test_fault_hints),
		cmocka_unit_test(test_man_page_agrees),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_busbw_and_teardown),
		cmocka_unit_test(test_fabric_transport),
		cmocka_unit_test(test_fault_tell_every_class),
		cmocka_unit_test(test_fault_tell_cases),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

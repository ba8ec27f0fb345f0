/* SPDX-License-Identifier: MIT */
/*
 * The helper protocol (src/core/protocol/helper_protocol.c): the exit-code table,
 * the documents that quote it (nccl-warmup(1), docs/design.md) and the
 * argument parsers the plugin and nccl-warmup share.
 */
#include <stdlib.h>

#include "core_testutil.h"

#include "helper_protocol.h"

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
	check_doc(SN_SRCDIR "/man/nccl-warmup.1", ".SH EXIT STATUS", ".TE",
		  false);
}

static void test_design_doc_agrees(void **state)
{
	check_doc(SN_SRCDIR "/docs/design.md", "## nccl-warmup exit codes",
		  "\n## ", true);
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
	b = 7;
	for (const char *const *v = (const char *const[]){ "3", "1023",
		"17G", "1T", "", "K", "-1M", "1.5M", " 1M", "1MB",
		"9999999999999G", NULL }; *v; v++)
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
		cmocka_unit_test(test_man_page_agrees),
		cmocka_unit_test(test_design_doc_agrees),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_busbw_and_teardown),
		cmocka_unit_test(test_fabric_transport),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

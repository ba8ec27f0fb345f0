/* SPDX-License-Identifier: MIT */
/* The SPANK_NCCL_APPLIED record: round trip, hostile input, revert. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profiles/applied.h"

static void round_trip(void **state)
{
	struct sn_applied a = { 0 }, b;
	struct sn_error err;
	char *text;

	assert_int_equal(sn_applied_add(&a, "A", NULL, "x,y:z=1"), 0);
	assert_int_equal(sn_applied_add(&a, "B", "old", NULL), 0);
	assert_int_equal(sn_applied_add(&a, "C", "", "\xff\x01"), 0);
	text = sn_applied_encode(&a);
	assert_non_null(text);
	assert_null(strchr(text, ';'));
	assert_int_equal(sn_applied_decode(text, &b, &err), 0);
	assert_int_equal(b.n, 3);
	assert_string_equal(b.entries[0].var, "A");
	assert_null(b.entries[0].before);
	assert_string_equal(b.entries[0].after, "x,y:z=1");
	assert_string_equal(b.entries[1].before, "old");
	assert_null(b.entries[1].after);
	assert_string_equal(b.entries[2].before, "");
	assert_string_equal(b.entries[2].after, "\xff\x01");
	free(text);
	sn_applied_free(&a);
	sn_applied_free(&b);
}

static void empty_record(void **state)
{
	struct sn_applied a = { 0 };
	struct sn_error err;
	char *text = sn_applied_encode(&a);

	assert_string_equal(text, "");
	assert_int_equal(sn_applied_decode(text, &a, &err), 0);
	assert_int_equal(a.n, 0);
	free(text);
}

static void hostile_records_are_refused(void **state)
{
	static const char *const bad[] = {
		"A", "A=", "A=-", "=-:-", "A=4:-", "A=zz:-", "A=-:00",
		"A=-:41,", ",A=-:41", "A=-:41,,B=-:42", "A=-:-:-x",
	};
	struct sn_applied a;
	struct sn_error err;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(sn_applied_decode(bad[i], &a, &err), -1);
		assert_non_null(strstr(err.msg, "SPANK_NCCL_APPLIED"));
		assert_int_equal(a.n, 0);
	}
}

static void too_many_entries_are_refused(void **state)
{
	struct sn_applied a = { 0 };
	size_t i;

	for (i = 0; i < SN_APPLIED_MAX_ENTRIES; i++)
		assert_int_equal(sn_applied_add(&a, "V", NULL, "1"), 0);
	assert_int_equal(sn_applied_add(&a, "V", NULL, "1"), -1);
	sn_applied_free(&a);
}

static void revert_restores_only_untouched_values(void **state)
{
	char *initial[] = { "OURS=1", "TOUCHED=user", "ADDED=1", NULL };
	struct sn_envlist list;
	struct sn_applied a = { 0 };
	struct sn_env env;

	sn_envlist_init_from(&list, initial);
	sn_envlist_bind(&list, &env);
	assert_int_equal(sn_applied_add(&a, "OURS", "0", "1"), 0);
	assert_int_equal(sn_applied_add(&a, "TOUCHED", NULL, "profile"), 0);
	assert_int_equal(sn_applied_add(&a, "ADDED", NULL, "1"), 0);
	assert_int_equal(sn_applied_add(&a, "REMOVED", "was", NULL), 0);
	assert_int_equal(sn_applied_revert(&a, &env), 3);
	assert_string_equal(sn_envlist_get(&list, "OURS"), "0");
	assert_string_equal(sn_envlist_get(&list, "TOUCHED"), "user");
	assert_null(sn_envlist_get(&list, "ADDED"));
	assert_string_equal(sn_envlist_get(&list, "REMOVED"), "was");
	sn_applied_free(&a);
	sn_envlist_free(&list);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(empty_record),
		cmocka_unit_test(hostile_records_are_refused),
		cmocka_unit_test(too_many_entries_are_refused),
		cmocka_unit_test(revert_restores_only_untouched_values),
	};

	return cmocka_run_group_tests_name("applied", tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "core_testutil.h"

#include "base/kvlist.h"

static void test_kvlist_find(void **state)
{
	char v[16];

	assert_true(sn_kvlist_find("a:1,b:2", "b", v, sizeof(v)));
	assert_string_equal(v, "2");
	assert_true(sn_kvlist_find("a:1,b:2,a:3", "a", v, sizeof(v)));
	assert_string_equal(v, "3");
	assert_true(sn_kvlist_find(" a : x y ", "a", v, sizeof(v)));
	assert_string_equal(v, "x y");
	assert_true(sn_kvlist_find("a:", "a", v, sizeof(v)));
	assert_string_equal(v, "");
	assert_true(sn_kvlist_find("k:v:w", "k", v, sizeof(v)));
	assert_string_equal(v, "v:w");
	assert_false(sn_kvlist_find("ab:1", "a", v, sizeof(v)));
	assert_false(sn_kvlist_find("a", "a", v, sizeof(v)));
	assert_false(sn_kvlist_find("", "a", v, sizeof(v)));
	assert_false(sn_kvlist_find(",,,", "a", v, sizeof(v)));
	assert_true(sn_kvlist_find("a:1", "a", NULL, 0));
	assert_true(sn_kvlist_find("a:0123456789abcdefXYZ", "a", v, sizeof(v)));
	assert_string_equal(v, "0123456789abcde");
}

static void test_kvlist_has(void **state)
{
	/* Value compared case-insensitively, key exactly; the last key wins. */
	assert_true(sn_kvlist_has("expandable_segments:True", "expandable_segments:true"));
	assert_true(sn_kvlist_has("a:1, b : X ", "b:x"));
	assert_false(sn_kvlist_has("a:1,a:2", "a:1"));
	assert_false(sn_kvlist_has("A:1", "a:1"));
	assert_false(sn_kvlist_has("a:1", "a"));
	assert_false(sn_kvlist_has("", "a:1"));
}

static void test_kv_key(void **state)
{
	assert_int_equal(sn_kv_key_len("abc:1"), 3);
	assert_int_equal(sn_kv_key_len("abc"), 3);
	assert_true(sn_kv_same_key("a:1", "a:2"));
	assert_false(sn_kv_same_key("a:1", "ab:1"));
	assert_false(sn_kv_same_key("ab:1", "a:1"));
}

static void put_is(const char *list, const char *kv, const char *want)
{
	char *got = sn_kvlist_put(list, kv);

	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_kvlist_put(void **state)
{
	/* Absent: appended (no ',' before the first item, none doubled). */
	put_is("", "a:1", "a:1");
	put_is("b:2", "a:1", "b:2,a:1");
	put_is("b:2,", "a:1", "b:2,a:1");
	/* Present: every item of that key replaced in place, others kept. */
	put_is("a:0,b:2", "a:1", "a:1,b:2");
	put_is(" a : 0 ,b:2,a:3", "a:1", "a:1,b:2,a:1");
	put_is("ab:0,a", "a:1", "ab:0,a,a:1");
	put_is("x,a:0", "a:1", "x,a:1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kvlist_find),
		cmocka_unit_test(test_kvlist_has),
		cmocka_unit_test(test_kv_key),
		cmocka_unit_test(test_kvlist_put),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <unistd.h>

#include "core_testutil.h"

#include "base/envlist.h"

static void test_init_get(void **state)
{
	char *initial[] = { "A=1", "B=", "C=x=y", "NOEQUALS", NULL };
	struct sn_envlist list;

	assert_int_equal(sn_envlist_init_from(&list, initial), 0);
	assert_int_equal(list.n, 4);
	assert_string_equal(sn_envlist_get(&list, "A"), "1");
	assert_string_equal(sn_envlist_get(&list, "B"), "");
	assert_string_equal(sn_envlist_get(&list, "C"), "x=y");
	assert_null(sn_envlist_get(&list, "NOEQUALS"));
	assert_null(sn_envlist_get(&list, "D"));
	/* A prefix of a name is not the name. */
	assert_null(sn_envlist_get(&list, ""));
	initial[0] = "changed";
	assert_string_equal(sn_envlist_get(&list, "A"), "1");
	sn_envlist_free(&list);
	assert_null(list.vars);
	assert_int_equal(sn_envlist_init_from(&list, NULL), 0);
	assert_int_equal(list.n, 0);
	sn_envlist_free(&list);
}

static void test_set_unset_order(void **state)
{
	char *initial[] = { "A=1", "AB=2", "C=3", NULL };
	struct sn_envlist list;
	size_t i;

	assert_int_equal(sn_envlist_init_from(&list, initial), 0);
	assert_int_equal(sn_envlist_set(&list, "A", "one"), 0);
	assert_string_equal(list.vars[0], "A=one");
	assert_string_equal(sn_envlist_get(&list, "AB"), "2");
	assert_int_equal(sn_envlist_set(&list, "D", ""), 0);
	assert_string_equal(list.vars[3], "D=");
	assert_int_equal(sn_envlist_unset(&list, "AB"), 0);
	assert_int_equal(list.n, 3);
	assert_string_equal(list.vars[0], "A=one");
	assert_string_equal(list.vars[1], "C=3");
	assert_string_equal(list.vars[2], "D=");
	/* Unsetting an absent variable is not an error. */
	assert_int_equal(sn_envlist_unset(&list, "ZZ"), 0);
	assert_int_equal(list.n, 3);
	assert_int_equal(sn_envlist_set(&list, "", "x"), -1);
	assert_int_equal(sn_envlist_set(&list, "A=B", "x"), -1);
	/* Growth past the initial capacity. */
	for (i = 0; i < 100; i++) {
		char name[16];

		snprintf(name, sizeof(name), "V%zu", i);
		assert_int_equal(sn_envlist_set(&list, name, name), 0);
	}
	assert_int_equal(list.n, 103);
	assert_string_equal(sn_envlist_get(&list, "V99"), "V99");
	sn_envlist_free(&list);
}

static void test_bind(void **state)
{
	char *initial[] = { "LONG=0123456789", NULL };
	struct sn_envlist list;
	struct sn_env env;
	char buf[8];

	assert_int_equal(sn_envlist_init_from(&list, initial), 0);
	sn_envlist_bind(&list, &env);
	assert_ptr_equal(env.ctx, &list);
	assert_int_equal(env.get(env.ctx, "MISSING", buf, sizeof(buf)), 0);
	/* Too long for the buffer: -1, never a truncated value. */
	assert_int_equal(env.get(env.ctx, "LONG", buf, sizeof(buf)), -1);
	assert_int_equal(env.set(env.ctx, "S", "1234567"), 0);
	assert_int_equal(env.get(env.ctx, "S", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "1234567");
	assert_int_equal(env.unset(env.ctx, "S"), 0);
	assert_int_equal(env.get(env.ctx, "S", buf, sizeof(buf)), 0);
	sn_envlist_free(&list);
}

/* /proc/PID/environ as the process started (make check and valgrind
 * start it with PATH): this one's own, by pid. */
static void test_proc_environ_read(void **state)
{
	static char buf[256 * 1024];
	char small[8];
	long n = sn_proc_environ_read((long)getpid(), buf, sizeof(buf));
	bool found = false;

	(void)state;
	assert_true(n > 0);
	assert_int_equal(buf[n], '\0');
	for (char *kv = buf; kv < buf + n; kv += strlen(kv) + 1)
		found |= strncmp(kv, "PATH=", 5) == 0;
	assert_true(found);
	/* Cut to the buffer, still terminated. */
	assert_int_equal(sn_proc_environ_read((long)getpid(), small,
					      sizeof(small)), 7);
	assert_int_equal(small[7], '\0');
	assert_int_equal(sn_proc_environ_read(-1, buf, sizeof(buf)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_get),
		cmocka_unit_test(test_set_unset_order),
		cmocka_unit_test(test_bind),
		cmocka_unit_test(test_proc_environ_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

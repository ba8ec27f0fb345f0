/* SPDX-License-Identifier: MIT */
#include "core_testutil.h"

#include "profiles/profile_file.h"
#include "profiles/rules.h"

/* One rule per line of the table, evaluated against one environment. */
struct rule_case {
	const char *when;	/* the rule's "when" lines */
	char *env[5];
	bool match;
};

static const struct rule_case cases[] = {
	/* = : any variable equals any value, case-insensitively */
	{ "when NCCL_ALGO = Tree\n", { "NCCL_ALGO=Tree" }, true },
	{ "when NCCL_ALGO = Tree\n", { "NCCL_ALGO=tree" }, true },
	{ "when NCCL_ALGO = Tree\n", { "NCCL_ALGO=Ring" }, false },
	{ "when NCCL_ALGO = Tree\n", { NULL }, false },
	{ "when NCCL_ALGO = Tree\n", { "NCCL_ALGO=" }, false },
	{ "when NCCL_ALGO = Tree\n", { "NCCL_ALGO=Tree,Ring" }, false },
	{ "when NCCL_ALGO = Ring|Tree\n", { "NCCL_ALGO=ring" }, true },
	{ "when A,B = 1\n", { "B=1" }, true },
	{ "when A,B = 1\n", { "A=2", "B=3" }, false },
	/* != : no variable equals any value; unset counts as not equal */
	{ "when NCCL_ALGO != Tree\n", { NULL }, true },
	{ "when NCCL_ALGO != Tree\n", { "NCCL_ALGO=Ring" }, true },
	{ "when NCCL_ALGO != Tree\n", { "NCCL_ALGO=TREE" }, false },
	{ "when NCCL_ALGO != Tree|Ring\n", { "NCCL_ALGO=ring" }, false },
	{ "when A,B != 1\n", { "A=2", "B=1" }, false },
	{ "when A,B != 1\n", { "A=2", "B=3" }, true },
	/* has: KEY exact, VALUE case-insensitive, the last KEY wins */
	{ "when P has expandable_segments:True\n", { "P=expandable_segments:True" }, true },
	{ "when P has expandable_segments:True\n", { "P=a:1,expandable_segments:true" }, true },
	{ "when P has expandable_segments:True\n", { "P=a:1, expandable_segments : True ,b:2" }, true },
	{ "when P has expandable_segments:True\n", { "P=Expandable_Segments:True" }, false },
	{ "when P has expandable_segments:True\n", { "P=expandable_segments:False" }, false },
	{ "when P has expandable_segments:True\n", { "P=expandable_segments:True,expandable_segments:False" }, false },
	{ "when P has expandable_segments:True\n", { "P=expandable_segments" }, false },
	{ "when P has expandable_segments:True\n", { NULL }, false },
	{ "when P,Q has k:v\n", { "P=x:y", "Q=k:v" }, true },
	/* set / unset: present and non-empty */
	{ "when A set\n", { "A=1" }, true },
	{ "when A set\n", { "A=" }, false },
	{ "when A set\n", { NULL }, false },
	{ "when A,B set\n", { "B=x" }, true },
	{ "when A unset\n", { NULL }, true },
	{ "when A unset\n", { "A=" }, true },
	{ "when A unset\n", { "A=1" }, false },
	{ "when A,B unset\n", { "B=1" }, false },
	{ "when A,B unset\n", { "C=1" }, true },
	/* all conditions must hold */
	{ "when A set\nwhen B = 1\n", { "A=x", "B=1" }, true },
	{ "when A set\nwhen B = 1\n", { "A=x", "B=2" }, false },
	{ "when A set\nwhen B = 1\n", { "B=1" }, false },
};

static void test_rule_table(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sn_profile_set set;
		struct sn_error err = { "" };
		struct fake_env env;
		char text[512];

		snprintf(text, sizeof(text), "[rule r]\nmessage = m\n%s",
			 cases[i].when);
		if (sn_profile_set_parse(&set, text, "r.conf", &err) != 0)
			fail_msg("case %zu: %s", i, err.msg);
		fake_env_init(&env, cases[i].env);
		if (sn_rule_matches(&set.rules[0], &env.env) != cases[i].match)
			fail_msg("case %zu (%s): expected %s", i, cases[i].when,
				 cases[i].match ? "a match" : "no match");
		fake_env_free(&env);
		sn_profile_set_free(&set);
	}
}

static void test_unreadable_value(void **state)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };
	struct fake_env env;
	static const char text[] =
		"[rule eq]\nmessage = m\nwhen A = x\n"
		"[rule ne]\nmessage = m\nwhen A != x\n"
		"[rule set]\nmessage = m\nwhen A set\n";

	assert_int_equal(sn_profile_set_parse(&set, text, "r.conf", &err), 0);
	fake_env_init(&env, NULL);
	/* A value too long to read is present but equals nothing. */
	env.fail_get = 1;
	assert_false(sn_rule_matches(&set.rules[0], &env.env));
	assert_true(sn_rule_matches(&set.rules[1], &env.env));
	assert_true(sn_rule_matches(&set.rules[2], &env.env));
	fake_env_free(&env);
	sn_profile_set_free(&set);
}

static void test_evaluate(void **state)
{
	static const char text[] =
		"[rule one]\nlevel = error\nmessage = first\nwhen A set\n"
		"[rule two]\nmessage = second\nwhen B set\n"
		"[rule three]\nmessage = third\nwhen A = 1\n";
	char *initial[] = { "A=1", NULL };
	struct sn_profile_set set;
	struct sn_error err = { "" };
	struct fake_env env;
	const struct sn_rule *matched[4];

	assert_int_equal(sn_profile_set_parse(&set, text, "r.conf", &err), 0);
	fake_env_init(&env, initial);
	assert_int_equal(sn_rules_evaluate(&set, &env.env, matched, 4), 2);
	assert_string_equal(matched[0]->name, "one");
	assert_int_equal(matched[0]->level, SN_RULE_ERROR);
	assert_string_equal(matched[1]->name, "three");
	/* MAX caps what is written and returned. */
	assert_int_equal(sn_rules_evaluate(&set, &env.env, matched, 1), 1);
	assert_string_equal(matched[0]->name, "one");
	assert_int_equal(sn_rules_evaluate(&set, &env.env, matched, 0), 0);
	fake_env_free(&env);
	sn_profile_set_free(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_table),
		cmocka_unit_test(test_unreadable_value),
		cmocka_unit_test(test_evaluate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

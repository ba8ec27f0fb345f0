/* SPDX-License-Identifier: MIT */
#include "core_testutil.h"

#include <stdlib.h>

#include "env_apply.h"
#include "profile_file.h"
#include "resolve.h"

/* Builds a plan straight from one profile's text. */
struct planned {
	struct sn_profile_set set;
	struct sn_plan plan;
};

static void plan_from(struct planned *p, const char *text)
{
	struct sn_profile_request req = { .given = true, .count = 1 };
	struct sn_error err = { "" };
	char *full = malloc(strlen(text) + 32);

	assert_non_null(full);
	sprintf(full, "[profile prof]\n%s", text);
	if (sn_profile_set_parse(&p->set, full, "a.conf", &err) != 0)
		fail_msg("%s", err.msg);
	free(full);
	strcpy(req.names[0], "prof");
	if (sn_resolve(&p->set, NULL, &req, &p->plan, &err) != 0)
		fail_msg("%s", err.msg);
}

static void planned_free(struct planned *p)
{
	sn_plan_free(&p->plan);
	sn_profile_set_free(&p->set);
}

struct apply_case {
	const char *ops;		/* profile body */
	char *env[6];			/* initial environment */
	const char *expect_env;		/* fake_env_dump() afterwards */
	size_t n_set, n_unset, n_notices;
	const char *notice;		/* first notice, formatted; or NULL */
};

static const struct apply_case cases[] = {
	/* set */
	{ "set NCCL_ALGO=Tree\n", { NULL }, "NCCL_ALGO=Tree", 1, 0, 0, NULL },
	{ "set NCCL_ALGO=Tree\n", { "NCCL_ALGO=Tree" }, "NCCL_ALGO=Tree", 0, 0, 0, NULL },
	{ "set NCCL_ALGO=Tree\n", { "NCCL_ALGO=Ring" }, "NCCL_ALGO=Ring", 0, 0, 1,
	  "NCCL_ALGO is already set to \"Ring\" in your environment; profile \"prof\" wants \"Tree\": keeping yours (unset it to use the profile)" },
	{ "set NCCL_ALGO=Tree\n", { "NCCL_ALGO=" }, "NCCL_ALGO=", 0, 0, 1, NULL },
	{ "set EMPTY=\n", { NULL }, "EMPTY=", 1, 0, 0, NULL },
	{ "force set NCCL_DEBUG=WARN\n", { "NCCL_DEBUG=INFO" }, "NCCL_DEBUG=WARN", 1, 0, 1,
	  "profile \"prof\" replaced your NCCL_DEBUG=\"INFO\" with \"WARN\"" },
	{ "force set NCCL_DEBUG=WARN\n", { "NCCL_DEBUG=WARN" }, "NCCL_DEBUG=WARN", 0, 0, 0, NULL },
	{ "force set NCCL_DEBUG=WARN\n", { NULL }, "NCCL_DEBUG=WARN", 1, 0, 0, NULL },
	/* default */
	{ "default NCCL_DEBUG=WARN\n", { NULL }, "NCCL_DEBUG=WARN", 1, 0, 0, NULL },
	{ "default NCCL_DEBUG=WARN\n", { "NCCL_DEBUG=INFO" }, "NCCL_DEBUG=INFO", 0, 0, 0, NULL },
	{ "default NCCL_DEBUG=WARN\n", { "NCCL_DEBUG=" }, "NCCL_DEBUG=", 0, 0, 0, NULL },
	/* unset */
	{ "unset NCCL_PROTO\n", { NULL }, "", 0, 0, 0, NULL },
	{ "unset NCCL_PROTO\n", { "NCCL_PROTO=LL" }, "NCCL_PROTO=LL", 0, 0, 1,
	  "NCCL_PROTO is set to \"LL\" in your environment; profile \"prof\" wants it unset: keeping yours (unset it to use the profile)" },
	{ "force unset NCCL_PROTO\n", { "A=1", "NCCL_PROTO=LL", "B=2" }, "A=1;B=2", 0, 1, 1,
	  "profile \"prof\" removed your NCCL_PROTO=\"LL\"" },
	{ "force unset NCCL_PROTO\n", { "A=1" }, "A=1", 0, 0, 0, NULL },
	/* merge */
	{ "merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True\n", { NULL },
	  "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", 1, 0, 0, NULL },
	{ "merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True\n", { "PYTORCH_CUDA_ALLOC_CONF=" },
	  "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", 1, 0, 0, NULL },
	{ "merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True\n",
	  { "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128,garbage_collection_threshold:0.6" },
	  "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128,garbage_collection_threshold:0.6,expandable_segments:True", 1, 0, 0, NULL },
	{ "merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True\n",
	  { "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128," },
	  "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128,expandable_segments:True", 1, 0, 0, NULL },
	{ "merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True\n",
	  { "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,max_split_size_mb:128" },
	  "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,max_split_size_mb:128", 0, 0, 0, NULL },
	{ "merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True\n",
	  { "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128,expandable_segments:False" },
	  "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128,expandable_segments:False", 0, 0, 1,
	  "PYTORCH_CUDA_ALLOC_CONF in your environment has \"expandable_segments:False\"; profile \"prof\" wants \"expandable_segments:True\": keeping yours (remove expandable_segments from PYTORCH_CUDA_ALLOC_CONF to use the profile)" },
	{ "force merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True\n",
	  { "PYTORCH_CUDA_ALLOC_CONF=a:1, expandable_segments : False,b:2" },
	  "PYTORCH_CUDA_ALLOC_CONF=a:1,expandable_segments:True,b:2", 1, 0, 1,
	  "profile \"prof\" replaced \"expandable_segments:False\" with \"expandable_segments:True\" in your PYTORCH_CUDA_ALLOC_CONF" },
	{ "force merge PYTORCH_CUDA_ALLOC_CONF k:v\n",
	  { "PYTORCH_CUDA_ALLOC_CONF=k:1,x:2,k:3" },
	  "PYTORCH_CUDA_ALLOC_CONF=k:v,x:2,k:v", 1, 0, 1, NULL },
	/* several merges into one variable, and everything together */
	{ "merge X a:1\nmerge X b:2\n", { NULL }, "X=a:1,b:2", 1, 0, 0, NULL },
	{ "merge X a:1\nmerge X b:2\n", { "X=b:2" }, "X=b:2,a:1", 1, 0, 0, NULL },
	{ "set NCCL_ALGO=Tree\ndefault NCCL_DEBUG=WARN\nforce unset NCCL_X\nmerge P k:v\n",
	  { "KEEP=1", "NCCL_ALGO=Ring", "NCCL_X=1" },
	  "KEEP=1;NCCL_ALGO=Ring;NCCL_DEBUG=WARN;P=k:v", 2, 1, 2, NULL },
};

static void test_apply_table(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct apply_case *c = &cases[i];
		struct planned p;
		struct fake_env env;
		struct sn_apply_report report;
		struct sn_error err = { "" };
		char dump[1024], msg[1024];

		plan_from(&p, c->ops);
		fake_env_init(&env, c->env);
		if (sn_plan_apply(&p.plan, &env.env, &report, &err) != 0)
			fail_msg("case %zu: %s", i, err.msg);
		fake_env_dump(&env, dump, sizeof(dump));
		if (strcmp(dump, c->expect_env) != 0)
			fail_msg("case %zu: env \"%s\", expected \"%s\"", i, dump,
				 c->expect_env);
		if (report.n_set != c->n_set || report.n_unset != c->n_unset ||
		    report.n_notices != c->n_notices)
			fail_msg("case %zu: set %zu unset %zu notices %zu", i,
				 report.n_set, report.n_unset, report.n_notices);
		if (c->notice) {
			sn_notice_format(&report.notices[0], msg, sizeof(msg));
			assert_string_equal(msg, c->notice);
		}
		sn_apply_report_free(&report);
		assert_null(report.notices);
		fake_env_free(&env);
		planned_free(&p);
	}
}

static void test_notice_fields(void **state)
{
	struct planned p;
	struct fake_env env;
	struct sn_apply_report report;
	struct sn_error err = { "" };
	char *initial[] = { "NCCL_ALGO=Ring", NULL };

	plan_from(&p, "set NCCL_ALGO=Tree\n");
	fake_env_init(&env, initial);
	assert_int_equal(sn_plan_apply(&p.plan, &env.env, &report, &err), 0);
	assert_int_equal(report.n_notices, 1);
	assert_int_equal(report.notices[0].kind, SN_NOTICE_USER_KEPT);
	assert_int_equal(report.notices[0].op, SN_OP_SET);
	assert_string_equal(report.notices[0].var, "NCCL_ALGO");
	assert_string_equal(report.notices[0].profile, "prof");
	assert_string_equal(report.notices[0].user_value, "Ring");
	assert_string_equal(report.notices[0].profile_value, "Tree");
	sn_apply_report_free(&report);
	fake_env_free(&env);
	planned_free(&p);
}

/* The report lists exactly what was written, for SPANK_NCCL_APPLIED. */
static void test_written_record(void **state)
{
	struct planned p;
	struct fake_env env;
	struct sn_apply_report report;
	struct sn_error err = { "" };
	char *initial[] = { "NCCL_ALGO=Ring", "PYTORCH_CUDA_ALLOC_CONF=a:1",
			    "NCCL_DEBUG=INFO", NULL };

	plan_from(&p, "set NCCL_ALGO=Tree\n"
		      "merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True\n"
		      "set NCCL_CUMEM_ENABLE=0\n"
		      "force unset NCCL_DEBUG\n");
	fake_env_init(&env, initial);
	assert_int_equal(sn_plan_apply(&p.plan, &env.env, &report, &err), 0);
	assert_false(report.written_lost);
	assert_int_equal(report.written.n, 3);	/* NCCL_ALGO: user kept */
	assert_string_equal(report.written.entries[0].var,
			    "PYTORCH_CUDA_ALLOC_CONF");
	assert_string_equal(report.written.entries[0].before, "a:1");
	assert_string_equal(report.written.entries[0].after,
			    "a:1,expandable_segments:True");
	assert_string_equal(report.written.entries[1].var, "NCCL_CUMEM_ENABLE");
	assert_null(report.written.entries[1].before);
	assert_string_equal(report.written.entries[1].after, "0");
	assert_string_equal(report.written.entries[2].var, "NCCL_DEBUG");
	assert_string_equal(report.written.entries[2].before, "INFO");
	assert_null(report.written.entries[2].after);
	sn_apply_report_free(&report);
	fake_env_free(&env);
	planned_free(&p);
}

static void test_notice_truncates(void **state)
{
	struct planned p;
	struct fake_env env;
	struct sn_apply_report report;
	struct sn_error err = { "" };
	static char entry[3000];
	char *initial[] = { entry, NULL };
	char msg[2048];

	strcpy(entry, "NCCL_ALGO=");
	memset(entry + 10, 'r', 2000);
	entry[15] = '\n';
	plan_from(&p, "set NCCL_ALGO=Tree\n");
	fake_env_init(&env, initial);
	assert_int_equal(sn_plan_apply(&p.plan, &env.env, &report, &err), 0);
	assert_int_equal(strlen(report.notices[0].user_value), 255);
	assert_contains(report.notices[0].user_value, "rrr...");
	/* Control bytes of the user's value are not echoed. */
	assert_not_contains(report.notices[0].user_value, "\n");
	assert_true(strncmp(report.notices[0].user_value, "rrrrr?rrr", 9) == 0);
	sn_notice_format(&report.notices[0], msg, sizeof(msg));
	assert_contains(msg, "wants \"Tree\"");
	sn_notice_format(&report.notices[0], msg, 10);
	assert_int_equal(strlen(msg), 9);
	sn_apply_report_free(&report);
	fake_env_free(&env);
	planned_free(&p);
}

static void test_rollback(void **state)
{
	static const char ops[] =
		"set A=new\n"
		"force set B=new\n"
		"force unset C\n"
		"merge D k:v\n"
		"set E=new\n";
	char *initial[] = { "B=old", "C=old", "D=x:1", "KEEP=1", NULL };
	int fail_at;

	/* Five writes; fail each in turn: the environment must not change. */
	for (fail_at = 1; fail_at <= 5; fail_at++) {
		struct planned p;
		struct fake_env env;
		struct sn_apply_report report;
		struct sn_error err = { "" };
		char before[512], after[512];
		static const char *const names[] = { "A", "B", "C", "D", "E" };

		plan_from(&p, ops);
		fake_env_init(&env, initial);
		fake_env_dump(&env, before, sizeof(before));
		env.fail_write = fail_at;
		assert_int_equal(sn_plan_apply(&p.plan, &env.env, &report, &err),
				 -1);
		assert_contains(err.msg, names[fail_at - 1]);
		assert_contains(err.msg, fail_at == 3 ? "cannot unset C"
						       : "cannot set");
		assert_contains(err.msg, "no profile setting was applied");
		fake_env_dump(&env, after, sizeof(after));
		/* Same variables, same values (order may differ after restore). */
		for (size_t i = 0; initial[i]; i++) {
			char *eq = strchr(initial[i], '=');
			char name[8];

			snprintf(name, sizeof(name), "%.*s", (int)(eq - initial[i]),
				 initial[i]);
			assert_non_null(sn_envlist_get(&env.list, name));
			assert_string_equal(sn_envlist_get(&env.list, name), eq + 1);
		}
		assert_null(sn_envlist_get(&env.list, "A"));
		assert_null(sn_envlist_get(&env.list, "E"));
		assert_int_equal(env.list.n, 4);
		assert_int_equal(report.n_set, 0);
		assert_int_equal(report.n_unset, 0);
		assert_int_equal(report.n_notices, 0);
		assert_null(report.notices);
		fake_env_free(&env);
		planned_free(&p);
	}
}

static void test_rollback_removes_new_variable(void **state)
{
	struct planned p;
	struct fake_env env;
	struct sn_apply_report report;
	struct sn_error err = { "" };

	plan_from(&p, "set A=1\nset B=2\n");
	fake_env_init(&env, NULL);
	/* B fails; A, which was not set before, must be unset again. */
	env.fail_write = 2;
	assert_int_equal(sn_plan_apply(&p.plan, &env.env, &report, &err), -1);
	assert_contains(err.msg, "cannot set B");
	assert_null(sn_envlist_get(&env.list, "A"));
	fake_env_free(&env);
	planned_free(&p);
}

static int fail_after_first(void *ctx, const char *name, const char *value)
{
	struct fake_env *f = ctx;

	if (++f->writes >= 2)
		return -1;
	return sn_envlist_set(&f->list, name, value);
}

static int unset_fails(void *ctx, const char *name)
{
	return -1;
}

static void test_restore_failure_reported(void **state)
{
	struct planned p;
	struct fake_env env;
	struct sn_apply_report report;
	struct sn_error err = { "" };

	plan_from(&p, "set A=1\nset B=2\n");
	fake_env_init(&env, NULL);
	env.env.set = fail_after_first;
	env.env.unset = unset_fails;
	assert_int_equal(sn_plan_apply(&p.plan, &env.env, &report, &err), -1);
	assert_contains(err.msg, "cannot set B in the job environment; restoring the variables already written also failed");
	fake_env_free(&env);
	planned_free(&p);
}

static void test_get_failure(void **state)
{
	struct planned p;
	struct fake_env env;
	struct sn_apply_report report;
	struct sn_error err = { "" };

	plan_from(&p, "set A=1\n");
	fake_env_init(&env, NULL);
	env.fail_get = 1;
	assert_int_equal(sn_plan_apply(&p.plan, &env.env, &report, &err), -1);
	assert_contains(err.msg, "cannot read A from the job environment");
	assert_contains(err.msg, "nothing was applied");
	assert_int_equal(env.writes, 0);
	fake_env_free(&env);
	planned_free(&p);
}

static void test_empty_plan(void **state)
{
	struct sn_plan plan = { 0 };
	struct fake_env env;
	struct sn_apply_report report;
	struct sn_error err = { "" };

	fake_env_init(&env, NULL);
	assert_int_equal(sn_plan_apply(&plan, &env.env, &report, &err), 0);
	assert_int_equal(report.n_set + report.n_unset + report.n_notices, 0);
	assert_int_equal(env.writes, 0);
	sn_apply_report_free(&report);
	fake_env_free(&env);
}

/* A step's cycle: the earlier step's values go back, this step's are
 * applied and recorded (one record, this step's only). */
static void test_step_cycle(void **state)
{
	struct planned first, second;
	struct fake_env env;
	struct sn_apply_report report;
	struct sn_error err = { "" };
	char dump[1024];
	char *initial[] = { "NCCL_DEBUG=INFO", NULL };

	plan_from(&first, "set NCCL_ALGO=Tree\nforce unset NCCL_DEBUG\n");
	plan_from(&second, "set NCCL_PROTO=Simple\n");
	fake_env_init(&env, initial);
	assert_int_equal(sn_step_env_apply(&first.plan, &env.env, &report,
					   &err), 0);
	assert_false(report.record_lost);
	assert_false(report.inherited_ignored);
	sn_apply_report_free(&report);
	assert_non_null(sn_envlist_get(&env.list, SN_ENV_APPLIED));
	assert_null(sn_envlist_get(&env.list, "NCCL_DEBUG"));

	/* The next step (inheriting that environment) asks for another. */
	assert_int_equal(sn_step_env_apply(&second.plan, &env.env, &report,
					   &err), 0);
	assert_int_equal(report.n_set, 1);
	sn_apply_report_free(&report);
	assert_string_equal(sn_envlist_get(&env.list, "NCCL_DEBUG"), "INFO");
	assert_null(sn_envlist_get(&env.list, "NCCL_ALGO"));
	assert_string_equal(sn_envlist_get(&env.list, "NCCL_PROTO"), "Simple");

	/* No profiles (--nccl-profile=none): only the revert, record gone. */
	assert_int_equal(sn_step_env_apply(NULL, &env.env, &report, &err), 0);
	sn_apply_report_free(&report);
	fake_env_dump(&env, dump, sizeof(dump));
	assert_string_equal(dump, "NCCL_DEBUG=INFO");
	fake_env_free(&env);
	planned_free(&first);
	planned_free(&second);
}

static void test_step_cycle_bad_record(void **state)
{
	struct planned p;
	struct fake_env env;
	struct sn_apply_report report;
	struct sn_error err = { "" };
	char dump[1024];
	char *garbage[] = { SN_ENV_APPLIED "=not a record", NULL };

	plan_from(&p, "set NCCL_ALGO=Tree\n");
	fake_env_init(&env, garbage);
	assert_int_equal(sn_step_env_apply(&p.plan, &env.env, &report, &err),
			 0);
	assert_true(report.inherited_ignored);
	assert_true(report.inherited_error.msg[0] != '\0');
	sn_apply_report_free(&report);
	assert_string_equal(sn_envlist_get(&env.list, "NCCL_ALGO"), "Tree");
	assert_string_not_equal(sn_envlist_get(&env.list, SN_ENV_APPLIED),
				"not a record");
	fake_env_free(&env);

	/* Removing the inherited record fails: refused, with the reason. */
	fake_env_init(&env, garbage);
	env.fail_write = 1;
	assert_int_equal(sn_step_env_apply(&p.plan, &env.env, &report, &err),
			 -1);
	assert_contains(err.msg, "cannot restore the variables");
	sn_apply_report_free(&report);
	fake_env_dump(&env, dump, sizeof(dump));
	assert_string_equal(dump, SN_ENV_APPLIED "=not a record");
	fake_env_free(&env);

	/* Applying fails: the message names the profiles. */
	fake_env_init(&env, NULL);
	env.fail_write = 1;
	assert_int_equal(sn_step_env_apply(&p.plan, &env.env, &report, &err),
			 -1);
	assert_contains(err.msg, "profiles prof not applied: ");
	sn_apply_report_free(&report);
	fake_env_free(&env);
	planned_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_apply_table),
		cmocka_unit_test(test_notice_fields),
		cmocka_unit_test(test_written_record),
		cmocka_unit_test(test_notice_truncates),
		cmocka_unit_test(test_rollback),
		cmocka_unit_test(test_rollback_removes_new_variable),
		cmocka_unit_test(test_restore_failure_reported),
		cmocka_unit_test(test_get_failure),
		cmocka_unit_test(test_empty_plan),
		cmocka_unit_test(test_step_cycle),
		cmocka_unit_test(test_step_cycle_bad_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

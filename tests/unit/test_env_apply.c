/* SPDX-License-Identifier: MIT */
#include "core_testutil.h"

#include <stdlib.h>

#include "profiles/env_apply.h"
#include "profiles/profile_file.h"
#include "profiles/resolve.h"

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
	/*
	 * Two names of one setting (env_alias.h): the shipped
	 * expandable-segments profile, each direction.  The user's old name:
	 * both names keep the user's value, the notice says so.
	 */
#define SEG "merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True\n" \
	    "merge PYTORCH_ALLOC_CONF expandable_segments:True\n" \
	    "default NCCL_GRAPH_REGISTER=0\n"
	{ SEG, { "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False" },
	  "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False;PYTORCH_ALLOC_CONF=expandable_segments:False;NCCL_GRAPH_REGISTER=0",
	  2, 0, 1,
	  "PYTORCH_CUDA_ALLOC_CONF in your environment has \"expandable_segments:False\"; profile \"prof\" wants \"expandable_segments:True\": keeping yours, also as PYTORCH_ALLOC_CONF (the same setting) (remove expandable_segments from PYTORCH_CUDA_ALLOC_CONF to use the profile)" },
	/* The new name. */
	{ SEG, { "PYTORCH_ALLOC_CONF=expandable_segments:False" },
	  "PYTORCH_ALLOC_CONF=expandable_segments:False;PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False;NCCL_GRAPH_REGISTER=0",
	  2, 0, 1,
	  "PYTORCH_ALLOC_CONF in your environment has \"expandable_segments:False\"; profile \"prof\" wants \"expandable_segments:True\": keeping yours, also as PYTORCH_CUDA_ALLOC_CONF (the same setting) (remove expandable_segments from PYTORCH_ALLOC_CONF to use the profile)" },
	/* Other keys under one name reach both names with the profile's. */
	{ SEG, { "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128" },
	  "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128,expandable_segments:True;PYTORCH_ALLOC_CONF=max_split_size_mb:128,expandable_segments:True;NCCL_GRAPH_REGISTER=0",
	  3, 0, 0, NULL },
	/* Both names: the key under either is the user's; the other name
	 * gets no profile value either. */
	{ SEG, { "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False",
		 "PYTORCH_ALLOC_CONF=max_split_size_mb:128" },
	  "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False;PYTORCH_ALLOC_CONF=max_split_size_mb:128;NCCL_GRAPH_REGISTER=0",
	  1, 0, 1,
	  "PYTORCH_CUDA_ALLOC_CONF in your environment has \"expandable_segments:False\"; profile \"prof\" wants \"expandable_segments:True\": keeping yours (remove expandable_segments from PYTORCH_CUDA_ALLOC_CONF to use the profile)" },
	{ SEG, { "PYTORCH_CUDA_ALLOC_CONF=a:1", "PYTORCH_ALLOC_CONF=b:2" },
	  "PYTORCH_CUDA_ALLOC_CONF=a:1,expandable_segments:True;PYTORCH_ALLOC_CONF=b:2,expandable_segments:True;NCCL_GRAPH_REGISTER=0",
	  3, 0, 0, NULL },
	/* Forced, on one name only: the user's name is replaced as well. */
	{ "force merge PYTORCH_ALLOC_CONF expandable_segments:True\n",
	  { "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False,a:1" },
	  "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,a:1;PYTORCH_ALLOC_CONF=expandable_segments:True,a:1",
	  2, 0, 1,
	  "profile \"prof\" replaced \"expandable_segments:False\" with \"expandable_segments:True\" in your PYTORCH_CUDA_ALLOC_CONF, also as PYTORCH_ALLOC_CONF (the same setting)" },
	{ "force set PYTORCH_CUDA_ALLOC_CONF=backend:native\n",
	  { "PYTORCH_CUDA_ALLOC_CONF=x:1", "PYTORCH_ALLOC_CONF=y:2" },
	  "PYTORCH_CUDA_ALLOC_CONF=backend:native;PYTORCH_ALLOC_CONF=backend:native",
	  2, 0, 2,
	  "profile \"prof\" replaced your PYTORCH_CUDA_ALLOC_CONF=\"x:1\" with \"backend:native\"" },
	/* Set on the other name: kept, and the unset name gets the user's. */
	{ "set PYTORCH_ALLOC_CONF=backend:native\n",
	  { "PYTORCH_CUDA_ALLOC_CONF=x:1" },
	  "PYTORCH_CUDA_ALLOC_CONF=x:1;PYTORCH_ALLOC_CONF=x:1", 1, 0, 1,
	  "PYTORCH_CUDA_ALLOC_CONF is already set to \"x:1\" in your environment; profile \"prof\" wants \"backend:native\": keeping yours, also as PYTORCH_ALLOC_CONF (the same setting) (unset it to use the profile)" },
	/* Nothing set by the user: only the names the profile gives. */
	{ "merge PYTORCH_ALLOC_CONF expandable_segments:True\n", { NULL },
	  "PYTORCH_ALLOC_CONF=expandable_segments:True", 1, 0, 0, NULL },
	/* several merges into one variable, and everything together */
	{ "merge X a:1\nmerge X b:2\n", { NULL }, "X=a:1,b:2", 1, 0, 0, NULL },
	{ "merge X a:1\nmerge X b:2\n", { "X=b:2" }, "X=b:2,a:1", 1, 0, 0, NULL },
	{ "set NCCL_ALGO=Tree\ndefault NCCL_DEBUG=WARN\nforce unset NCCL_X\nmerge P k:v\n",
	  { "KEEP=1", "NCCL_ALGO=Ring", "NCCL_X=1" },
	  "KEEP=1;NCCL_ALGO=Ring;NCCL_DEBUG=WARN;P=k:v", 2, 1, 2, NULL },
};

/* One apply: the plan of one profile's text, a fake environment, and
 * what sn_plan_apply() gives back. */
struct apply {
	struct planned p;
	struct fake_env env;
	struct sn_apply_report report;
	struct sn_error err;
};

/* Plans OPS over the environment INITIAL (NULL-ended, or NULL). */
static void apply_init(struct apply *a, const char *ops, char *const *initial)
{
	memset(a, 0, sizeof(*a));
	plan_from(&a->p, ops);
	fake_env_init(&a->env, initial);
}

/* sn_plan_apply() must return WANT. */
static void apply_run(struct apply *a, int want)
{
	assert_int_equal(sn_plan_apply(&a->p.plan, &a->env.env, &a->report,
				       &a->err), want);
}

static void apply_free(struct apply *a)
{
	fake_env_free(&a->env);
	planned_free(&a->p);
}

static void test_apply_table(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct apply_case *c = &cases[i];
		struct apply a;
		char dump[1024], msg[1024];

		apply_init(&a, c->ops, c->env);
		if (sn_plan_apply(&a.p.plan, &a.env.env, &a.report, &a.err) != 0)
			fail_msg("case %zu: %s", i, a.err.msg);
		fake_env_dump(&a.env, dump, sizeof(dump));
		if (strcmp(dump, c->expect_env) != 0)
			fail_msg("case %zu: env \"%s\", expected \"%s\"", i, dump,
				 c->expect_env);
		if (a.report.n_set != c->n_set ||
		    a.report.n_unset != c->n_unset ||
		    a.report.n_notices != c->n_notices)
			fail_msg("case %zu: set %zu unset %zu notices %zu", i,
				 a.report.n_set, a.report.n_unset,
				 a.report.n_notices);
		if (c->notice) {
			sn_notice_format(&a.report.notices[0], msg, sizeof(msg));
			assert_string_equal(msg, c->notice);
		}
		sn_apply_report_free(&a.report);
		assert_null(a.report.notices);
		apply_free(&a);
	}
}

static void test_notice_fields(void **state)
{
	struct apply a;
	char *initial[] = { "NCCL_ALGO=Ring", NULL };

	apply_init(&a, "set NCCL_ALGO=Tree\n", initial);
	apply_run(&a, 0);
	assert_int_equal(a.report.n_notices, 1);
	assert_int_equal(a.report.notices[0].kind, SN_NOTICE_USER_KEPT);
	assert_int_equal(a.report.notices[0].op, SN_OP_SET);
	assert_string_equal(a.report.notices[0].var, "NCCL_ALGO");
	assert_string_equal(a.report.notices[0].profile, "prof");
	assert_string_equal(a.report.notices[0].user_value, "Ring");
	assert_string_equal(a.report.notices[0].profile_value, "Tree");
	sn_apply_report_free(&a.report);
	apply_free(&a);
}

/* The report lists exactly what was written, for SPANK_NCCL_APPLIED. */
static void test_written_record(void **state)
{
	struct apply a;
	char *initial[] = { "NCCL_ALGO=Ring", "PYTORCH_CUDA_ALLOC_CONF=a:1",
			    "NCCL_DEBUG=INFO", NULL };
	const struct sn_applied_entry *w;

	apply_init(&a, "set NCCL_ALGO=Tree\n"
		       "merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True\n"
		       "set NCCL_CUMEM_ENABLE=0\n"
		       "force unset NCCL_DEBUG\n", initial);
	apply_run(&a, 0);
	assert_false(a.report.written_lost);
	assert_int_equal(a.report.written.n, 3);	/* NCCL_ALGO: user kept */
	w = a.report.written.entries;
	assert_string_equal(w[0].var, "PYTORCH_CUDA_ALLOC_CONF");
	assert_string_equal(w[0].before, "a:1");
	assert_string_equal(w[0].after, "a:1,expandable_segments:True");
	assert_string_equal(w[1].var, "NCCL_CUMEM_ENABLE");
	assert_null(w[1].before);
	assert_string_equal(w[1].after, "0");
	assert_string_equal(w[2].var, "NCCL_DEBUG");
	assert_string_equal(w[2].before, "INFO");
	assert_null(w[2].after);
	sn_apply_report_free(&a.report);
	apply_free(&a);
}

static void test_notice_truncates(void **state)
{
	struct apply a;
	static char entry[3000];
	char *initial[] = { entry, NULL };
	char msg[2048];
	const char *user;

	strcpy(entry, "NCCL_ALGO=");
	memset(entry + 10, 'r', 2000);
	entry[15] = '\n';
	apply_init(&a, "set NCCL_ALGO=Tree\n", initial);
	apply_run(&a, 0);
	user = a.report.notices[0].user_value;
	assert_int_equal(strlen(user), 255);
	assert_contains(user, "rrr...");
	/* Control bytes of the user's value are not echoed. */
	assert_not_contains(user, "\n");
	assert_true(strncmp(user, "rrrrr?rrr", 9) == 0);
	sn_notice_format(&a.report.notices[0], msg, sizeof(msg));
	assert_contains(msg, "wants \"Tree\"");
	sn_notice_format(&a.report.notices[0], msg, 10);
	assert_int_equal(strlen(msg), 9);
	sn_apply_report_free(&a.report);
	apply_free(&a);
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
		struct apply a;
		static const char *const names[] = { "A", "B", "C", "D", "E" };

		apply_init(&a, ops, initial);
		a.env.fail_write = fail_at;
		apply_run(&a, -1);
		assert_contains(a.err.msg, names[fail_at - 1]);
		assert_contains(a.err.msg, fail_at == 3 ? "cannot unset C"
							 : "cannot set");
		assert_contains(a.err.msg, "no profile setting was applied");
		/* Same variables, same values (order may differ after restore). */
		for (size_t i = 0; initial[i]; i++) {
			char *eq = strchr(initial[i], '=');
			char name[8];

			snprintf(name, sizeof(name), "%.*s", (int)(eq - initial[i]),
				 initial[i]);
			assert_non_null(sn_envlist_get(&a.env.list, name));
			assert_string_equal(sn_envlist_get(&a.env.list, name),
					    eq + 1);
		}
		assert_null(sn_envlist_get(&a.env.list, "A"));
		assert_null(sn_envlist_get(&a.env.list, "E"));
		assert_int_equal(a.env.list.n, 4);
		assert_int_equal(a.report.n_set, 0);
		assert_int_equal(a.report.n_unset, 0);
		assert_int_equal(a.report.n_notices, 0);
		assert_null(a.report.notices);
		apply_free(&a);
	}
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

/* An apply that fails, on an empty environment. */
struct failure_case {
	const char *ops;
	int fail_write, fail_get;	/* the fake's */
	bool restore_fails;		/* second set and every unset fail */
	const char *msg[2];		/* in the error; NULL for none */
	const char *absent;		/* not set afterwards; or NULL */
	bool no_write;			/* nothing was written at all */
};

static const struct failure_case failures[] = {
	/* B fails; A, which was not set before, must be unset again. */
	{ "set A=1\nset B=2\n", .fail_write = 2, .msg = { "cannot set B" },
	  .absent = "A" },
	{ "set A=1\nset B=2\n", .restore_fails = true,
	  .msg = { "cannot set B in the job environment; restoring the variables already written also failed" } },
	{ "set A=1\n", .fail_get = 1,
	  .msg = { "cannot read A from the job environment",
		   "nothing was applied" }, .no_write = true },
};

static void test_failures(void **state)
{
	size_t i, m;

	for (i = 0; i < sizeof(failures) / sizeof(failures[0]); i++) {
		const struct failure_case *c = &failures[i];
		struct apply a;

		apply_init(&a, c->ops, NULL);
		a.env.fail_write = c->fail_write;
		a.env.fail_get = c->fail_get;
		if (c->restore_fails) {
			a.env.env.set = fail_after_first;
			a.env.env.unset = unset_fails;
		}
		apply_run(&a, -1);
		for (m = 0; m < 2 && c->msg[m]; m++)
			assert_contains(a.err.msg, c->msg[m]);
		if (c->absent)
			assert_null(sn_envlist_get(&a.env.list, c->absent));
		if (c->no_write)
			assert_int_equal(a.env.writes, 0);
		apply_free(&a);
	}
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

/* sn_step_env_apply() of PLAN (NULL: no profiles) must return WANT. */
static void step_run(struct apply *a, const struct sn_plan *plan, int want)
{
	assert_int_equal(sn_step_env_apply(plan, &a->env.env, &a->report,
					   &a->err), want);
}

/* A step's cycle: the earlier step's values go back, this step's are
 * applied and recorded (one record, this step's only). */
static void test_step_cycle(void **state)
{
	struct apply a;
	struct planned second;
	char dump[1024];
	char *initial[] = { "NCCL_DEBUG=INFO", NULL };

	apply_init(&a, "set NCCL_ALGO=Tree\nforce unset NCCL_DEBUG\n", initial);
	plan_from(&second, "set NCCL_PROTO=Simple\n");
	step_run(&a, &a.p.plan, 0);
	assert_false(a.report.record_lost);
	assert_false(a.report.inherited_ignored);
	sn_apply_report_free(&a.report);
	assert_non_null(sn_envlist_get(&a.env.list, SN_ENV_APPLIED));
	assert_null(sn_envlist_get(&a.env.list, "NCCL_DEBUG"));

	/* The next step (inheriting that environment) asks for another. */
	step_run(&a, &second.plan, 0);
	assert_int_equal(a.report.n_set, 1);
	sn_apply_report_free(&a.report);
	assert_string_equal(sn_envlist_get(&a.env.list, "NCCL_DEBUG"), "INFO");
	assert_null(sn_envlist_get(&a.env.list, "NCCL_ALGO"));
	assert_string_equal(sn_envlist_get(&a.env.list, "NCCL_PROTO"), "Simple");

	/* No profiles (--nccl-profile=none): only the revert, record gone. */
	step_run(&a, NULL, 0);
	sn_apply_report_free(&a.report);
	fake_env_dump(&a.env, dump, sizeof(dump));
	assert_string_equal(dump, "NCCL_DEBUG=INFO");
	apply_free(&a);
	planned_free(&second);
}

/* A's step apply, over a fresh environment INITIAL whose first write
 * fails, is refused with MSG. */
static void step_fails(struct apply *a, char *const *initial, const char *msg)
{
	fake_env_free(&a->env);
	fake_env_init(&a->env, initial);
	a->env.fail_write = 1;
	step_run(a, &a->p.plan, -1);
	assert_contains(a->err.msg, msg);
	sn_apply_report_free(&a->report);
}

static void test_step_cycle_bad_record(void **state)
{
	struct apply a;
	char dump[1024];
	char *garbage[] = { SN_ENV_APPLIED "=not a record", NULL };

	apply_init(&a, "set NCCL_ALGO=Tree\n", garbage);
	step_run(&a, &a.p.plan, 0);
	assert_true(a.report.inherited_ignored);
	assert_true(a.report.inherited_error.msg[0] != '\0');
	sn_apply_report_free(&a.report);
	assert_string_equal(sn_envlist_get(&a.env.list, "NCCL_ALGO"), "Tree");
	assert_string_not_equal(sn_envlist_get(&a.env.list, SN_ENV_APPLIED),
				"not a record");

	/* Removing the inherited record fails: refused, with the reason. */
	step_fails(&a, garbage, "cannot restore the variables");
	fake_env_dump(&a.env, dump, sizeof(dump));
	assert_string_equal(dump, SN_ENV_APPLIED "=not a record");

	/* Applying fails: the message names the profiles. */
	step_fails(&a, NULL, "profiles prof not applied: ");
	apply_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_apply_table),
		cmocka_unit_test(test_notice_fields),
		cmocka_unit_test(test_written_record),
		cmocka_unit_test(test_notice_truncates),
		cmocka_unit_test(test_rollback),
		cmocka_unit_test(test_failures),
		cmocka_unit_test(test_empty_plan),
		cmocka_unit_test(test_step_cycle),
		cmocka_unit_test(test_step_cycle_bad_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
#include "core_testutil.h"

#include "config/options.h"
#include "profiles/profile_file.h"
#include "profiles/resolve.h"

static const char profiles[] =
	"[profile ppo-tree]\n"
	"set NCCL_ALGO=Tree\n"
	"merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True\n"
	"[profile foo]\n"
	"set NCCL_ALGO=Ring\n"
	"[profile tree-again]\n"
	"set NCCL_ALGO=Tree\n"
	"default NCCL_DEBUG=WARN\n"
	"[profile tree-default]\n"
	"default NCCL_ALGO=Tree\n"
	"[profile tree-forced]\n"
	"force set NCCL_ALGO=Tree\n"
	"[profile algo-unset]\n"
	"unset NCCL_ALGO\n"
	"[profile algo-merge]\n"
	"merge NCCL_ALGO allreduce:tree\n"
	"[profile seg-off]\n"
	"merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:False\n"
	"[profile split]\n"
	"merge PYTORCH_CUDA_ALLOC_CONF max_split_size_mb:128\n"
	"[profile alloc-set]\n"
	"set PYTORCH_CUDA_ALLOC_CONF=backend:native\n"
	"[profile quiet-logs]\n"
	"force set NCCL_DEBUG=WARN\n"
	"[profile site-ring]\n"
	"set NCCL_ALGO=Ring\n"
	"set NCCL_SITE=1\n"
	"[profile site-other]\n"
	"set NCCL_SITE=2\n"
	"[profile seg-on-both]\n"
	"merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True\n"
	"merge PYTORCH_ALLOC_CONF expandable_segments:True\n"
	"[profile seg-off-new]\n"
	"merge PYTORCH_ALLOC_CONF expandable_segments:False\n"
	"[profile site-alloc-new]\n"
	"merge PYTORCH_ALLOC_CONF expandable_segments:False\n";

struct fixture {
	struct sn_profile_set set;
};

static int setup(void **state)
{
	static struct fixture fx;
	struct sn_error err = { "" };

	if (sn_profile_set_parse(&fx.set, profiles, "r.conf", &err) != 0) {
		print_error("%s\n", err.msg);
		return -1;
	}
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	sn_profile_set_free(&fx->set);
	return 0;
}

static void request(struct sn_profile_request *req, const char *value)
{
	struct sn_error err = { "" };

	if (sn_profile_option_parse(value, req, &err) != 0)
		fail_msg("%s", err.msg);
}

/* Resolves SITE (or NULL) then REQ (or NULL); returns sn_resolve's code. */
static int resolve(void **state, const char *site, const char *req,
		   struct sn_plan *plan, struct sn_error *err)
{
	struct fixture *fx = *state;
	struct sn_profile_request s, r;

	if (site)
		request(&s, site);
	if (req)
		request(&r, req);
	err->msg[0] = '\0';
	return sn_resolve(&fx->set, site ? &s : NULL, req ? &r : NULL, plan,
			  err);
}

static const struct sn_env_op *find_op(const struct sn_plan *plan,
				       const char *var)
{
	size_t i;

	for (i = 0; i < plan->n_ops; i++) {
		if (strcmp(plan->ops[i].var, var) == 0)
			return &plan->ops[i];
	}
	return NULL;
}

static void test_single(void **state)
{
	struct sn_plan plan;
	struct sn_error err;

	assert_int_equal(resolve(state, NULL, "ppo-tree", &plan, &err), 0);
	assert_int_equal(plan.n_ops, 2);
	assert_string_equal(plan.ops[0].var, "NCCL_ALGO");
	assert_string_equal(plan.ops[0].value, "Tree");
	assert_string_equal(plan.ops[0].profile, "ppo-tree");
	assert_int_equal(plan.ops[1].kind, SN_OP_MERGE);
	assert_string_equal(plan.names, "ppo-tree");
	sn_plan_free(&plan);
	assert_null(plan.ops);
	assert_int_equal(plan.n_ops, 0);
}

static void test_no_request(void **state)
{
	struct sn_plan plan;
	struct sn_error err;

	assert_int_equal(resolve(state, NULL, NULL, &plan, &err), 0);
	assert_int_equal(plan.n_ops, 0);
	assert_string_equal(plan.names, "");
	sn_plan_free(&plan);
	/* Site defaults alone apply. */
	assert_int_equal(resolve(state, "quiet-logs", NULL, &plan, &err), 0);
	assert_int_equal(plan.n_ops, 1);
	assert_string_equal(plan.names, "quiet-logs");
	sn_plan_free(&plan);
}

static void test_compose_left_to_right(void **state)
{
	struct sn_plan plan;
	struct sn_error err;

	assert_int_equal(resolve(state, NULL, "split,ppo-tree,quiet-logs", &plan,
				 &err), 0);
	assert_int_equal(plan.n_ops, 4);
	assert_string_equal(plan.ops[0].value, "max_split_size_mb:128");
	assert_string_equal(plan.ops[1].var, "NCCL_ALGO");
	assert_string_equal(plan.ops[2].value, "expandable_segments:True");
	assert_string_equal(plan.ops[3].var, "NCCL_DEBUG");
	assert_true(plan.ops[3].force);
	assert_string_equal(plan.names, "split,ppo-tree,quiet-logs");
	sn_plan_free(&plan);
}

static void test_conflict_set_set(void **state)
{
	struct sn_plan plan;
	struct sn_error err;

	assert_int_equal(resolve(state, NULL, "ppo-tree,foo", &plan, &err), -1);
	assert_string_equal(err.msg, "profiles \"ppo-tree\" and \"foo\" both set NCCL_ALGO, to \"Tree\" and \"Ring\": request only one of them");
	assert_null(plan.ops);
	assert_int_equal(plan.n_ops, 0);
}

static void test_conflicts(void **state)
{
	static const struct {
		const char *req;
		const char *expect;
	} cases[] = {
		{ "foo,ppo-tree", "profiles \"foo\" and \"ppo-tree\" both set NCCL_ALGO, to \"Ring\" and \"Tree\"" },
		{ "ppo-tree,algo-unset", "profiles \"ppo-tree\" and \"algo-unset\" disagree on NCCL_ALGO: \"ppo-tree\" wants to set it to \"Tree\", \"algo-unset\" wants to unset it: request only one of them" },
		{ "algo-merge,foo", "disagree on NCCL_ALGO: \"algo-merge\" wants to merge \"allreduce:tree\" into it, \"foo\" wants to set it to \"Ring\"" },
		{ "tree-default,foo", "\"tree-default\" wants to default it to \"Tree\"" },
		{ "ppo-tree,seg-off", "profiles \"ppo-tree\" and \"seg-off\" both merge key \"expandable_segments\" into PYTORCH_CUDA_ALLOC_CONF, as \"expandable_segments:True\" and \"expandable_segments:False\": request only one of them" },
		{ "split,alloc-set", "disagree on PYTORCH_CUDA_ALLOC_CONF" },
		{ "tree-forced,algo-unset", "wants to force set it to \"Tree\"" },
		/* Two names of one setting (env_alias.h) are one variable. */
		{ "ppo-tree,seg-off-new", "profiles \"ppo-tree\" and \"seg-off-new\" both merge key \"expandable_segments\" into PYTORCH_CUDA_ALLOC_CONF/PYTORCH_ALLOC_CONF (one setting), as \"expandable_segments:True\" and \"expandable_segments:False\": request only one of them" },
		{ "seg-on-both,seg-off-new", "both merge key \"expandable_segments\" into PYTORCH_CUDA_ALLOC_CONF/PYTORCH_ALLOC_CONF (one setting)" },
		{ "alloc-set,seg-off-new", "disagree on PYTORCH_CUDA_ALLOC_CONF/PYTORCH_ALLOC_CONF (one setting)" },
	};
	struct sn_plan plan;
	struct sn_error err;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (resolve(state, NULL, cases[i].req, &plan, &err) != -1)
			fail_msg("accepted %s", cases[i].req);
		assert_contains(err.msg, cases[i].expect);
		assert_null(plan.ops);
	}
}

static void test_agreeing_collapse(void **state)
{
	struct sn_plan plan;
	struct sn_error err;
	const struct sn_env_op *op;

	/* Same value twice: one operation, both names listed. */
	assert_int_equal(resolve(state, NULL, "ppo-tree,tree-again", &plan,
				 &err), 0);
	assert_int_equal(plan.n_ops, 3);
	op = find_op(&plan, "NCCL_ALGO");
	assert_string_equal(op->profile, "ppo-tree");
	assert_string_equal(plan.names, "ppo-tree,tree-again");
	sn_plan_free(&plan);
	/* default + set of the same value: the set wins. */
	assert_int_equal(resolve(state, NULL, "tree-default,ppo-tree", &plan,
				 &err), 0);
	op = find_op(&plan, "NCCL_ALGO");
	assert_int_equal(op->kind, SN_OP_SET);
	sn_plan_free(&plan);
	/* set + force set of the same value: forced. */
	assert_int_equal(resolve(state, NULL, "ppo-tree,tree-forced", &plan,
				 &err), 0);
	op = find_op(&plan, "NCCL_ALGO");
	assert_true(op->force);
	assert_string_equal(op->profile, "tree-forced");
	sn_plan_free(&plan);
	/* Two names of one setting, the same value: both names stay, the
	 * apply gives them one value (test_env_apply). */
	assert_int_equal(resolve(state, NULL, "seg-on-both,ppo-tree", &plan,
				 &err), 0);
	assert_int_equal(plan.n_ops, 3);
	assert_string_equal(find_op(&plan, "PYTORCH_ALLOC_CONF")->profile,
			    "seg-on-both");
	assert_string_equal(find_op(&plan, "PYTORCH_CUDA_ALLOC_CONF")->profile,
			    "seg-on-both");
	sn_plan_free(&plan);
	/* Merges of different keys into one variable coexist. */
	assert_int_equal(resolve(state, NULL, "ppo-tree,split", &plan, &err), 0);
	assert_int_equal(plan.n_ops, 3);
	sn_plan_free(&plan);
}

static void test_site_default_replaced(void **state)
{
	struct sn_plan plan;
	struct sn_error err;
	const struct sn_env_op *op;

	/* site-ring sets NCCL_ALGO=Ring; the user asks for Tree: no error. */
	assert_int_equal(resolve(state, "site-ring", "ppo-tree", &plan, &err), 0);
	op = find_op(&plan, "NCCL_ALGO");
	assert_non_null(op);
	assert_string_equal(op->value, "Tree");
	assert_string_equal(op->profile, "ppo-tree");
	/* The site's other variable stays. */
	op = find_op(&plan, "NCCL_SITE");
	assert_non_null(op);
	assert_string_equal(op->value, "1");
	assert_int_equal(plan.n_ops, 3);
	assert_string_equal(plan.names, "site-ring,ppo-tree");
	sn_plan_free(&plan);
	/* A site default fully replaced is not listed. */
	assert_int_equal(resolve(state, "foo", "ppo-tree", &plan, &err), 0);
	assert_string_equal(plan.names, "ppo-tree");
	assert_int_equal(plan.n_ops, 2);
	sn_plan_free(&plan);
	/* Site set replaced by a requested merge into the same variable. */
	assert_int_equal(resolve(state, "alloc-set", "split", &plan, &err), 0);
	assert_int_equal(plan.n_ops, 1);
	assert_int_equal(plan.ops[0].kind, SN_OP_MERGE);
	sn_plan_free(&plan);
	/* A site default on the other name of one setting is replaced too. */
	assert_int_equal(resolve(state, "site-alloc-new", "ppo-tree", &plan,
				 &err), 0);
	assert_null(find_op(&plan, "PYTORCH_ALLOC_CONF"));
	assert_string_equal(plan.names, "ppo-tree");
	sn_plan_free(&plan);
	/* Requesting a site default again lists it once. */
	assert_int_equal(resolve(state, "quiet-logs", "quiet-logs,ppo-tree",
				 &plan, &err), 0);
	assert_string_equal(plan.names, "quiet-logs,ppo-tree");
	assert_int_equal(plan.n_ops, 3);
	sn_plan_free(&plan);
}

static void test_site_defaults_conflict(void **state)
{
	struct sn_plan plan;
	struct sn_error err;

	assert_int_equal(resolve(state, "site-ring,site-other", NULL, &plan,
				 &err), -1);
	assert_contains(err.msg, "site default profiles \"site-ring\" and \"site-other\" both set NCCL_SITE, to \"1\" and \"2\": fix default_profiles= in plugstack.conf");
}

static void test_none(void **state)
{
	struct sn_plan plan;
	struct sn_error err;

	assert_int_equal(resolve(state, "quiet-logs", "none", &plan, &err), 0);
	assert_int_equal(plan.n_ops, 0);
	assert_string_equal(plan.names, "");
	sn_plan_free(&plan);
	/* "none" also skips the check of unknown site defaults. */
	assert_int_equal(resolve(state, "nosuch", "none", &plan, &err), 0);
	sn_plan_free(&plan);
}

static void test_unknown(void **state)
{
	struct fixture *fx = *state;
	struct sn_profile_set empty;
	struct sn_profile_request r;
	struct sn_plan plan;
	struct sn_error err;

	assert_int_equal(resolve(state, NULL, "ppo-tree,xyz", &plan, &err), -1);
	assert_string_equal(err.msg, "unknown profile \"xyz\"; known profiles: ppo-tree, foo, tree-again, tree-default, tree-forced, algo-unset, algo-merge, seg-off, split, alloc-set, quiet-logs, site-ring, site-other, seg-on-both, seg-off-new, site-alloc-new (see --nccl-profile=list)");
	assert_null(plan.ops);
	assert_int_equal(resolve(state, "gone", "ppo-tree", &plan, &err), -1);
	assert_contains(err.msg, "plugstack.conf default_profiles names unknown profile \"gone\"; profiles in r.conf: ppo-tree, foo");
	assert_contains(err.msg, "fix default_profiles=");
	/* With an empty file. */
	assert_int_equal(sn_profile_set_parse(&empty, "", "e.conf", &err), 0);
	request(&r, "a");
	assert_int_equal(sn_resolve(&empty, NULL, &r, &plan, &err), -1);
	assert_contains(err.msg, "known profiles: (none)");
	sn_profile_set_free(&empty);
	(void)fx;
}

static void test_list_is_not_a_plan(void **state)
{
	struct sn_plan plan;
	struct sn_error err;

	assert_int_equal(resolve(state, NULL, "list", &plan, &err), -1);
	assert_contains(err.msg, "--nccl-profile=list");
}

static void test_plan_outlives_set(void **state)
{
	struct sn_profile_set set;
	struct sn_profile_request r;
	struct sn_plan plan;
	struct sn_error err = { "" };

	assert_int_equal(sn_profile_set_parse(&set, profiles, "r.conf", &err), 0);
	request(&r, "ppo-tree");
	assert_int_equal(sn_resolve(&set, NULL, &r, &plan, &err), 0);
	sn_profile_set_free(&set);
	/* The plan owns its strings (valgrind would flag a dangling one). */
	assert_string_equal(plan.ops[0].profile, "ppo-tree");
	assert_string_equal(plan.ops[0].var, "NCCL_ALGO");
	sn_plan_free(&plan);
}

/* --nccl-profile=list shows every operation, in the file's words. */
static void test_ops_format(void **state)
{
	struct fixture *fx = *state;
	static const struct {
		const char *profile, *expect;
	} cases[] = {
		{ "seg-on-both", "merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True; merge PYTORCH_ALLOC_CONF expandable_segments:True" },
		{ "tree-again", "set NCCL_ALGO=Tree; default NCCL_DEBUG=WARN" },
		{ "tree-forced", "force set NCCL_ALGO=Tree" },
		{ "algo-unset", "unset NCCL_ALGO" },
	};
	char buf[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sn_profile_ops_format(sn_profile_set_find(&fx->set,
							  cases[i].profile),
				      buf, sizeof(buf));
		assert_string_equal(buf, cases[i].expect);
	}
	/* Cut: said so. */
	sn_profile_ops_format(sn_profile_set_find(&fx->set, "tree-again"), buf,
			      20);
	assert_string_equal(buf, "set NCCL_ALGO=Tr...");
}

static void test_names(void **state)
{
	struct fixture *fx = *state;
	char buf[20];
	char big[1024];

	sn_profile_names(&fx->set, big, sizeof(big));
	assert_true(strncmp(big, "ppo-tree, foo, tree-again", 25) == 0);
	sn_profile_names(&fx->set, buf, sizeof(buf));
	assert_string_equal(buf, "ppo-tree, foo, ...");
	sn_profile_names(NULL, buf, sizeof(buf));
	assert_string_equal(buf, "");
}

static void test_names_overflow(void **state)
{
	struct sn_profile_set set;
	struct sn_profile_request r;
	struct sn_plan plan;
	struct sn_error err = { "" };
	char text[32 * 100], value[32 * 70];
	size_t i, used = 0, vused = 0;

	for (i = 0; i < 32; i++) {
		used += (size_t)sprintf(text + used,
			"[profile %02zu-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\nset V%zu=1\n",
			i, i);
		vused += (size_t)sprintf(value + vused,
			"%s%02zu-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
			i ? "," : "", i);
	}
	assert_int_equal(sn_profile_set_parse(&set, text, "n.conf", &err), 0);
	request(&r, value);
	assert_int_equal(sn_resolve(&set, NULL, &r, &plan, &err), 0);
	assert_int_equal(plan.n_ops, 32);
	assert_true(strlen(plan.names) < sizeof(plan.names));
	assert_true(strcmp(plan.names + strlen(plan.names) - 4, ",...") == 0);
	sn_plan_free(&plan);
	sn_profile_set_free(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single),
		cmocka_unit_test(test_no_request),
		cmocka_unit_test(test_compose_left_to_right),
		cmocka_unit_test(test_conflict_set_set),
		cmocka_unit_test(test_conflicts),
		cmocka_unit_test(test_agreeing_collapse),
		cmocka_unit_test(test_site_default_replaced),
		cmocka_unit_test(test_site_defaults_conflict),
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_list_is_not_a_plan),
		cmocka_unit_test(test_plan_outlives_set),
		cmocka_unit_test(test_ops_format),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_names_overflow),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

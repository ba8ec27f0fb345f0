/* SPDX-License-Identifier: MIT */
/*
 * The profile file (nccl-profiles.conf) end to end: parse, then resolve
 * the parsed profiles as site defaults and a request, apply the plan to a
 * small environment (once with a write failing part-way) and evaluate the
 * rules.
 *
 * Invariants: a rejected file leaves the set empty and the message names
 * the file and line; an accepted one holds only valid, unique names and
 * bounded, printable values; a failed resolve leaves no plan; a failed
 * apply leaves the environment exactly as it was.
 */
#include <stdbool.h>

#include "profiles/env_apply.h"
#include "fake_env.h"
#include "fuzz_util.h"
#include "config/options.h"
#include "profiles/profile_file.h"
#include "profiles/resolve.h"
#include "profiles/rules.h"
#include "base/strutil.h"

#define PATH "fuzz.conf"

static void fe_init(struct fake_env *f, int fail_write)
{
	static char *const start[] = {
		"NCCL_DEBUG=INFO",
		"PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128",
		"NCCL_ALGO=Tree",
		"HOME=/home/user",
		NULL,
	};

	if (fake_env_setup(f, start) < 0)
		abort();
	f->fail_write = fail_write;
}

static bool same_env(const struct sn_envlist *a, const struct sn_envlist *b)
{
	size_t i;

	if (a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++) {
		const char *eq = strchr(a->vars[i], '=');
		char name[SN_VAR_NAME_MAX + 1];
		const char *other;

		FUZZ_CHECK(eq && (size_t)(eq - a->vars[i]) < sizeof(name));
		memcpy(name, a->vars[i], (size_t)(eq - a->vars[i]));
		name[eq - a->vars[i]] = '\0';
		other = sn_envlist_get(b, name);
		if (!other || strcmp(other, eq + 1) != 0)
			return false;
	}
	return true;
}

static void check_value(const char *v)
{
	FUZZ_CHECK(v != NULL);
	FUZZ_CHECK(strlen(v) < SN_VALUE_MAX);
	FUZZ_CHECK(!sn_str_has_control(v));
}

static void check_set(const struct sn_profile_set *set)
{
	size_t i, j, k;

	FUZZ_CHECK(set->path && strcmp(set->path, PATH) == 0);
	for (i = 0; i < set->n_profiles; i++) {
		const struct sn_profile *prof = &set->profiles[i];

		FUZZ_CHECK(sn_profile_name_valid(prof->name));
		FUZZ_CHECK(sn_profile_set_find(set, prof->name) == prof);
		FUZZ_CHECK(prof->n_ops > 0);
		if (prof->description)
			check_value(prof->description);
		for (j = 0; j < prof->n_ops; j++) {
			const struct sn_env_op *op = &prof->ops[j];

			FUZZ_CHECK(sn_env_name_valid(op->var));
			FUZZ_CHECK(strlen(op->var) < SN_VAR_NAME_MAX);
			FUZZ_CHECK(op->profile == prof->name);
			if (op->kind == SN_OP_UNSET) {
				FUZZ_CHECK(op->value == NULL);
				continue;
			}
			check_value(op->value);
			if (op->kind == SN_OP_MERGE)
				FUZZ_CHECK(strchr(op->value, ':') &&
					   !strchr(op->value, ','));
		}
	}
	for (i = 0; i < set->n_rules; i++) {
		const struct sn_rule *rule = &set->rules[i];

		FUZZ_CHECK(rule->name && *rule->name);
		FUZZ_CHECK(rule->level == SN_RULE_WARNING ||
			   rule->level == SN_RULE_ERROR);
		FUZZ_CHECK(rule->n_conds > 0);
		check_value(rule->message);
		for (j = 0; j < rule->n_conds; j++) {
			const struct sn_rule_cond *c = &rule->conds[j];

			FUZZ_CHECK(c->n_vars > 0);
			for (k = 0; k < c->n_vars; k++)
				FUZZ_CHECK(sn_env_name_valid(c->vars[k]));
			for (k = 0; k < c->n_values; k++)
				check_value(c->values[k]);
		}
	}
}

static void apply_plan(const struct sn_profile_set *set,
		       const struct sn_plan *plan, int fail_write)
{
	struct fake_env fe, before;
	struct sn_apply_report report = { 0 };
	struct sn_error err = { { 0 } };
	const struct sn_rule *matched[16];
	char line[1024];
	size_t i, n;
	int rc;

	fe_init(&fe, fail_write);
	fe_init(&before, 0);
	rc = sn_plan_apply(plan, &fe.env, &report, &err);
	if (rc != 0) {
		/* Nothing half-applied: the environment is as it was. */
		FUZZ_CHECK(fuzz_error_set(err.msg));
		FUZZ_CHECK(same_env(&fe.list, &before.list));
		FUZZ_CHECK(same_env(&before.list, &fe.list));
	} else {
		for (i = 0; i < report.n_notices; i++)
			sn_notice_format(&report.notices[i], line,
					 sizeof(line));
		for (i = 0; i < plan->n_ops; i++) {
			const struct sn_env_op *op = &plan->ops[i];
			const char *now = sn_envlist_get(&fe.list, op->var);

			if (op->force && op->kind == SN_OP_SET)
				FUZZ_CHECK(now && !strcmp(now, op->value));
			if (op->force && op->kind == SN_OP_UNSET)
				FUZZ_CHECK(!now);
		}
	}
	n = sn_rules_evaluate(set, &fe.env, matched, 16);
	FUZZ_CHECK(n <= set->n_rules);
	sn_apply_report_free(&report);
	fake_env_free(&fe);
	fake_env_free(&before);
}

static void resolve_all(const struct sn_profile_set *set, unsigned int seed)
{
	struct sn_profile_request defaults = { .given = true };
	struct sn_profile_request req = { .given = true };
	struct sn_plan plan;
	struct sn_error err = { { 0 } };
	char names[512];
	bool unknown = false;
	size_t i;

	sn_profile_names(set, names, sizeof(names));
	if (set->n_profiles > 0) {
		defaults.count = 1;
		sn_strlcpy(defaults.names[0], set->profiles[0].name,
			   SN_PROFILE_NAME_MAX);
	}
	/* Request every other profile (up to the limit), and one unknown. */
	for (i = 1; i < set->n_profiles && req.count < SN_PROFILE_REQUEST_MAX;
	     i++)
		sn_strlcpy(req.names[req.count++], set->profiles[i].name,
			   SN_PROFILE_NAME_MAX);
	if (seed & 1 && req.count < SN_PROFILE_REQUEST_MAX) {
		sn_strlcpy(req.names[req.count++], "no-such-profile",
			   SN_PROFILE_NAME_MAX);
		unknown = true;
	}
	if (sn_resolve(set, &defaults, &req, &plan, &err) != 0) {
		FUZZ_CHECK(fuzz_error_set(err.msg));
		FUZZ_CHECK(plan.n_ops == 0 && plan.ops == NULL);
		return;
	}
	/* An unknown name is always refused. */
	FUZZ_CHECK(!unknown || sn_profile_set_find(set, "no-such-profile"));
	for (i = 0; i < plan.n_ops; i++)
		FUZZ_CHECK(sn_env_name_valid(plan.ops[i].var));
	apply_plan(set, &plan, 0);
	/* Again with one write failing: the rollback must be complete. */
	apply_plan(set, &plan, 1 + (int)(seed % 7));
	sn_plan_free(&plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sn_profile_set set;
	struct sn_error err = { { 0 } };
	unsigned int seed = 0;
	size_t i;
	char *text;

	if (size > SN_PROFILE_FILE_MAX_BYTES)
		return 0;
	for (i = 0; i < size; i++)
		seed = seed * 31 + data[i];
	text = fuzz_strndup(data, size);
	if (sn_profile_set_parse(&set, text, PATH, &err) != 0) {
		FUZZ_CHECK(set.n_profiles == 0 && set.profiles == NULL);
		FUZZ_CHECK(set.n_rules == 0 && set.rules == NULL);
		FUZZ_CHECK(strncmp(err.msg, PATH ":", strlen(PATH ":")) == 0);
		free(text);
		return 0;
	}
	check_set(&set);
	resolve_all(&set, seed);
	sn_profile_set_free(&set);
	free(text);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * slurmstepd, user_init: applies the resolved profiles to the job
 * environment.  spank_setenv() in user_init reaches every task of the step
 * on this node; TaskProlog and plugins whose task_init sets variables
 * (pyxis re-imports the container's) run later and can still override.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "applied.h"
#include "env_apply.h"
#include "plugin.h"
#include "rules.h"
#include "spank_wrap.h"

#define SN_MAX_MATCHED_RULES 64
#define SN_APPLIED_TEXT_MAX (256 * 1024)

static int spank_env_get(void *ctx, const char *name, char *buf, size_t len)
{
	return sn_spank_getenv((spank_t)ctx, name, buf, len);
}

static int spank_env_set(void *ctx, const char *name, const char *value)
{
	return sn_spank_setenv((spank_t)ctx, name, value);
}

static int spank_env_unset(void *ctx, const char *name)
{
	return sn_spank_unsetenv((spank_t)ctx, name);
}

/* Notices and warnings are printed once per step, by the first node. */
static void report_notices(const struct sn_apply_report *report)
{
	char line[1024];
	size_t i;

	for (i = 0; i < report->n_notices; i++) {
		sn_notice_format(&report->notices[i], line, sizeof(line));
		sn_log_user("%s", line);
	}
}

static int check_rules(struct sn_plugin *p, struct sn_env *env,
		       bool first_node)
{
	const struct sn_rule *matched[SN_MAX_MATCHED_RULES];
	size_t n, i;
	int rc = 0;

	n = sn_rules_evaluate(&p->profiles, env, matched,
			      SN_MAX_MATCHED_RULES);
	for (i = 0; i < n; i++) {
		const struct sn_rule *r = matched[i];

		sn_log_info("rule \"%s\" (%s) matched: %s", r->name,
			    r->level == SN_RULE_ERROR ? "error" : "warning",
			    r->message);
		if (r->level == SN_RULE_ERROR) {
			/* The submit-time check saw another environment. */
			if (first_node)
				sn_log_error("refused by rule \"%s\": %s",
					     r->name, r->message);
			rc = -1;
		} else if (first_node) {
			sn_log_user("warning: %s (rule \"%s\")", r->message,
				    r->name);
		}
	}
	return rc;
}

/*
 * Undo what an earlier step's profiles left in the inherited environment
 * (see applied.h), so this step's own request starts from the user's.
 */
static int revert_inherited(struct sn_env *env)
{
	struct sn_applied inherited;
	struct sn_error err;
	char *text = malloc(SN_APPLIED_TEXT_MAX);
	int found, rc = 0;

	if (!text)
		return -1;
	found = env->get(env->ctx, SN_ENV_APPLIED, text, SN_APPLIED_TEXT_MAX);
	if (found == 1) {
		if (sn_applied_decode(text, &inherited, &err) == 0) {
			rc = sn_applied_revert(&inherited, env) < 0 ? -1 : 0;
			sn_applied_free(&inherited);
		} else {
			sn_log_info("ignoring the inherited record: %s", err.msg);
		}
	}
	if (found != 0 && env->unset(env->ctx, SN_ENV_APPLIED) < 0)
		rc = -1;
	free(text);
	return rc;
}

/* Leaves a record of this step's changes for the steps it starts. */
static int record_changes(const struct sn_applied *written, struct sn_env *env)
{
	char *text;
	int rc;

	if (!written->n)
		return 0;
	text = sn_applied_encode(written);
	if (!text)
		return -1;
	rc = env->set(env->ctx, SN_ENV_APPLIED, text);
	free(text);
	return rc;
}

int sn_step_apply_profiles(struct sn_plugin *p, spank_t sp,
			   const struct sn_job_ids *ids)
{
	struct sn_env env = {
		.get = spank_env_get,
		.set = spank_env_set,
		.unset = spank_env_unset,
		.ctx = sp,
	};
	struct sn_apply_report report = { 0 };
	bool first_node = ids->node_id == 0;
	struct sn_error err;
	int rc = 0;

	if (revert_inherited(&env) < 0) {
		sn_log_error("cannot restore the variables an earlier step's profiles changed");
		return -1;
	}
	if (!p->have_plan)
		return 0;	/* --nccl-profile=none */
	if (sn_plan_apply(&p->plan, &env, &report, &err) < 0) {
		sn_log_error("profiles %s not applied: %s", p->plan.names,
			     err.msg);
		return -1;
	}
	if (report.written_lost || record_changes(&report.written, &env) < 0)
		sn_log_info("could not record the changes in %s; later steps may see them as the user's",
			    SN_ENV_APPLIED);
	sn_log_info("job %u step %u: profiles %s applied (%zu set, %zu unset, %zu notices)",
		    ids->job_id, ids->step_id, p->plan.names, report.n_set,
		    report.n_unset, report.n_notices);
	if (first_node)
		report_notices(&report);
	sn_apply_report_free(&report);
	if (p->profiles_loaded)
		rc = check_rules(p, &env, first_node);
	return rc;
}

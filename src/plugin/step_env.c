/* SPDX-License-Identifier: MIT */
/*
 * slurmstepd, user_init: applies the resolved profiles to the job
 * environment.  spank_setenv() in user_init reaches every task of the step
 * on this node; TaskProlog and plugins whose task_init sets variables
 * (pyxis re-imports the container's) run later and can still override.
 */
#include <stdio.h>

#include "env_apply.h"
#include "plugin.h"
#include "rules.h"
#include "spank_wrap.h"

#define SN_MAX_MATCHED_RULES 64

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
	int rc;

	if (sn_plan_apply(&p->plan, &env, &report, &err) < 0) {
		sn_log_error("profiles %s not applied: %s", p->plan.names,
			     err.msg);
		return -1;
	}
	sn_log_info("job %u step %u: profiles %s applied (%zu set, %zu unset, %zu kept from the user)",
		    ids->job_id, ids->step_id, p->plan.names, report.n_set,
		    report.n_unset, report.n_notices);
	if (first_node)
		report_notices(&report);
	sn_apply_report_free(&report);
	rc = check_rules(p, &env, first_node);
	return rc;
}

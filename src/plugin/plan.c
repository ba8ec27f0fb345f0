/* SPDX-License-Identifier: MIT */
/*
 * Loading the profile file, resolving a request and reporting its rules:
 * shared by both sides (srun/sbatch/salloc and slurmstepd).
 */
#include <string.h>

#include "plugin.h"
#include "profiles/rules.h"
#include "spank_wrap.h"

#define SN_MAX_MATCHED_RULES 64

bool sn_plan_needed(const struct sn_plugin *p)
{
	if (p->profile_req.none)
		return false;
	return p->profile_req.count > 0 || p->cfg.default_profiles.count > 0;
}

/* ERR names the site's file: the user can only tell its admins. */
static void site_error(struct sn_error *err, const char *what)
{
	struct sn_error cause = *err;

	sn_error_set(err, "%s%s; tell your admins", what, cause.msg);
}

int sn_profiles_load(struct sn_plugin *p, struct sn_error *err)
{
	if (p->profiles_loaded)
		return 0;
	if (sn_profile_set_load(&p->profiles, p->cfg.profiles_path, err) < 0) {
		site_error(err, "broken site file ");
		return -1;
	}
	p->profiles_loaded = true;
	return 0;
}

/*
 * A step that asked for no profile must not be stopped by the site's
 * broken profile file or default_profiles=: it gets 1, ERR saying why,
 * and runs without the defaults.  A profile the user asked for is -1.
 */
int sn_plan_prepare(struct sn_plugin *p, struct sn_error *err)
{
	if (p->have_plan) {
		sn_plan_free(&p->plan);
		p->have_plan = false;
	}
	if (sn_profiles_load(p, err) < 0)
		return p->profile_req.count == 0 ? 1 : -1;
	if (sn_resolve(&p->profiles, &p->cfg.default_profiles,
		       &p->profile_req, &p->plan, err) < 0) {
		if (p->profile_req.count > 0)
			return -1;
		site_error(err, "");
		return 1;
	}
	p->have_plan = true;
	return 0;
}

int sn_rules_report(struct sn_plugin *p, struct sn_env *env,
		    const char *source, bool first_node)
{
	const struct sn_rule *matched[SN_MAX_MATCHED_RULES];
	size_t n, i;
	int rc = 0;

	n = sn_rules_evaluate(&p->profiles, env, matched,
			      SN_MAX_MATCHED_RULES);
	for (i = 0; i < n; i++) {
		const struct sn_rule *r = matched[i];
		bool error = r->level == SN_RULE_ERROR;

		rc = error ? -1 : rc;
		if (source) {
			/* Warnings wait for slurmstepd, which sees the real env. */
			if (error)
				sn_log_error("%s: refused by rule \"%s\" (%s:%u): %s",
					     source, r->name, p->profiles.path,
					     r->line, r->message);
			continue;
		}
		sn_log_info("rule \"%s\" (%s) matched: %s", r->name,
			    error ? "error" : "warning", r->message);
		if (!first_node)
			continue;
		/* The submit-time check saw another environment. */
		if (error)
			sn_log_error("refused by rule \"%s\": %s", r->name,
				     r->message);
		else
			sn_log_user("warning: %s (rule \"%s\")", r->message,
				    r->name);
	}
	return rc;
}

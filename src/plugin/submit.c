/* SPDX-License-Identifier: MIT */
/*
 * srun, sbatch and salloc: everything that can be refused is refused here,
 * at submit time, while nothing is queued yet (an option callback failure
 * makes srun/sbatch/salloc exit 255; an init_post_opt failure exits 1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_apply.h"
#include "envlist.h"
#include "plugin.h"
#include "spank_wrap.h"

extern char **environ;

static void print_profile_list(const struct sn_profile_set *set)
{
	size_t i;

	printf("spank-nccl: profiles in %s:\n", set->path);
	for (i = 0; i < set->n_profiles; i++)
		printf("  %-24s %s\n", set->profiles[i].name,
		       set->profiles[i].description ?
		       set->profiles[i].description : "");
	if (set->n_profiles == 0)
		printf("  (none)\n");
	fflush(stdout);
}

/*
 * Error rules are checked against what the tasks would see if the step
 * started from this environment: the submitting shell's variables with
 * the plan applied.  slurmstepd checks again on the real job environment.
 */
static int check_error_rules(struct sn_plugin *p, const char *source)
{
	struct sn_apply_report report = { 0 };
	struct sn_envlist list;
	struct sn_env env;
	struct sn_error err;
	int rc;

	if (sn_envlist_init_from(&list, environ) < 0) {
		sn_log_error("%s: out of memory", source);
		return -1;
	}
	sn_envlist_bind(&list, &env);
	if (sn_plan_apply(&p->plan, &env, &report, &err) < 0) {
		sn_log_error("%s: %s", source, err.msg);
		rc = -1;
		goto out;
	}
	rc = sn_rules_report(p, &env, source, true);
out:
	sn_apply_report_free(&report);
	sn_envlist_free(&list);
	return rc;
}

int sn_submit_check_profiles(struct sn_plugin *p, const char *source)
{
	struct sn_error err;

	if (p->profile_req.list) {
		if (sn_profiles_load(p, &err) < 0) {
			sn_log_error("%s=list: %s", source, err.msg);
			return -1;
		}
		print_profile_list(&p->profiles);
		exit(0);
	}
	if (!sn_plan_needed(p))
		return 0;
	if (sn_plan_prepare(p, &err) < 0) {
		sn_log_error("%s: %s", source, err.msg);
		return -1;
	}
	return check_error_rules(p, source);
}

int sn_submit_post_opt(struct sn_plugin *p)
{
	struct sn_error err;
	const char *value;

	if (!p->profile_req.given) {
		value = getenv(SN_ENV_PROFILE);
		if (value) {
			if (sn_profile_option_parse(value, &p->profile_req,
						    &err) < 0) {
				sn_log_error("%s=%s: %s", SN_ENV_PROFILE, value,
					     err.msg);
				return -1;
			}
			if (sn_submit_check_profiles(p, SN_ENV_PROFILE) < 0)
				return -1;
		} else if (sn_submit_check_profiles(p, "default_profiles") < 0) {
			return -1;
		}
	}
	if (!p->warmup_req.given) {
		value = getenv(SN_ENV_WARMUP);
		if (value && sn_warmup_option_parse(value, &p->warmup_req,
						    &err) < 0) {
			sn_log_error("%s=%s: %s", SN_ENV_WARMUP, value, err.msg);
			return -1;
		}
	}
	return 0;
}

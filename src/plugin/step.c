/* SPDX-License-Identifier: MIT */
/*
 * slurmstepd: the order of the remote hooks (Slurm 22.05, see
 * docs/design.md): init, option callbacks, init_post_opt as root; then
 * seteuid(user) and user_init once per node, before any task is forked;
 * then task_init in every task.
 */
#include <slurm/slurm.h>
#include <string.h>

#include "plugin.h"
#include "spank_wrap.h"

#ifndef SLURM_EXTERN_CONT
#define SLURM_EXTERN_CONT 0xfffffffc
#endif

static void read_env_form(spank_t sp, const char *name, bool given,
			  struct sn_plugin *p, bool is_profile)
{
	char value[1024];
	struct sn_error err;
	int rc;

	if (given)
		return;		/* the command line wins */
	rc = sn_spank_getenv(sp, name, value, sizeof(value));
	if (rc == 0)
		return;
	if (rc < 0) {
		sn_error_set(&p->step_error, "%s is too long", name);
		return;
	}
	rc = is_profile ?
	     sn_profile_option_parse(value, &p->profile_req, &err) :
	     sn_warmup_option_parse(value, &p->warmup_req, &err);
	if (rc < 0)
		sn_error_set(&p->step_error, "%s=%s: %s", name, value, err.msg);
}

/* Still root here: the profile file is read now, whatever its mode. */
int sn_step_post_opt(struct sn_plugin *p, spank_t sp)
{
	struct sn_error err;
	int rc;

	if (!p->config_ok)
		return 0;
	read_env_form(sp, SN_ENV_PROFILE, p->profile_req.given, p, true);
	read_env_form(sp, SN_ENV_WARMUP, p->warmup_req.given, p, false);
	if (p->step_error.msg[0] || !sn_plan_needed(p))
		return 0;
	rc = sn_plan_prepare(p, &err);
	/* srun, sbatch or salloc told the user already (submit.c). */
	if (rc > 0)
		sn_log_info("site default profiles not applied: %s",
			    err.msg);
	else if (rc < 0)
		sn_error_set(&p->step_error, "%s", err.msg);
	return 0;
}

static bool step_uses_plugin(const struct sn_plugin *p)
{
	return sn_plan_needed(p) ||
	       (p->warmup_req.given &&
		p->warmup_req.mode != SN_WARMUP_MODE_OFF);
}

int sn_step_user_init(struct sn_plugin *p, spank_t sp)
{
	struct sn_job_ids ids;

	if (sn_spank_job_ids(sp, &ids) < 0) {
		sn_log_error("cannot read the job's ids from Slurm; profiles and warmup not applied");
		p->fail_tasks = step_uses_plugin(p);
		return 0;
	}
	if (ids.step_id == SLURM_EXTERN_CONT)
		return 0;
	/*
	 * Errors are reported here (the user sees slurmstepd's errors from
	 * user_init on) but returned from task_init: a failing user_init
	 * makes srun exit 0 on 22.05 and drains the node for a batch step.
	 */
	if (!p->config_ok) {
		if (step_uses_plugin(p) || p->profile_req.given) {
			sn_log_error("plugstack.conf is broken on this node (%s); ask your admins",
				     p->config_err.msg);
			p->fail_tasks = true;
		}
		return 0;
	}
	if (p->step_error.msg[0]) {
		sn_log_error("%s", p->step_error.msg);
		p->fail_tasks = true;
		return 0;
	}
	if ((p->have_plan || p->profile_req.given) &&
	    sn_step_apply_profiles(p, sp, &ids) < 0)
		p->fail_tasks = true;
	/* After the profiles (a site's own NCCL_RAS_ADDR wins), before the
	 * warmup: its helper and the tasks get one address. */
	sn_step_ras(p, sp, &ids);
	sn_step_hang_start(p, sp, &ids);
	if (p->fail_tasks || !p->warmup_req.given ||
	    p->warmup_req.mode == SN_WARMUP_MODE_OFF)
		return 0;
	/* In a pyxis container: warmed in task_init (step_container.c). */
	if (sn_step_container_user_init(p, sp, &ids))
		return 0;
	if (sn_step_warmup(p, sp, &ids) < 0)
		p->fail_tasks = true;
	return 0;
}

int sn_step_task_init(struct sn_plugin *p, spank_t sp)
{
	if (p->fail_tasks)
		return -1;
	return p->gate ? sn_step_container_task_init(p, sp) : 0;
}

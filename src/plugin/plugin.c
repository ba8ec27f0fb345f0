/* SPDX-License-Identifier: MIT */
/* Context set-up and the option callbacks, common to every context. */
#include <string.h>

#include "plugin.h"
#include "spank_wrap.h"

int sn_plugin_init(struct sn_plugin *p, spank_t sp, int ac, char **av)
{
	memset(p, 0, sizeof(*p));
	p->where = sn_spank_context();
	if (p->where != S_CTX_LOCAL && p->where != S_CTX_ALLOCATOR &&
	    p->where != S_CTX_REMOTE)
		return 0;	/* slurmd, job_script: nothing to do */

	sn_config_defaults(&p->cfg);
	if (sn_config_parse(&p->cfg, ac, av, &p->config_err) == 0) {
		p->config_ok = true;
		return 0;
	}
	sn_log_error("plugstack.conf: %s", p->config_err.msg);
	/*
	 * An admin mistake: refuse srun/sbatch/salloc right away so it is
	 * seen, but never fail slurmstepd's init (that would drain the node
	 * for a batch job); a step that asks for spank-nccl fails instead.
	 */
	return p->where == S_CTX_REMOTE ? 0 : -1;
}

void sn_plugin_fini(struct sn_plugin *p)
{
	if (p->have_plan)
		sn_plan_free(&p->plan);
	if (p->profiles_loaded)
		sn_profile_set_free(&p->profiles);
	sn_step_container_fini(p);
	memset(p, 0, sizeof(*p));
}

/*
 * Slurm calls option callbacks twice in slurmstepd and, inside a batch
 * script, first with the value inherited from #SBATCH and then with the
 * step's own: the last value wins and calling again is harmless.
 */
int sn_option_profile(struct sn_plugin *p, const char *value, int remote)
{
	struct sn_profile_request req;
	struct sn_error err;

	if (sn_profile_option_parse(value, &req, &err) < 0) {
		sn_log_error("%s", err.msg);	/* names the option */
		return -1;
	}
	p->profile_req = req;
	if (remote)
		return 0;
	return sn_submit_check_profiles(p, "--nccl-profile");
}

int sn_option_warmup(struct sn_plugin *p, const char *value, int remote)
{
	struct sn_warmup_request req;
	struct sn_error err;

	if (sn_warmup_option_parse(value, &req, &err) < 0) {
		sn_log_error("%s", err.msg);	/* names the option */
		return -1;
	}
	p->warmup_req = req;
	p->warmup_unplaced = false;
	/*
	 * NULL comes only from srun/sbatch/salloc's own command line (or an
	 * #SBATCH line); a bare option inherited through the environment
	 * arrives as "(null)" (options.c), and a remote callback gets "".
	 */
	if (!remote && !value)
		return sn_submit_bare_warmup(p);
	return 0;
}

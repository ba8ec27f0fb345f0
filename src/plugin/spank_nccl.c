/* SPDX-License-Identifier: MIT */
/*
 * spank_nccl.so: the only file that defines SPANK symbols.  One dispatch
 * point per hook, switching on spank_context(); the logic lives in
 * plugin.c (all contexts), submit.c (srun/sbatch/salloc) and step*.c
 * (slurmstepd).
 */
#include <slurm/spank.h>

#include "plugin.h"
#include "spank_wrap.h"

SPANK_PLUGIN(spank_nccl, 1);

#if defined(SLURM_VERSION_NUMBER) && \
	SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
/*
 * Slurm 25.05 reads this symbol (dlsym) to decide what a failing
 * slurm_spank_init() in slurmstepd means: ESPANK_NODE_FAILURE (the default)
 * drains the node, ESPANK_JOB_FAILURE fails only the job.  Our remote init
 * never fails on purpose (broken plugstack arguments are reported per step),
 * but should it ever fail, it is not evidence of a bad node: never drain.
 * Not const: 25.05's spank.h declares it "extern int"; nothing writes it.
 */
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif

/*
 * The one piece of mutable state allowed: option callbacks receive no
 * user pointer, so they find the context here.  Each process (srun,
 * sbatch, salloc, one slurmstepd) has its own copy.
 */
static struct sn_plugin sn_ctx;

static int cb_nccl_profile(int val, const char *optarg, int remote)
{
	return sn_option_profile(&sn_ctx, optarg, remote);
}

static int cb_nccl_warmup(int val, const char *optarg, int remote)
{
	return sn_option_warmup(&sn_ctx, optarg, remote);
}

/*
 * Not named spank_options: Slurm would also load a table of that name, and
 * a static table breaks sbatch/salloc on 22.05 (measured); registering from
 * slurm_spank_init() works everywhere.
 */
static struct spank_option sn_options[] = {
	{ "nccl-profile", "NAME[,NAME...]",
	  "[spank-nccl] Apply NCCL/PyTorch environment profiles to every task "
	  "('list' shows them, 'none' disables site defaults). "
	  "Env: " SN_ENV_PROFILE,
	  1, 0, cb_nccl_profile },
	{ "nccl-warmup", "MODE",
	  "[spank-nccl] Check GPUs and warm up NCCL on every node before the "
	  "tasks start. MODE: check, comm (default), bandwidth, fabric "
	  "(one communicator across the step's nodes), off; "
	  "add ',verbose' for the per-node summary, ',nccl=PATH' to warm the "
	  "NCCL the job loads (libnccl.so.2 or its directory). Env: "
	  SN_ENV_WARMUP,
	  2, 0, cb_nccl_warmup },
	SPANK_OPTIONS_TABLE_END
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	int rc = sn_plugin_init(&sn_ctx, sp, ac, av);
	struct spank_option *opt;

	if (rc < 0)
		return rc;
	switch (sn_ctx.where) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
	case S_CTX_REMOTE:
		for (opt = sn_options; opt->name; opt++)
			if (sn_spank_register_option(sp, opt) < 0) {
				sn_log_error("cannot register --%s (another plugin already uses that name?)",
					     opt->name);
				return sn_ctx.where == S_CTX_REMOTE ? 0 : -1;
			}
		return 0;
	default:
		return 0;
	}
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	switch (sn_ctx.where) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		return sn_submit_post_opt(&sn_ctx);
	case S_CTX_REMOTE:
		return sn_step_post_opt(&sn_ctx, sp);
	default:
		return 0;
	}
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	if (sn_ctx.where != S_CTX_REMOTE)
		return 0;
	return sn_step_user_init(&sn_ctx, sp);
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	if (sn_ctx.where != S_CTX_REMOTE)
		return 0;
	return sn_step_task_init(&sn_ctx, sp);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	if (sn_ctx.where == S_CTX_REMOTE)
		sn_step_reuse_job_end(&sn_ctx, sp);
	sn_plugin_fini(&sn_ctx);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * spank_nccl.so: the only file that defines SPANK symbols.  One dispatch
 * point per hook, switching on spank_context(); the logic lives in
 * plugin.c (all contexts), submit.c (srun/sbatch/salloc) and step*.c
 * (slurmstepd).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

/*
 * A refused bare "--nccl-warmup WORD" (submit.c, two lines said) ends
 * srun/sbatch/salloc here with the status Slurm gives a failed option
 * (255, measured on 22.05): returned, Slurm would add "Invalid
 * --nccl-warmup argument: (null)" (spank_process_option()), naming no
 * argument the user wrote.  Nothing is allocated while options parse.
 */
static int cb_nccl_warmup(int val, const char *optarg, int remote)
{
	int rc = sn_option_warmup(&sn_ctx, optarg, remote);

	if (rc < 0 && !remote && !optarg)
		exit(255);
	return rc;
}

/*
 * Not named spank_options: Slurm would also load a table of that name, and
 * a static table breaks sbatch/salloc on 22.05 (measured); registering from
 * slurm_spank_init() works everywhere.  The value synopsis and usage texts
 * are written there, from the parsers' word table (core/option_help.c)
 * and the plugstack.conf arguments just parsed, so --help names this
 * site's defaults: srun, sbatch and salloc run slurm_spank_init() before
 * they parse their options, --help included (spank_init() in
 * srun_job.c's init_srun(), spank_init_allocator() in sbatch.c/salloc.c's
 * main(), 22.05 to 26.05).  Slurm copies all three strings
 * (_spank_option_copy(), src/common/spank.c).
 */
static char warmup_arginfo[128];
static char warmup_usage[2048];
static char profile_usage[2048];

static struct spank_option sn_options[] = {
	{ "nccl-profile", "NAME[,NAME...]", profile_usage,
	  1, 0, cb_nccl_profile },
	{ "nccl-warmup", warmup_arginfo, warmup_usage,
	  2, 0, cb_nccl_warmup },
	SPANK_OPTIONS_TABLE_END
};

/* A config that failed to parse leaves the built-in defaults in the help. */
static void write_usage(const struct sn_plugin *p)
{
	struct sn_config defaults;
	const struct sn_config *cfg = &p->cfg;

	if (!p->config_ok) {
		sn_config_defaults(&defaults);
		cfg = &defaults;
	}
	if (sn_warmup_value_synopsis(warmup_arginfo, sizeof(warmup_arginfo)) < 0)
		snprintf(warmup_arginfo, sizeof(warmup_arginfo), "MODE");
	if (sn_warmup_usage(warmup_usage, sizeof(warmup_usage),
			    cfg->warmup_mode) < 0)
		sn_log_info("--nccl-warmup: help text cut short");
	if (sn_profile_usage(profile_usage, sizeof(profile_usage),
			     &cfg->default_profiles) < 0)
		sn_log_info("--nccl-profile: help text cut short");
}

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
		write_usage(&sn_ctx);
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

/* srun only, after the allocation and before the launch (submit.c). */
int slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
	if (sn_ctx.where != S_CTX_LOCAL)
		return 0;
	return sn_submit_local_user_init(&sn_ctx, sp);
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	if (sn_ctx.where != S_CTX_REMOTE)
		return 0;
	return sn_step_user_init(&sn_ctx, sp);
}

/*
 * A failed step ends each task here, as Slurm would (_exit(1) before the
 * exec; srun: "NODE: tasks 0-3: Exited with exit code 1"): returned, -1
 * adds two lines of Slurm's per task ("spank: required plugin
 * spank_nccl.so: task_init() failed with rc=-1", "Failed to invoke spank
 * plugin stack"; measured on 22.05: 2 + 2 x tasks lines, now 2), under
 * the one message the node already printed.  A failing user_init would
 * let srun exit 0 on 22.05.  So the tasks fail even from an "optional"
 * plugstack.conf line (warmup_policy=warn is the way to run anyway).
 */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	if (sn_ctx.where != S_CTX_REMOTE)
		return 0;
	if (sn_step_task_init(&sn_ctx, sp) < 0)
		_exit(1);
	return 0;
}

/* A task killed while the step's NCCL is stuck: its record (step_hang.c). */
int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	if (sn_ctx.where == S_CTX_REMOTE)
		sn_step_task_exit(&sn_ctx, sp);
	return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	if (sn_ctx.where == S_CTX_REMOTE) {
		sn_step_hang_stop(&sn_ctx);
		sn_step_reuse_job_end(&sn_ctx, sp);
	}
	sn_plugin_fini(&sn_ctx);
	return 0;
}

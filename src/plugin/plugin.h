/* SPDX-License-Identifier: MIT */
/*
 * The plugin's one piece of state: a context filled by slurm_spank_init()
 * and read by the later hooks of the same process (srun, sbatch, salloc
 * or one slurmstepd).  Each hook's logic lives in its own file and takes
 * the context explicitly, so unit tests can drive it.
 */
#ifndef SN_PLUGIN_H
#define SN_PLUGIN_H

#include <stdbool.h>
#include <sys/types.h>

#include <slurm/spank.h>

#include "config/config.h"
#include "base/error.h"
#include "protocol/fault.h"
#include "config/options.h"
#include "profiles/profile_file.h"
#include "profiles/resolve.h"

/*
 * Each field is written by the file named beside it (and freed by
 * plugin.c's sn_plugin_fini); the other files only read it.
 */
struct sn_plugin {
	spank_context_t where;			/* plugin.c */
	bool config_ok;				/* plugin.c */
	struct sn_config cfg;			/* plugin.c */
	struct sn_error config_err;		/* plugin.c */

	/* Option callbacks (plugin.c, then step.c in slurmstepd) or the
	 * SPANK_NCCL_* env-var forms (submit.c). */
	struct sn_profile_request profile_req;
	struct sn_warmup_request warmup_req;
	/* srun/sbatch/salloc: a bare --nccl-warmup of this command line that
	 * could not be placed on it; srun checks S_JOB_ARGV instead. */
	bool warmup_unplaced;			/* submit.c */

	/* Loaded on demand (plan.c); freed in slurm_spank_exit(). */
	bool profiles_loaded;			/* plan.c */
	struct sn_profile_set profiles;		/* plan.c */
	bool have_plan;				/* plan.c */
	struct sn_plan plan;			/* plan.c */

	/* slurmstepd: a problem found before user_init, reported there. */
	struct sn_error step_error;		/* step.c */
	/* slurmstepd: a failure found in user_init, returned from task_init. */
	bool fail_tasks;			/* step.c */

	/*
	 * slurmstepd, a step in a pyxis container (step_container.c): the
	 * warmup moves from user_init to the first task's task_init, once
	 * pyxis has started the container.  gate: shared by the node's
	 * tasks (mmap'd in user_init, before they fork); container_pid: the
	 * task warming the image, set only while it runs the helper;
	 * container_root_fd: that task's /proc/PID/root, opened by the root
	 * agent and inherited by the helper (0: none); stepd_pid: the
	 * tasks' parent.
	 */
	char container_image[1024];		/* step_container.c */
	char host_mntns[64];			/* step_container.c */
	struct sn_container_gate *gate;		/* step_container.c */
	int pid_fd, verdict_fd;			/* step_container.c */
	pid_t container_pid;			/* step_container.c */
	int container_root_fd;			/* step_container.c */
	pid_t stepd_pid;			/* step_container.c */
	bool in_agent;				/* step_container.c */
	char **helper_env;	/* the helper's env, NULL: the job's (ditto) */

	/* slurmstepd, ras=step with ras_sample= and a record sink: the hang
	 * sampler's pipes (closing wake ends it; alive ends when it does) and its last verdict,
	 * mmap'd before it forks (step_hang.c); NULL: none. */
	int hang_wake, hang_alive;		/* step_hang.c */
	struct sn_hang_sample *hang_sample;	/* step_hang.c */
};

/* spank_nccl.c-independent entry points, one per hook and context. */
int sn_plugin_init(struct sn_plugin *p, spank_t sp, int ac, char **av);
void sn_plugin_fini(struct sn_plugin *p);

int sn_option_profile(struct sn_plugin *p, const char *value, int remote);
int sn_option_warmup(struct sn_plugin *p, const char *value, int remote);

/* srun/sbatch/salloc (submit.c) */
int sn_submit_post_opt(struct sn_plugin *p);
/* A bare --nccl-warmup on the command line: -1 if a mode word follows. */
int sn_submit_bare_warmup(struct sn_plugin *p);
/* srun's local_user_init: the same check on S_JOB_ARGV when needed. */
int sn_submit_local_user_init(struct sn_plugin *p, spank_t sp);
/* Validates p->profile_req now (submit time); SOURCE names it in errors. */
int sn_submit_check_profiles(struct sn_plugin *p, const char *source);

/* slurmstepd (step.c, step_env.c, step_warmup.c) */
int sn_step_post_opt(struct sn_plugin *p, spank_t sp);
int sn_step_user_init(struct sn_plugin *p, spank_t sp);
int sn_step_task_init(struct sn_plugin *p, spank_t sp);

/*
 * step_container.c.  user_init: true when the step runs in a pyxis
 * container and the warmup is left to task_init.  task_init: the first
 * local task warms the image's NCCL, the others wait for its verdict;
 * -1 fails the task.  fini: unmaps the gate.
 */
struct sn_job_ids;
bool sn_step_container_user_init(struct sn_plugin *p, spank_t sp,
				 const struct sn_job_ids *ids);
int sn_step_container_task_init(struct sn_plugin *p, spank_t sp);
void sn_step_container_fini(struct sn_plugin *p);
struct sn_job_ids;
int sn_step_apply_profiles(struct sn_plugin *p, spank_t sp,
			   const struct sn_job_ids *ids);
int sn_step_warmup(struct sn_plugin *p, spank_t sp,
		   const struct sn_job_ids *ids);
/* step_env.c: the step's NCCL RAS environment by ras= (ras.h); a
 * failure is logged, never the step's. */
void sn_step_ras(struct sn_plugin *p, spank_t sp, const struct sn_job_ids *ids);

/*
 * step_reuse.c: one warmup per node, GPU set, NCCL and NCCL_* per job.
 * lookup: 1 when a trusted record of a pass covers this step (logged, and
 * told to the user with verbose), 0 to run the helper, -1 on a privilege
 * error.  store: records a pass, or forgets the key after a failure.
 * job_end: the batch/extern step's exit removes the job's records.
 */
int sn_step_reuse_lookup(struct sn_plugin *p, spank_t sp,
			 const struct sn_job_ids *ids, const char *node,
			 const char *visible, enum sn_warmup_mode mode);
int sn_step_reuse_store(struct sn_plugin *p, spank_t sp,
			const struct sn_job_ids *ids, const char *node,
			const char *visible, enum sn_warmup_mode mode,
			bool passed, double elapsed_ms);
void sn_step_reuse_job_end(struct sn_plugin *p, spank_t sp);

/* What one warmup on this node found, for its fleet record. */
struct sn_helper_outcome;
struct sn_warmup_result;
struct sn_warmup_facts {
	const char *node;
	const char *gpus;			/* CUDA_VISIBLE_DEVICES */
	enum sn_warmup_mode mode;
	const struct sn_helper_outcome *outcome;
	const struct sn_warmup_result *result;	/* NULL: none parsed */
	bool ok;
	/* A failure's fault (step_confirm.c): never the helper's word. */
	enum sn_fault fault;
	/* The root confirmation's result: the node's facts (driver, GPUs,
	 * NCCL, busbw) for its metrics; NULL: none ran. */
	const struct sn_warmup_result *trusted;
	const char *message;			/* the failure, or NULL */
	bool reused;				/* an earlier verdict reused */
};

/* step_record.c: writes the record to the configured sinks; -1 only if
 * slurmstepd could not return to the user's identity afterwards. */
int sn_step_record(const struct sn_plugin *p, const struct sn_job_ids *ids,
		   const struct sn_warmup_facts *f);
/* The hang record of a step a signal killed in NCCL (step_hang.c):
 * RAS's VERDICT, taken AGE_S before; fault "job". */
int sn_step_record_hang(const struct sn_plugin *p, const struct sn_job_ids *ids,
			const char *node, int signal, const char *verdict,
			double age_s);
/*
 * step_hang.c, slurmstepd: user_init starts the step's hang sampler (a
 * process of the job user asking the step's RAS every ras_sample=
 * seconds); task_exit, the first task a signal killed, writes the hang
 * record from its last verdict; exit stops it.
 */
void sn_step_hang_start(struct sn_plugin *p, spank_t sp,
			const struct sn_job_ids *ids);
void sn_step_task_exit(struct sn_plugin *p, spank_t sp);
void sn_step_hang_stop(struct sn_plugin *p);

/*
 * plan.c: load the profile file (once) and resolve the request;
 * sn_plan_prepare() is 1 when a request of site defaults alone cannot be
 * met (the step runs without them, ERR says why).
 */
int sn_profiles_load(struct sn_plugin *p, struct sn_error *err);
int sn_plan_prepare(struct sn_plugin *p, struct sn_error *err);
bool sn_plan_needed(const struct sn_plugin *p);
/*
 * plan.c: evaluates the rules on ENV and reports the matches; -1 if an
 * error rule matched.  SOURCE (submit time: the option or variable) set:
 * only error rules, with the file and line.  SOURCE NULL (slurmstepd):
 * every match logged; FIRST_NODE prints warnings and refusals.
 */
struct sn_env;
int sn_rules_report(struct sn_plugin *p, struct sn_env *env,
		    const char *source, bool first_node);

#endif

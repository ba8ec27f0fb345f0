/* SPDX-License-Identifier: MIT */
/*
 * Every call into Slurm goes through these few functions, so the plugin's
 * logic links against a mock in the unit tests (tests/unit/mock_spank.c)
 * and against Slurm's SPANK API in spank_nccl.so (spank_wrap.c).
 */
#ifndef SN_SPANK_WRAP_H
#define SN_SPANK_WRAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <slurm/spank.h>

#define SN_MAX_GROUPS 256

/* slurm.h's value (pyxis keeps the same fallback); spank.h lacks it. */
#ifndef SLURM_BATCH_SCRIPT
#define SLURM_BATCH_SCRIPT 0xfffffffb
#endif

struct sn_job_ids {
	uid_t uid;
	gid_t gid;
	gid_t groups[SN_MAX_GROUPS];
	int n_groups;
	uint32_t job_id;
	uint32_t step_id;
	uint32_t node_id;
	uint32_t nnodes;	/* S_JOB_NNODES: nodes of the step; 0 unknown */
	uint32_t local_tasks;
	char cluster[64];	/* SLURM_CLUSTER_NAME; "" unknown */
};

struct sn_cmdline;

spank_context_t sn_spank_context(void);
int sn_spank_register_option(spank_t sp, struct spank_option *opt);

/* Remote (slurmstepd) job environment. get: 1 found, 0 unset, -1 error. */
int sn_spank_getenv(spank_t sp, const char *name, char *buf, size_t len);
int sn_spank_setenv(spank_t sp, const char *name, const char *value);
int sn_spank_unsetenv(spank_t sp, const char *name);
/* The job's environment array (remote only); NULL on error. */
char **sn_spank_job_env(spank_t sp);
int sn_spank_job_ids(spank_t sp, struct sn_job_ids *ids);
/*
 * Another plugin's option NAME for this step (spank_option_getopt by
 * name, e.g. pyxis's "container-image"): 1 set (VALUE filled), 0 not set
 * or no such option, -1 too long for BUF.
 */
int sn_spank_option_value(spank_t sp, const char *name, char *buf,
			  size_t len);
/* S_JOB_ARGV: the step's command (srun's local_user_init, slurmstepd). */
int sn_spank_job_argv(spank_t sp, int *argc, char ***argv);
/* S_TASK_EXIT_STATUS: the wait() status of the task (task_exit). */
int sn_spank_task_exit_status(spank_t sp, int *status);

/*
 * The launcher (srun, sbatch, salloc) around an option callback: getopt's
 * optind at that moment and the process's own command line
 * (/proc/self/cmdline).  core/cmdline.c says what they are worth.
 */
int sn_launcher_optind(void);
int sn_launcher_cmdline(struct sn_cmdline *cl);

/*
 * The process's ids, changed by as_root.c alone: getresuid/getresgid,
 * seteuid, setegid here (spank_wrap.c); a scripted process in the unit
 * tests (mock_spank.c), so the privileged section is tested without root.
 * 0, or -1 with errno.
 */
struct sn_proc_ids {
	uid_t ruid, euid;
	gid_t rgid, egid;
};

int sn_proc_ids(struct sn_proc_ids *ids);
int sn_proc_set_euid(uid_t euid);
int sn_proc_set_egid(gid_t egid);

/*
 * Logging, always prefixed "spank-nccl: ".  sn_log_user reaches the user's
 * terminal from srun/sbatch and from slurmstepd (user_init onwards);
 * sn_log_error does too, marked as an error; sn_log_info only reaches the
 * daemon's log (or srun -v).
 */
void sn_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sn_log_user(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sn_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

/* SPDX-License-Identifier: MIT */
/* The real side of spank_wrap.h: SPANK calls, the process's ids. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config/cmdline.h"
#include "spank_wrap.h"
#include "base/strutil.h"

spank_context_t sn_spank_context(void)
{
	return spank_context();
}

int sn_spank_register_option(spank_t sp, struct spank_option *opt)
{
	/* Only ESPANK_SUCCESS == 0 is stable across releases (21.08 renumbered). */
	return spank_option_register(sp, opt) == ESPANK_SUCCESS ? 0 : -1;
}

int sn_spank_getenv(spank_t sp, const char *name, char *buf, size_t len)
{
	spank_err_t rc;

	if (len > INT32_MAX)
		len = INT32_MAX;
	rc = spank_getenv(sp, name, buf, (int)len);
	if (rc == ESPANK_SUCCESS)
		return 1;
	if (rc == ESPANK_ENV_NOEXIST)
		return 0;
	return -1;
}

int sn_spank_setenv(spank_t sp, const char *name, const char *value)
{
	return spank_setenv(sp, name, value, 1) == ESPANK_SUCCESS ? 0 : -1;
}

int sn_spank_unsetenv(spank_t sp, const char *name)
{
	return spank_unsetenv(sp, name) == ESPANK_SUCCESS ? 0 : -1;
}

int sn_spank_option_value(spank_t sp, const char *name, char *buf,
			  size_t len)
{
	struct spank_option opt = { .name = (char *)name, .has_arg = 1 };
	char *value = NULL;

	if (spank_option_getopt(sp, &opt, &value) != ESPANK_SUCCESS ||
	    !value || !value[0])
		return 0;
	if (strlen(value) >= len)
		return -1;
	strcpy(buf, value);
	return 1;
}

char **sn_spank_job_env(spank_t sp)
{
	char **env = NULL;

	if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS)
		return NULL;
	return env;
}

int sn_spank_job_ids(spank_t sp, struct sn_job_ids *ids)
{
	gid_t *groups = NULL;
	int n_groups = 0;

	memset(ids, 0, sizeof(*ids));
	if (spank_get_item(sp, S_JOB_UID, &ids->uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &ids->gid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ID, &ids->job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &ids->step_id) != ESPANK_SUCCESS)
		return -1;
	if (spank_get_item(sp, S_JOB_NODEID, &ids->node_id) != ESPANK_SUCCESS)
		ids->node_id = 0;
	if (spank_get_item(sp, S_JOB_NNODES, &ids->nnodes) != ESPANK_SUCCESS)
		ids->nnodes = 0;
	if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ids->local_tasks) !=
	    ESPANK_SUCCESS)
		ids->local_tasks = 0;
	/* Best effort: the fleet record's "cluster". */
	if (sn_spank_getenv(sp, "SLURM_CLUSTER_NAME", ids->cluster,
			    sizeof(ids->cluster)) < 0)
		ids->cluster[0] = '\0';
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &groups, &n_groups) ==
		    ESPANK_SUCCESS && groups) {
		if (n_groups > SN_MAX_GROUPS)
			return -1;
		memcpy(ids->groups, groups, sizeof(gid_t) * (size_t)n_groups);
		ids->n_groups = n_groups;
	}
	return 0;
}

int sn_spank_task_exit_status(spank_t sp, int *status)
{
	*status = 0;
	return spank_get_item(sp, S_TASK_EXIT_STATUS, status) ==
	       ESPANK_SUCCESS ? 0 : -1;
}

int sn_spank_job_argv(spank_t sp, int *argc, char ***argv)
{
	*argc = 0;
	*argv = NULL;
	if (spank_get_item(sp, S_JOB_ARGV, argc, argv) != ESPANK_SUCCESS)
		return -1;
	return 0;
}

/*
 * libc's getopt state: srun, sbatch and salloc call getopt_long() and run
 * option callbacks from inside that loop (core/cmdline.c), and the
 * plugin, loaded into the same process, shares the one optind.
 */
int sn_launcher_optind(void)
{
	return optind;
}

int sn_launcher_cmdline(struct sn_cmdline *cl)
{
	return sn_cmdline_read("/proc/self/cmdline", cl);
}

int sn_proc_ids(struct sn_proc_ids *ids)
{
	uid_t suid;
	gid_t sgid;

	if (getresuid(&ids->ruid, &ids->euid, &suid) < 0 ||
	    getresgid(&ids->rgid, &ids->egid, &sgid) < 0)
		return -1;
	return 0;
}

int sn_proc_set_euid(uid_t euid)
{
	return seteuid(euid);
}

int sn_proc_set_egid(gid_t egid)
{
	return setegid(egid);
}

/* Every line through sn_vformat_printable: one escaping path. */
#define SN_LOG_BODY(fn)                                         \
	do {                                                    \
		char msg[2048];                                 \
		va_list ap;                                     \
		va_start(ap, fmt);                              \
		sn_vformat_printable(msg, sizeof(msg), fmt, ap); \
		va_end(ap);                                     \
		fn("spank-nccl: %s", msg);                      \
	} while (0)

void sn_log_error(const char *fmt, ...)
{
	SN_LOG_BODY(slurm_error);
}

void sn_log_user(const char *fmt, ...)
{
	SN_LOG_BODY(slurm_spank_log);
}

void sn_log_info(const char *fmt, ...)
{
	SN_LOG_BODY(slurm_info);
}

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config/cmdline.h"
#include "mock_spank.h"

static struct mock_spank mock;

struct mock_spank *mock_spank(void)
{
	return &mock;
}

spank_t mock_spank_handle(void)
{
	return (spank_t)&mock;
}

void mock_spank_reset(spank_context_t context, char *const *env)
{
	static char *empty[] = { NULL };

	sn_envlist_free(&mock.env);
	memset(&mock, 0, sizeof(mock));
	mock.context = context;
	mock.ids.uid = 1000;
	mock.ids.gid = 1000;
	mock.ids.job_id = 42;
	mock.ids.step_id = 0;
	mock.ids.nnodes = 1;
	sn_envlist_init_from(&mock.env, env ? env : empty);
	mock.proc.ruid = getuid();
	mock.proc.euid = geteuid();
	mock.proc.rgid = getgid();
	mock.proc.egid = getegid();
}

bool mock_logged(const char (*lines)[2048], size_t n, const char *needle)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strstr(lines[i], needle))
			return true;
	return false;
}

spank_context_t sn_spank_context(void)
{
	return mock.context;
}

int sn_spank_register_option(spank_t sp, struct spank_option *opt)
{
	return 0;
}

int sn_spank_getenv(spank_t sp, const char *name, char *buf, size_t len)
{
	const char *v = sn_envlist_get(&mock.env, name);

	if (!v)
		return 0;
	if (strlen(v) >= len)
		return -1;
	strcpy(buf, v);
	return 1;
}

int sn_spank_setenv(spank_t sp, const char *name, const char *value)
{
	mock.setenv_calls++;
	if (mock.setenv_fail_after &&
	    mock.setenv_calls >= mock.setenv_fail_after)
		return -1;
	return sn_envlist_set(&mock.env, name, value);
}

int sn_spank_unsetenv(spank_t sp, const char *name)
{
	return sn_envlist_unset(&mock.env, name);
}

int sn_spank_option_value(spank_t sp, const char *name, char *buf,
			  size_t len)
{
	if (!mock.option_name || !mock.option_value ||
	    strcmp(mock.option_name, name) != 0)
		return 0;
	if (strlen(mock.option_value) >= len)
		return -1;
	strcpy(buf, mock.option_value);
	return 1;
}

char **sn_spank_job_env(spank_t sp)
{
	static char *copy[256];
	size_t i;

	for (i = 0; i < mock.env.n && i < 255; i++)
		copy[i] = mock.env.vars[i];
	copy[i] = NULL;
	return copy;
}

int sn_spank_job_ids(spank_t sp, struct sn_job_ids *ids)
{
	if (mock.ids_fail)
		return -1;
	*ids = mock.ids;
	return 0;
}

int sn_spank_task_exit_status(spank_t sp, int *status)
{
	*status = mock.task_exit_status;
	return 0;
}

int sn_spank_job_argv(spank_t sp, int *argc, char ***argv)
{
	*argc = mock.job_argc;
	*argv = mock.job_argv;
	return mock.job_argv ? 0 : -1;
}

int sn_launcher_optind(void)
{
	return mock.optind;
}

int sn_launcher_cmdline(struct sn_cmdline *cl)
{
	if (!mock.cmdline)
		return -1;
	return sn_cmdline_from(cl, mock.cmdline, mock.cmdline_n);
}

int sn_proc_ids(struct sn_proc_ids *ids)
{
	*ids = mock.proc;
	return 0;
}

/* 1: the set call may change an id to ID (REAL: the real id); 0: it
 * succeeds without effect; -1: refused. */
static int proc_may_set(unsigned int id, unsigned int real)
{
	int n = ++mock.proc_set_calls;
	unsigned int bit = n <= 32 ? 1u << (n - 1) : 0;

	if ((mock.proc_fail & bit) || (mock.proc_no_return && id != 0) ||
	    (mock.proc.euid != 0 && id != real)) {
		errno = EPERM;
		return -1;
	}
	return (mock.proc_lie & bit) ? 0 : 1;
}

int sn_proc_set_euid(uid_t euid)
{
	int may = proc_may_set(euid, mock.proc.ruid);

	if (may > 0)
		mock.proc.euid = euid;
	return may < 0 ? -1 : 0;
}

int sn_proc_set_egid(gid_t egid)
{
	int may = proc_may_set(egid, mock.proc.rgid);

	if (may > 0)
		mock.proc.egid = egid;
	return may < 0 ? -1 : 0;
}

#define MOCK_CAPTURE(arr, count)                                        \
	do {                                                            \
		va_list ap;                                             \
		if ((count) >= MOCK_LOG_MAX)                            \
			return;                                         \
		va_start(ap, fmt);                                      \
		vsnprintf(arr[count], sizeof(arr[count]), fmt, ap);     \
		va_end(ap);                                             \
		(count)++;                                              \
	} while (0)

void sn_log_error(const char *fmt, ...)
{
	MOCK_CAPTURE(mock.errors, mock.n_errors);
}

void sn_log_user(const char *fmt, ...)
{
	MOCK_CAPTURE(mock.user, mock.n_user);
}

void sn_log_info(const char *fmt, ...)
{
	MOCK_CAPTURE(mock.info, mock.n_info);
}

/* SPDX-License-Identifier: MIT */
/* A scriptable stand-in for Slurm behind src/plugin/spank_wrap.h. */
#ifndef SN_MOCK_SPANK_H
#define SN_MOCK_SPANK_H

#include <stdbool.h>
#include <stddef.h>

#include "base/envlist.h"
#include "spank_wrap.h"

#define MOCK_LOG_MAX 64

struct mock_spank {
	spank_context_t context;
	struct sn_envlist env;		/* the job environment */
	struct sn_job_ids ids;
	bool ids_fail;
	int setenv_fail_after;		/* fail the Nth setenv; 0: never */
	int setenv_calls;
	/* the launcher: its command line (NULL: unreadable), getopt's optind,
	 * and S_JOB_ARGV (NULL: not available) */
	const char *const *cmdline;
	size_t cmdline_n;
	int optind;
	char **job_argv;
	int job_argc;
	int task_exit_status;
	/* another plugin's option seen by sn_spank_option_value: the value
	 * of option_name, NULL unset */
	const char *option_name;
	const char *option_value;
	/*
	 * The process's ids (as_root.c), the test's own after a reset.
	 * Setting one needs euid 0 or the real id (as the kernel's rules,
	 * with the saved id equal to the real one).  proc_fail: bit N-1
	 * fails the Nth set call; proc_no_return: setting an id other than
	 * 0 fails (a section that cannot be left).  Both with EPERM.
	 * proc_lie: bit N-1 makes the Nth set call succeed without effect.
	 */
	struct sn_proc_ids proc;
	int proc_set_calls;
	unsigned int proc_fail;
	bool proc_no_return;
	unsigned int proc_lie;
	/* captured messages, without the "spank-nccl: " prefix */
	char user[MOCK_LOG_MAX][2048];
	size_t n_user;
	char errors[MOCK_LOG_MAX][2048];
	size_t n_errors;
	char info[MOCK_LOG_MAX][2048];
	size_t n_info;
};

/* Resets the mock; the job env starts as ENV (NULL-terminated) or empty. */
void mock_spank_reset(spank_context_t context, char *const *env);
struct mock_spank *mock_spank(void);
/* Handle to pass where the plugin expects a spank_t. */
spank_t mock_spank_handle(void);
/* True if any captured line of KIND contains NEEDLE. */
bool mock_logged(const char (*lines)[2048], size_t n, const char *needle);

#endif

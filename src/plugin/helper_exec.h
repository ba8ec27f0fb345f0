/* SPDX-License-Identifier: MIT */
/*
 * Runs a helper program as the job user with a hard deadline.  No SPANK
 * calls: the caller passes ids, argv and environment, so this is tested
 * directly (tests/unit/test_helper_exec.c).
 *
 * The child: own process group; default signal dispositions, nothing
 * blocked (slurmstepd blocks signals); stdin /dev/null; stdout and stderr
 * captured; the result pipe at result_fd if asked for (the helper's own
 * channel: NCCL, CUDA and the job's LD_PRELOAD may print on stdout);
 * every other descriptor closed; oom_score_adj 0 (slurmstepd
 * runs at -1000 and children inherit it); supplementary groups, then real,
 * effective and saved gid, then uid set to the job user's (in user_init
 * the real uid is still 0, so seteuid alone would let it regain root).
 *
 * The child then stays as the helper's supervisor (a child subreaper, not
 * dumpable, never executing anything) and forks the helper: when the
 * helper exits or must stop, it kills and reaps every descendant, even
 * one that left the process group with setsid(), and reports the
 * helper's wait status on a pipe.
 *
 * The parent: reads the output while waiting; at the deadline SIGTERM,
 * then SIGKILL, to the whole process group; always reaps; kills whatever
 * is left in the group before reaping the supervisor.
 */
#ifndef SN_HELPER_EXEC_H
#define SN_HELPER_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SN_HELPER_OUT_MAX 65536
#define SN_HELPER_ERR_MAX 8192

struct sn_helper_spec {
	const char *path;		/* absolute path, admin-chosen */
	char *const *argv;
	char *const *envp;
	bool drop_privileges;		/* false only in unprivileged tests */
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	int n_groups;
	unsigned int timeout_ms;	/* SIGTERM when this expires */
	unsigned int kill_grace_ms;	/* then SIGKILL after this */
	/* > 2: descriptors the helper inherits at their numbers (the only
	 * ones besides stdio and the result's): a container's root, the
	 * step key's pipe; 0: none */
	int pass_fd[2];
	/* > 2 and neither pass_fd: the helper gets a pipe's write end at
	 * this number, read into outcome.result; 0: none */
	int result_fd;
};

/* The number of the result pipe spank_nccl.so gives nccl-warmup
 * (--result-fd), or the next free one when a pass_fd has it. */
#define SN_HELPER_RESULT_FD 3

/* Closes every descriptor from 3 up but A and B (may be equal). */
int sn_close_all_but(int a, int b);

enum sn_helper_stage {
	SN_HELPER_STAGE_NONE = 0,
	SN_HELPER_STAGE_FORK,
	SN_HELPER_STAGE_SETUP,		/* stdio, oom_score_adj, fds */
	SN_HELPER_STAGE_PRIVILEGES,	/* dropping to the job user */
	SN_HELPER_STAGE_EXEC,
};

struct sn_helper_outcome {
	enum sn_helper_stage failed_stage;	/* before the helper ran */
	int failed_errno;
	bool exited;
	int exit_code;
	bool signaled;
	int signal;
	bool timed_out;
	double elapsed_ms;
	size_t out_len;
	/* stdout's last bytes (the first out_dropped were let go),
	 * NUL-terminated: with result_fd, what the libraries printed */
	char out[SN_HELPER_OUT_MAX + 1];
	size_t out_dropped;
	size_t result_len;
	char result[SN_HELPER_OUT_MAX + 1];	/* result_fd's first bytes */
	size_t err_len;
	char err[SN_HELPER_ERR_MAX + 1];	/* stderr (first bytes) */
};

/* 0 when the helper ran (whatever its status), -1 if it could not start. */
int sn_helper_run(const struct sn_helper_spec *spec,
		  struct sn_helper_outcome *out);
const char *sn_helper_stage_name(enum sn_helper_stage stage);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Between the two sides of sn_helper_run(): what the child (helper_child.c)
 * reports to the parent (helper_exec.c) on the report pipe, and the
 * limits both keep.
 */
#ifndef SN_HELPER_CHILD_H
#define SN_HELPER_CHILD_H

#include <sys/types.h>

#include "helper_exec.h"

#define SN_POLL_SLICE_MS 20
#define SN_REAP_LIMIT_MS 2000
/* How long the supervisor may spend killing and reaping what the helper
 * left; below SN_REAP_LIMIT_MS so the parent outlasts it. */
#define SN_DESCENDANTS_LIMIT_MS 1000

enum { SN_CHILD_OUT, SN_CHILD_ERR, SN_CHILD_REPORT, SN_CHILD_RESULT };

enum child_report_kind {
	REPORT_FAILURE = 1,	/* the helper could not be started */
	REPORT_STATUS,		/* the helper's wait status */
};

/* Written on the report pipe by the supervisor and the helper's child. */
struct child_report {
	int kind;
	int stage;
	int error;
	int status;
};

/*
 * In the forked child: sets up, drops privileges, forks the helper and
 * supervises it.  FDS: the write ends for stdout, stderr, the reports
 * and the result (-1: spec->result_fd is 0).  Never returns.
 */
void sn_helper_child_run(const struct sn_helper_spec *spec, pid_t parent,
			 const int fds[4])
	__attribute__((noreturn));

/*
 * For good to UID, GID and GROUPS (N_GROUPS of them), checked: all three
 * uids and gids, and for a user other than root that root cannot be
 * regained.  0, or -1 with errno set.  The only id changes of src/plugin
 * besides the privileged section (as_root.c): the helper's
 * drop, the hang sampler's (step_hang.c) and the derivation's root.
 */
int sn_switch_ids_for_good(uid_t uid, gid_t gid, const gid_t *groups,
			   int n_groups);

/*
 * In a forked child: root for good (no groups), then ARGV[0] (an
 * admin-chosen absolute path) with ARGV and no environment; _exit(127)
 * if either fails.  The step key's derivation (step_fabric_auth.c).
 */
void sn_exec_as_root(char *const argv[]) __attribute__((noreturn));

#endif

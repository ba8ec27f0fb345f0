/* SPDX-License-Identifier: MIT */
/*
 * The privileged section (as_root.h).  What slurmstepd's ids are in
 * user_init, from Slurm's _fork_all_tasks() (slurmstepd/mgr.c, 22.05;
 * drop_privileges() in later releases, the same calls): it runs as root,
 * then _drop_privileges(job, true, ...) does setegid(job gid),
 * setgroups(the job's groups), seteuid(job uid), and only then
 * spank_user() calls user_init; _reclaim_privileges() undoes all three
 * after the tasks are forked.  So in user_init: real (and saved) uid and
 * gid 0, euid/egid the job user's, the user's supplementary groups.
 *
 * The section takes euid 0 (allowed without privilege: the real uid is
 * 0) and then egid 0 (allowed now), nothing else:
 *  - euid 0 brings back the effective capabilities (capabilities(7):
 *    euid 0 again copies the permitted set, kept because the real uid
 *    stayed 0), so access checks never look at groups: the user's
 *    supplementary groups stay as Slurm set them, and nothing has to be
 *    saved or restored for them.
 *  - egid 0 because files and directories created in the section take
 *    the egid as their group: a record file (0640) or a reuse directory
 *    must not belong to the job user's group.
 * Leaving sets the egid back first (while still root), then the euid.
 * glibc's seteuid/setegid change every thread of slurmstepd, as Slurm's
 * own drop does.  Any id call that fails on the way back leaves the
 * process partly root: leave then fails, and the caller fails the step.
 */
#include <errno.h>
#include <string.h>

#include "as_root.h"
#include "spank_wrap.h"

int sn_priv_enter(struct sn_priv *s, const char *what)
{
	struct sn_proc_ids ids;

	if (s->entered) {
		s->misused = true;
		sn_log_error("internal error: privileged section for %s entered twice; the step will fail",
			     what);
		return -1;
	}
	*s = (struct sn_priv){ .what = what, .entered = true };
	if (sn_proc_ids(&ids) < 0) {
		sn_log_info("%s: cannot read the process's ids (%s); skipped",
			    what, strerror(errno));
		return -1;
	}
	s->euid = ids.euid;
	s->egid = ids.egid;
	/* A real uid other than 0 (not slurmstepd as root) has nothing to
	 * gain; root already has what the section needs. */
	if (ids.ruid != 0 || (ids.euid == 0 && ids.egid == 0))
		return 0;
	if (ids.euid != 0 && sn_proc_set_euid(0) < 0) {
		sn_log_info("%s: cannot become root (seteuid(0): %s); skipped",
			    what, strerror(errno));
		return -1;
	}
	/* From here leave has something to restore, even on failure. */
	s->switched = true;
	if (ids.egid != 0 && sn_proc_set_egid(0) < 0) {
		sn_log_info("%s: cannot become root (setegid(0): %s); skipped",
			    what, strerror(errno));
		return -1;
	}
	return 0;
}

static int restore(const struct sn_priv *s)
{
	struct sn_proc_ids now;
	const char *call = NULL;
	int e = 0;

	/* The egid first: changing it needs the euid 0 the section has. */
	if (sn_proc_set_egid(s->egid) < 0) {
		call = "setegid";
		e = errno;
	}
	/* Even when that failed: as far from root as can be. */
	if (sn_proc_set_euid(s->euid) < 0 && !call) {
		call = "seteuid";
		e = errno;
	}
	if (!call && sn_proc_ids(&now) < 0) {
		call = "getresuid";
		e = errno;
	}
	if (!call && (now.euid != s->euid || now.egid != s->egid)) {
		call = "a check of the ids";
		e = EPERM;
	}
	if (!call)
		return 0;
	sn_log_error("cannot return to uid %u gid %u after %s (%s: %s): refusing to start the step's tasks",
		     (unsigned int)s->euid, (unsigned int)s->egid, s->what,
		     call, strerror(e));
	return -1;
}

int sn_priv_leave(struct sn_priv *s)
{
	int rc = 0;

	if (!s->entered) {
		sn_log_error("internal error: privileged section left without being entered; the step will fail");
		return -1;
	}
	if (s->switched && restore(s) < 0)
		rc = -1;
	if (s->misused)
		rc = -1;	/* said when the second enter was refused */
	*s = (struct sn_priv)SN_PRIV_INIT;
	return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * The one privileged section of the plugin: slurmstepd's few root writes
 * from user_init (the fleet record and metrics, the warmup reuse records)
 * and the container agent's open of a task's /proc/PID/root
 * (step_container.c) run between sn_priv_enter() and sn_priv_leave(), and nowhere else does
 * the plugin change its ids (the helper's child drops them for good,
 * helper_child.c, which is no section: it never comes back).
 *
 *	struct sn_priv priv = SN_PRIV_INIT;
 *
 *	if (sn_priv_enter(&priv, "warmup reuse") == 0)
 *		... root's I/O ...
 *	if (sn_priv_leave(&priv) < 0)
 *		... refuse the step: its tasks must not start ...
 *
 * Every sn_priv_enter() is followed by exactly one sn_priv_leave() on the
 * same struct, whatever enter returned: leave is what says whether the
 * process is the job user's again.  as_root.c says what is switched
 * and why; the id calls go through spank_wrap.h (scripted in the unit
 * tests, tests/unit/test_as_root.c).
 */
#ifndef SN_AS_ROOT_H
#define SN_AS_ROOT_H

#include <stdbool.h>
#include <sys/types.h>

struct sn_priv {
	const char *what;	/* for messages: "the warmup record", ... */
	bool entered;		/* enter called, leave not yet */
	bool switched;		/* ids changed: leave restores them */
	bool misused;		/* entered twice: leave fails */
	uid_t euid;		/* what leave restores */
	gid_t egid;
};

#define SN_PRIV_INIT { 0 }

/*
 * Takes euid 0 and egid 0 for WHAT.  0: in the section (root, or nothing
 * to switch: already root, or a real uid other than 0, where nothing can
 * be gained and the I/O runs as the process is).  -1: not in the section
 * (logged): skip the root I/O, then call sn_priv_leave() all the same.
 * A second enter on S before its leave is refused (logged as an error)
 * and makes that leave fail.
 */
int sn_priv_enter(struct sn_priv *s, const char *what);

/*
 * Returns to the euid/egid saved by sn_priv_enter(), and checks that the
 * process has them.  -1 (logged as an error, which the user sees) when it
 * could not, when S was entered twice, or when S was not entered: the
 * caller must then fail the step (task_init refuses its tasks) and run
 * nothing more of the user's.
 */
int sn_priv_leave(struct sn_priv *s);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The privileged section (as_root.c) against scripted ids
 * (mock_spank.c): slurmstepd in user_init has real uid/gid 0 and the job
 * user's euid/egid.  Round trips, failures on the way in and on the way
 * back, and misuse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mock_spank.h"
#include "as_root.h"

#define USER 1000

static struct mock_spank *in_user_init(void)
{
	struct mock_spank *m;

	mock_spank_reset(S_CTX_REMOTE, NULL);
	m = mock_spank();
	m->proc = (struct sn_proc_ids){ .ruid = 0, .euid = USER,
					.rgid = 0, .egid = USER };
	return m;
}

static void assert_ids(const struct mock_spank *m, unsigned int euid,
		       unsigned int egid)
{
	assert_int_equal(m->proc.euid, euid);
	assert_int_equal(m->proc.egid, egid);
	assert_int_equal(m->proc.ruid, 0);
}

static void round_trip_restores_the_ids(void **state)
{
	struct mock_spank *m = in_user_init();
	struct sn_priv priv = SN_PRIV_INIT;

	(void)state;
	assert_int_equal(sn_priv_enter(&priv, "the test"), 0);
	assert_ids(m, 0, 0);
	assert_int_equal(sn_priv_leave(&priv), 0);
	assert_ids(m, USER, USER);
	assert_int_equal(m->n_errors + m->n_info, 0);
	/* The struct serves again. */
	assert_int_equal(sn_priv_enter(&priv, "the test"), 0);
	assert_ids(m, 0, 0);
	assert_int_equal(sn_priv_leave(&priv), 0);
	assert_ids(m, USER, USER);
}

/* Root already, or a process that is not root at all: nothing changes. */
static void nothing_to_switch(void **state)
{
	struct mock_spank *m = in_user_init();
	struct sn_priv priv = SN_PRIV_INIT;

	(void)state;
	m->proc.euid = m->proc.egid = 0;
	assert_int_equal(sn_priv_enter(&priv, "the test"), 0);
	assert_int_equal(sn_priv_leave(&priv), 0);
	assert_int_equal(m->proc_set_calls, 0);

	m->proc = (struct sn_proc_ids){ .ruid = USER, .euid = USER,
					.rgid = USER, .egid = USER };
	assert_int_equal(sn_priv_enter(&priv, "the test"), 0);
	assert_int_equal(m->proc.euid, USER);
	assert_int_equal(sn_priv_leave(&priv), 0);
	assert_int_equal(m->proc_set_calls, 0);
	assert_int_equal(m->n_errors, 0);
}

/* euid 0 with the user's egid (Slurm's drop without seteuid): egid only. */
static void root_with_the_users_group(void **state)
{
	struct mock_spank *m = in_user_init();
	struct sn_priv priv = SN_PRIV_INIT;

	(void)state;
	m->proc.euid = 0;
	assert_int_equal(sn_priv_enter(&priv, "the test"), 0);
	assert_ids(m, 0, 0);
	assert_int_equal(sn_priv_leave(&priv), 0);
	assert_ids(m, 0, USER);
}

/* seteuid(0) refused: not in the section, nothing to undo, said why. */
static void enter_fails_cleanly(void **state)
{
	struct mock_spank *m = in_user_init();
	struct sn_priv priv = SN_PRIV_INIT;

	(void)state;
	m->proc_fail = 1u << 0;
	assert_int_equal(sn_priv_enter(&priv, "the test"), -1);
	assert_ids(m, USER, USER);
	assert_true(mock_logged(m->info, m->n_info,
				"the test: cannot become root (seteuid(0): Operation not permitted)"));
	assert_int_equal(sn_priv_leave(&priv), 0);
	assert_ids(m, USER, USER);
	assert_int_equal(m->n_errors, 0);
}

/* setegid(0) refused after seteuid(0): leave takes the euid back. */
static void enter_fails_halfway(void **state)
{
	struct mock_spank *m = in_user_init();
	struct sn_priv priv = SN_PRIV_INIT;

	(void)state;
	m->proc_fail = 1u << 1;
	assert_int_equal(sn_priv_enter(&priv, "the test"), -1);
	assert_true(mock_logged(m->info, m->n_info, "setegid(0)"));
	assert_int_equal(m->proc.euid, 0);
	assert_int_equal(sn_priv_leave(&priv), 0);
	assert_ids(m, USER, USER);
	assert_int_equal(m->n_errors, 0);
}

/* Leave's result and its one error, for a restore that failed. */
static void assert_restore_failed(struct mock_spank *m, struct sn_priv *priv,
				  const char *cause)
{
	assert_int_equal(sn_priv_leave(priv), -1);
	assert_int_equal(m->n_errors, 1);
	assert_true(mock_logged(m->errors, m->n_errors,
				"cannot return to uid 1000 gid 1000 after the test"));
	assert_true(mock_logged(m->errors, m->n_errors, cause));
	assert_true(mock_logged(m->errors, m->n_errors,
				"refusing to start the step's tasks"));
}

/* The way back fails at either call, or for good: leave fails, loudly. */
static void failed_restore_is_reported(void **state)
{
	struct sn_priv priv = SN_PRIV_INIT;
	struct mock_spank *m;

	(void)state;
	/* setegid(user) refused: the euid still goes back. */
	m = in_user_init();
	m->proc_fail = 1u << 2;
	assert_int_equal(sn_priv_enter(&priv, "the test"), 0);
	assert_restore_failed(m, &priv, "(setegid: Operation not permitted)");
	assert_ids(m, USER, 0);

	/* seteuid(user) refused: still root. */
	m = in_user_init();
	m->proc_fail = 1u << 3;
	assert_int_equal(sn_priv_enter(&priv, "the test"), 0);
	assert_restore_failed(m, &priv, "(seteuid: Operation not permitted)");
	assert_ids(m, 0, USER);

	/* No way back at all. */
	m = in_user_init();
	m->proc_no_return = true;
	assert_int_equal(sn_priv_enter(&priv, "the test"), 0);
	assert_restore_failed(m, &priv, "(setegid: Operation not permitted)");
	assert_ids(m, 0, 0);
}

/* Set calls that say they worked but did not: the check catches them. */
static void restore_is_checked(void **state)
{
	struct sn_priv priv = SN_PRIV_INIT;
	struct mock_spank *m;

	(void)state;
	for (unsigned int call = 2; call <= 3; call++) {
		m = in_user_init();
		m->proc_lie = 1u << call;
		assert_int_equal(sn_priv_enter(&priv, "the test"), 0);
		assert_restore_failed(m, &priv, "(a check of the ids: ");
	}
}

static void nested_and_unbalanced_are_refused(void **state)
{
	struct mock_spank *m = in_user_init();
	struct sn_priv priv = SN_PRIV_INIT, other = SN_PRIV_INIT;

	(void)state;
	/* Left without being entered; left twice. */
	assert_int_equal(sn_priv_leave(&priv), -1);
	assert_true(mock_logged(m->errors, m->n_errors,
				"left without being entered"));
	assert_int_equal(m->proc_set_calls, 0);
	assert_int_equal(sn_priv_enter(&priv, "the test"), 0);
	assert_int_equal(sn_priv_leave(&priv), 0);
	assert_int_equal(sn_priv_leave(&priv), -1);
	assert_ids(m, USER, USER);

	/* Entered twice: refused, and its leave fails after restoring. */
	m = in_user_init();
	assert_int_equal(sn_priv_enter(&priv, "the test"), 0);
	assert_int_equal(sn_priv_enter(&priv, "the test"), -1);
	assert_true(mock_logged(m->errors, m->n_errors,
				"privileged section for the test entered twice"));
	assert_ids(m, 0, 0);
	assert_int_equal(sn_priv_leave(&priv), -1);
	assert_ids(m, USER, USER);

	/* Inside another section a second one finds root and changes
	 * nothing: only the outer one restores. */
	m = in_user_init();
	assert_int_equal(sn_priv_enter(&priv, "outer"), 0);
	assert_int_equal(sn_priv_enter(&other, "inner"), 0);
	assert_int_equal(sn_priv_leave(&other), 0);
	assert_ids(m, 0, 0);
	assert_int_equal(sn_priv_leave(&priv), 0);
	assert_ids(m, USER, USER);
	assert_int_equal(m->n_errors, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip_restores_the_ids),
		cmocka_unit_test(nothing_to_switch),
		cmocka_unit_test(root_with_the_users_group),
		cmocka_unit_test(enter_fails_cleanly),
		cmocka_unit_test(enter_fails_halfway),
		cmocka_unit_test(failed_restore_is_reported),
		cmocka_unit_test(restore_is_checked),
		cmocka_unit_test(nested_and_unbalanced_are_refused),
	};

	return cmocka_run_group_tests_name("privilege", tests, NULL, NULL);
}

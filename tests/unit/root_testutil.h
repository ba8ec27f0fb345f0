/* SPDX-License-Identifier: MIT */
/*
 * need_root(): whether a test that needs root can run here.  Without
 * root the caller skips it, except under CI=true, whose suite runs as
 * root: there the test fails, saying WHAT needs root.
 */
#ifndef SN_ROOT_TESTUTIL_H
#define SN_ROOT_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static inline bool need_root(const char *what)
{
	const char *ci = getenv("CI");

	if (geteuid() == 0)
		return true;
	if (ci && strcmp(ci, "true") == 0)
		fail_msg("CI=true: %s need root", what);
	return false;
}

#endif

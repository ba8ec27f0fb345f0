/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the core unit tests (CMocka): substring assertions
 * with readable failures, and the in-memory environment of fake_env.h
 * set up under an assertion.
 */
#ifndef SN_CORE_TESTUTIL_H
#define SN_CORE_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/envlist.h"
#include "fake_env.h"

/* Fails the test, showing both strings, unless HAY contains NEEDLE. */
#define assert_contains(hay, needle) do { \
	const char *h_ = (hay), *n_ = (needle); \
	if (!h_ || !strstr(h_, n_)) \
		fail_msg("expected \"%s\" in \"%s\"", n_, h_ ? h_ : "(null)"); \
} while (0)

#define assert_not_contains(hay, needle) do { \
	const char *h_ = (hay), *n_ = (needle); \
	if (h_ && strstr(h_, n_)) \
		fail_msg("did not expect \"%s\" in \"%s\"", n_, h_); \
} while (0)

/* ENVIRON_LIKE: NULL-terminated "NAME=VALUE" strings, or NULL. */
static inline void fake_env_init(struct fake_env *f, char *const *environ_like)
{
	assert_int_equal(fake_env_setup(f, environ_like), 0);
}

/* The whole environment as one "A=1;B=2" string, for comparisons. */
static inline void fake_env_dump(const struct fake_env *f, char *buf,
				 size_t len)
{
	size_t i, used = 0;

	buf[0] = '\0';
	for (i = 0; i < f->list.n; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? ";" : "",
				 f->list.vars[i]);

		assert_true(n >= 0 && (size_t)n < len - used);
		used += (size_t)n;
	}
}

/* The whole of the file at PATH, NUL-terminated (free it). */
static inline char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text;
	long n;

	if (!f)
		fail_msg("cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = malloc((size_t)n + 1);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
	text[n] = '\0';
	fclose(f);
	return text;
}

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the core unit tests (CMocka): substring assertions
 * with readable failures, and an in-memory environment whose writes can
 * be made to fail on a chosen call.
 */
#ifndef SN_CORE_TESTUTIL_H
#define SN_CORE_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "envlist.h"

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

/* An sn_envlist behind sn_env callbacks that can be told to fail. */
struct fake_env {
	struct sn_envlist list;
	struct sn_env env;
	int writes;		/* set + unset calls so far */
	int fail_write;		/* 1-based write call that fails; 0: none */
	int fail_get;		/* nonzero: every get fails */
};

static inline int fake_get(void *ctx, const char *name, char *buf, size_t len)
{
	struct fake_env *f = ctx;
	const char *v;

	if (f->fail_get)
		return -1;
	v = sn_envlist_get(&f->list, name);
	if (!v)
		return 0;
	if (strlen(v) >= len)
		return -1;
	memcpy(buf, v, strlen(v) + 1);
	return 1;
}

static inline int fake_set(void *ctx, const char *name, const char *value)
{
	struct fake_env *f = ctx;

	if (++f->writes == f->fail_write)
		return -1;
	return sn_envlist_set(&f->list, name, value);
}

static inline int fake_unset(void *ctx, const char *name)
{
	struct fake_env *f = ctx;

	if (++f->writes == f->fail_write)
		return -1;
	return sn_envlist_unset(&f->list, name);
}

/* ENVIRON_LIKE: NULL-terminated "NAME=VALUE" strings, or NULL. */
static inline void fake_env_init(struct fake_env *f, char *const *environ_like)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(sn_envlist_init_from(&f->list, environ_like), 0);
	f->env.get = fake_get;
	f->env.set = fake_set;
	f->env.unset = fake_unset;
	f->env.ctx = f;
}

static inline void fake_env_free(struct fake_env *f)
{
	sn_envlist_free(&f->list);
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

#endif

/* SPDX-License-Identifier: MIT */
/*
 * An in-memory environment (sn_envlist behind sn_env callbacks) whose
 * reads or a chosen write can be made to fail.  Free of CMocka so the
 * unit tests (through core_testutil.h) and the fuzz harnesses share it.
 */
#ifndef SN_FAKE_ENV_H
#define SN_FAKE_ENV_H

#include <stddef.h>
#include <string.h>

#include "base/envlist.h"

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

/*
 * ENVIRON_LIKE: NULL-terminated "NAME=VALUE" strings, or NULL.
 * Returns sn_envlist_init_from()'s result (0, or negative on failure).
 */
static inline int fake_env_setup(struct fake_env *f, char *const *environ_like)
{
	memset(f, 0, sizeof(*f));
	f->env.get = fake_get;
	f->env.set = fake_set;
	f->env.unset = fake_unset;
	f->env.ctx = f;
	return sn_envlist_init_from(&f->list, environ_like);
}

static inline void fake_env_free(struct fake_env *f)
{
	sn_envlist_free(&f->list);
}

#endif

/* SPDX-License-Identifier: MIT */
/*
 * A job environment seen through three callbacks, so the same merge and
 * rule code runs on slurmstepd's job env (spank_getenv/setenv), on an
 * in-memory copy (submit-time checks) and in unit tests.
 */
#ifndef SN_ENVLIST_H
#define SN_ENVLIST_H

#include <stddef.h>

struct sn_env {
	/* 1: found and copied into BUF; 0: not set; -1: error/too long */
	int (*get)(void *ctx, const char *name, char *buf, size_t len);
	int (*set)(void *ctx, const char *name, const char *value);	/* 0/-1 */
	int (*unset)(void *ctx, const char *name);			/* 0/-1 */
	void *ctx;
};

/* An in-memory environment (NAME=VALUE strings). */
struct sn_envlist {
	char **vars;
	size_t n;
	size_t cap;
};

int sn_envlist_init_from(struct sn_envlist *list, char *const *environ_like);
void sn_envlist_free(struct sn_envlist *list);
const char *sn_envlist_get(const struct sn_envlist *list, const char *name);
int sn_envlist_set(struct sn_envlist *list, const char *name, const char *value);
int sn_envlist_unset(struct sn_envlist *list, const char *name);
/* Fills ENV with callbacks operating on LIST. */
void sn_envlist_bind(struct sn_envlist *list, struct sn_env *env);

/*
 * The environment process PID started with (/proc/PID/environ, readable
 * by its user and root) into BUF, NUL-terminated after at most CAP - 1
 * bytes: NAME=VALUE strings one after another, each ending in NUL.  The
 * number of bytes, or -1 when it cannot be read or is empty.
 */
long sn_proc_environ_read(long pid, char *buf, size_t cap);

#endif

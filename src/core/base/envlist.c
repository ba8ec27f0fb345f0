/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/envlist.h"
#include "base/strutil.h"

/* Index of NAME in LIST, or -1. */
static long find(const struct sn_envlist *list, const char *name)
{
	size_t n = strlen(name);
	size_t i;

	for (i = 0; i < list->n; i++) {
		if (strncmp(list->vars[i], name, n) == 0 &&
		    list->vars[i][n] == '=')
			return (long)i;
	}
	return -1;
}

static int reserve(struct sn_envlist *list)
{
	char **vars;
	size_t cap;

	if (list->n < list->cap)
		return 0;
	cap = list->cap ? list->cap * 2 : 16;
	vars = realloc(list->vars, cap * sizeof(*vars));
	if (!vars)
		return -1;
	list->vars = vars;
	list->cap = cap;
	return 0;
}

int sn_envlist_init_from(struct sn_envlist *list, char *const *environ_like)
{
	memset(list, 0, sizeof(*list));
	for (; environ_like && *environ_like; environ_like++) {
		char *copy;

		if (reserve(list) < 0 || !(copy = strdup(*environ_like))) {
			sn_envlist_free(list);
			return -1;
		}
		list->vars[list->n++] = copy;
	}
	return 0;
}

void sn_envlist_free(struct sn_envlist *list)
{
	size_t i;

	for (i = 0; i < list->n; i++)
		free(list->vars[i]);
	free(list->vars);
	memset(list, 0, sizeof(*list));
}

const char *sn_envlist_get(const struct sn_envlist *list, const char *name)
{
	long i = find(list, name);

	return i < 0 ? NULL : list->vars[i] + strlen(name) + 1;
}

int sn_envlist_set(struct sn_envlist *list, const char *name, const char *value)
{
	size_t nlen = strlen(name), vlen = strlen(value);
	long i;
	char *entry;

	if (!nlen || strchr(name, '='))
		return -1;
	entry = malloc(nlen + vlen + 2);
	if (!entry)
		return -1;
	memcpy(entry, name, nlen);
	entry[nlen] = '=';
	memcpy(entry + nlen + 1, value, vlen + 1);
	i = find(list, name);
	if (i >= 0) {
		free(list->vars[i]);
		list->vars[i] = entry;
		return 0;
	}
	if (reserve(list) < 0) {
		free(entry);
		return -1;
	}
	list->vars[list->n++] = entry;
	return 0;
}

int sn_envlist_unset(struct sn_envlist *list, const char *name)
{
	long i = find(list, name);

	if (i < 0)
		return 0;
	free(list->vars[i]);
	/* Keep the order: an exported environment should read as it was. */
	memmove(&list->vars[i], &list->vars[i + 1],
		(list->n - (size_t)i - 1) * sizeof(*list->vars));
	list->n--;
	return 0;
}

static int bound_get(void *ctx, const char *name, char *buf, size_t len)
{
	const char *value = sn_envlist_get(ctx, name);

	if (!value)
		return 0;
	return sn_strlcpy(buf, value, len) < 0 ? -1 : 1;
}

static int bound_set(void *ctx, const char *name, const char *value)
{
	return sn_envlist_set(ctx, name, value);
}

static int bound_unset(void *ctx, const char *name)
{
	return sn_envlist_unset(ctx, name);
}

void sn_envlist_bind(struct sn_envlist *list, struct sn_env *env)
{
	env->get = bound_get;
	env->set = bound_set;
	env->unset = bound_unset;
	env->ctx = list;
}

long sn_proc_environ_read(long pid, char *buf, size_t cap)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return (long)n;
}

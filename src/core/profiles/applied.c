/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "profiles/applied.h"
#include "base/strutil.h"
#include "profiles/profile_file.h"

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

int sn_applied_add(struct sn_applied *a, const char *var, const char *before,
		   const char *after)
{
	struct sn_applied_entry *grown, *e;

	if (a->n >= SN_APPLIED_MAX_ENTRIES)
		return -1;
	grown = realloc(a->entries, (a->n + 1) * sizeof(*grown));
	if (!grown)
		return -1;
	a->entries = grown;
	e = &a->entries[a->n];
	e->var = strdup(var);
	e->before = dup_or_null(before);
	e->after = dup_or_null(after);
	if (!e->var || (before && !e->before) || (after && !e->after)) {
		free(e->var);
		free(e->before);
		free(e->after);
		return -1;
	}
	a->n++;
	return 0;
}

void sn_applied_free(struct sn_applied *a)
{
	size_t i;

	for (i = 0; i < a->n; i++) {
		free(a->entries[i].var);
		free(a->entries[i].before);
		free(a->entries[i].after);
	}
	free(a->entries);
	a->entries = NULL;
	a->n = 0;
}

static size_t encoded_len(const char *value)
{
	return value ? 2 * strlen(value) : 1;
}

static char *put_hex(char *out, const char *value)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *p;

	if (!value) {
		*out++ = '-';
		return out;
	}
	for (p = (const unsigned char *)value; *p; p++) {
		*out++ = digits[*p >> 4];
		*out++ = digits[*p & 15];
	}
	return out;
}

char *sn_applied_encode(const struct sn_applied *a)
{
	size_t i, len = 1;
	char *text, *out;

	for (i = 0; i < a->n; i++)
		len += strlen(a->entries[i].var) + 3 +
		       encoded_len(a->entries[i].before) +
		       encoded_len(a->entries[i].after);
	text = malloc(len);
	if (!text)
		return NULL;
	out = text;
	for (i = 0; i < a->n; i++) {
		if (i)
			*out++ = ',';
		memcpy(out, a->entries[i].var, strlen(a->entries[i].var));
		out += strlen(a->entries[i].var);
		*out++ = '=';
		out = put_hex(out, a->entries[i].before);
		*out++ = ':';
		out = put_hex(out, a->entries[i].after);
	}
	*out = '\0';
	return text;
}

/* Decodes [start, end) into a new string; "-" gives *out = NULL. */
static int get_hex(const char *start, const char *end, char **out)
{
	size_t n = (size_t)(end - start), i;
	char *value;

	*out = NULL;
	if (n == 1 && *start == '-')
		return 0;
	if (n % 2 || n / 2 >= SN_VALUE_MAX)
		return -1;
	value = malloc(n / 2 + 1);
	if (!value)
		return -1;
	for (i = 0; i < n / 2; i++) {
		/* Lower case only: the encoding is canonical (applied.h). */
		int hi = sn_hex_digit(start[2 * i], false);
		int lo = sn_hex_digit(start[2 * i + 1], false);

		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free(value);
			return -1;
		}
		value[i] = (char)(hi << 4 | lo);
	}
	value[n / 2] = '\0';
	*out = value;
	return 0;
}

static int decode_entry(const char *start, const char *end,
			struct sn_applied *a)
{
	const char *eq = memchr(start, '=', (size_t)(end - start));
	const char *colon;
	char var[SN_VAR_NAME_MAX];
	char *before = NULL, *after = NULL;
	int rc = -1;

	if (!eq || eq == start || (size_t)(eq - start) >= sizeof(var))
		return -1;
	colon = memchr(eq, ':', (size_t)(end - eq));
	if (!colon)
		return -1;
	memcpy(var, start, (size_t)(eq - start));
	var[eq - start] = '\0';
	if (get_hex(eq + 1, colon, &before) == 0 &&
	    get_hex(colon + 1, end, &after) == 0)
		rc = sn_applied_add(a, var, before, after);
	free(before);
	free(after);
	return rc;
}

int sn_applied_decode(const char *text, struct sn_applied *a,
		      struct sn_error *err)
{
	const char *start = text, *end;

	memset(a, 0, sizeof(*a));
	while (*start) {
		end = strchr(start, ',');
		if (!end)
			end = start + strlen(start);
		if (decode_entry(start, end, a) < 0 ||
		    (*end == ',' && end[1] == '\0')) {
			sn_error_set(err, "%s is malformed near \"%.40s\"",
				     SN_ENV_APPLIED, start);
			sn_applied_free(a);
			return -1;
		}
		start = *end ? end + 1 : end;
	}
	return 0;
}

int sn_applied_revert(const struct sn_applied *a, struct sn_env *env)
{
	char *current = malloc(SN_VALUE_MAX);
	int restored = 0;
	size_t i;

	if (!current)
		return -1;
	for (i = 0; i < a->n; i++) {
		const struct sn_applied_entry *e = &a->entries[i];
		int found = env->get(env->ctx, e->var, current, SN_VALUE_MAX);
		bool still_ours;

		if (found < 0)
			continue;	/* too long to be ours */
		still_ours = e->after ? (found == 1 && !strcmp(current, e->after))
				      : found == 0;
		if (!still_ours)
			continue;	/* the user changed it since: theirs */
		if (e->before ? env->set(env->ctx, e->var, e->before)
			      : env->unset(env->ctx, e->var)) {
			free(current);
			return -1;
		}
		restored++;
	}
	free(current);
	return restored;
}

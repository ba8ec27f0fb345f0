/* SPDX-License-Identifier: MIT */
/* Errors and lexical checks shared by the profile and rule grammars. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiles/profile_syntax.h"
#include "base/strutil.h"

int sn_pf_error(struct sn_pf_parser *p, const char *fmt, ...)
{
	char detail[SN_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	sn_error_set(p->err, "%s:%u: %s", p->path, p->line, detail);
	return -1;
}

void *sn_pf_grow(void *array, size_t n, size_t size)
{
	/* Grows by one element; N is the current count. */
	return realloc(array, (n + 1) * size);
}

int sn_pf_oom(struct sn_pf_parser *p)
{
	return PERR(p, "out of memory");
}

int sn_pf_check_value(struct sn_pf_parser *p, const char *what,
		      const char *value)
{
	if (strlen(value) >= SN_VALUE_MAX)
		return PERR(p, "%s is too long: at most %d bytes",
			    what, SN_VALUE_MAX - 1);
	if (sn_str_has_control(value))
		return PERR(p, "%s contains a control character: use printable text",
			    what);
	return 0;
}

int sn_pf_check_var(struct sn_pf_parser *p, const char *var)
{
	char shown[64];

	sn_str_printable(shown, sizeof(shown), var);
	if (!*var)
		return PERR(p, "missing variable name");
	if (strlen(var) >= SN_VAR_NAME_MAX)
		return PERR(p, "variable name \"%s\" is too long: at most %d characters",
			    shown, SN_VAR_NAME_MAX - 1);
	if (!sn_env_name_valid(var))
		return PERR(p, "invalid variable name \"%s\": use letters, digits and '_', not starting with a digit",
			    shown);
	return 0;
}

/*
 * KEY:VALUE of a merge or "has": no spaces, no ',' anywhere, KEY non-empty
 * (a stricter form than kvlist.h reads, so the file stays unambiguous).
 */
int sn_pf_check_kv(struct sn_pf_parser *p, const char *kv)
{
	const char *colon = strchr(kv, ':');
	char shown[80];
	const char *c;

	sn_str_printable(shown, sizeof(shown), kv);
	if (!colon || colon == kv || colon[1] == '\0')
		return PERR(p, "expected KEY:VALUE, got \"%s\" (e.g. expandable_segments:True)",
			    shown);
	for (c = kv; *c; c++) {
		if (*c == ',' || sn_pf_is_blank(*c) || (*c == ':' && c > colon))
			return PERR(p, "\"%s\" is not a single KEY:VALUE: no spaces, commas or second ':'",
				    shown);
	}
	return sn_pf_check_value(p, "KEY:VALUE", kv);
}

/* "= TEXT" after a key word; returns the text or NULL after an error. */
char *sn_pf_key_value(struct sn_pf_parser *p, const char *key, char *rest)
{
	rest = (char *)sn_pf_skip_blanks(rest);
	if (*rest != '=') {
		PERR(p, "expected \"%s = TEXT\"", key);
		return NULL;
	}
	rest = sn_strtrim(rest + 1);
	if (!*rest) {
		PERR(p, "empty %s: write \"%s = TEXT\"", key, key);
		return NULL;
	}
	if (sn_pf_check_value(p, key, rest) < 0)
		return NULL;
	return rest;
}

int sn_pf_text_once(struct sn_pf_parser *p, const char *section,
		    const char *name, const char *key, char *rest, char **field)
{
	char *text;

	if (*field)
		return PERR(p, "%s \"%s\" already has a %s: give one",
			    section, name, key);
	text = sn_pf_key_value(p, key, rest);
	if (!text)
		return -1;
	*field = strdup(text);
	return *field ? 0 : sn_pf_oom(p);
}

int sn_pf_unknown(struct sn_pf_parser *p, const char *line,
		  const char *section, const char *name, const char *valid)
{
	char shown[40];

	sn_str_printable(shown, sizeof(shown), line);
	shown[strcspn(shown, " \t=")] = '\0';
	return PERR(p, "unknown directive \"%s\" in [%s %s] (valid: %s)",
		    shown, section, name, valid);
}

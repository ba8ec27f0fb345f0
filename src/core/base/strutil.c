/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "base/strutil.h"

/*
 * ASCII-only classification: <ctype.h> depends on the locale, and the
 * plugin runs inside srun/slurmstepd whose locale we do not control.
 */
static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
	       c == '\f';
}

static bool is_alpha(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static char to_lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

int sn_strlcpy(char *dst, const char *src, size_t len)
{
	size_t n;

	if (len == 0)
		return -1;
	n = strlen(src);
	if (n >= len) {
		dst[0] = '\0';
		return -1;
	}
	memcpy(dst, src, n + 1);
	return 0;
}

char *sn_strtrim(char *s)
{
	char *start = s;
	size_t n;

	while (*start && is_space(*start))
		start++;
	n = strlen(start);
	while (n > 0 && is_space(start[n - 1]))
		n--;
	memmove(s, start, n);
	s[n] = '\0';
	return s;
}

bool sn_env_name_valid(const char *name)
{
	const char *p;

	if (!name || !(is_alpha(name[0]) || name[0] == '_'))
		return false;
	for (p = name + 1; *p; p++) {
		if (!(is_alpha(*p) || is_digit(*p) || *p == '_'))
			return false;
	}
	return true;
}

bool sn_streq_nocase(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		if (to_lower(*a) != to_lower(*b))
			return false;
	}
	return *a == *b;
}

bool sn_str_has_control(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return true;
	}
	return false;
}

void sn_str_printable(char *dst, size_t len, const char *src)
{
	size_t i;

	if (len == 0)
		return;
	for (i = 0; src[i] && i + 1 < len; i++) {
		unsigned char c = (unsigned char)src[i];

		dst[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	dst[i] = '\0';
	/* Mark a cut so a truncated name is not mistaken for the real one. */
	if (src[i] && len >= 4)
		memcpy(dst + len - 4, "...", 4);
}

void sn_vformat_printable(char *dst, size_t len, const char *fmt, va_list ap)
{
	if (len == 0)
		return;
	if (vsnprintf(dst, len, fmt, ap) < 0)
		dst[0] = '\0';
	sn_str_printable(dst, len, dst);
}

/*
 * Not strtoul(): it takes a sign, leading spaces and (base 0) hex, and a
 * minus sign wraps "-1" to the largest value instead of failing.
 */
int sn_parse_u64_prefix(const char *s, unsigned long long max,
			unsigned long long *out, const char **end)
{
	unsigned long long v = 0;
	const char *p = s;

	if (!s || !is_digit(*s))
		return -1;
	for (; is_digit(*p); p++) {
		unsigned int d = (unsigned int)(*p - '0');

		/* v * 10 + d > max, asked without overflowing. */
		if (d > max || v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	*end = p;
	return 0;
}

int sn_parse_u64(const char *s, unsigned long long max,
		 unsigned long long *out)
{
	unsigned long long v;
	const char *end;

	if (sn_parse_u64_prefix(s, max, &v, &end) < 0 || *end)
		return -1;
	*out = v;
	return 0;
}

int sn_hex_digit(char c, bool any_case)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (any_case && c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

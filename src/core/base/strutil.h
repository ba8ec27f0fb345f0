/* SPDX-License-Identifier: MIT */
#ifndef SN_STRUTIL_H
#define SN_STRUTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* Copies SRC into DST of LEN bytes; returns -1 (DST emptied) if truncated. */
int sn_strlcpy(char *dst, const char *src, size_t len);
/* Trims leading/trailing ASCII whitespace in place; returns S. */
char *sn_strtrim(char *s);
/* True if NAME is a POSIX-portable environment variable name. */
bool sn_env_name_valid(const char *name);
/* Case-insensitive ASCII equality. */
bool sn_streq_nocase(const char *a, const char *b);
/* True if S holds an ASCII control character other than tab (or DEL). */
bool sn_str_has_control(const char *s);
/*
 * Copies SRC into DST for quoting in a message: control bytes become '?',
 * and a value that does not fit ends in "...".  DST may be SRC (in place):
 * what the user's side controls must not forge log lines or reach a
 * terminal as escape sequences.
 */
void sn_str_printable(char *dst, size_t len, const char *src);
/*
 * The one path of every line the plugin logs (src/plugin/spank_wrap.c):
 * vsnprintf() into DST, then sn_str_printable() over the whole line, so
 * no value a user chose (an environment or option value, an image name,
 * the helper's words) brings a newline or an escape sequence into
 * slurmd's log or a terminal, whichever format argument carried it.
 */
void sn_vformat_printable(char *dst, size_t len, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/*
 * The project's one decimal parser: S is ASCII digits only (leading zeros
 * allowed; no sign, space, "0x" or suffix) with a value from 0 to MAX.
 * Returns 0 and sets *OUT, or -1 with *OUT untouched.
 */
int sn_parse_u64(const char *s, unsigned long long max,
		 unsigned long long *out);
/*
 * The same for the digits that start S, which may go on with other text
 * (a delimiter or a suffix): on success *END points past the last digit.
 * -1 (*OUT and *END untouched) if S does not start with a digit.
 */
int sn_parse_u64_prefix(const char *s, unsigned long long max,
			unsigned long long *out, const char **end);

/* Value (0-15) of hex digit C, or -1; 'A'-'F' only when ANY_CASE. */
int sn_hex_digit(char c, bool any_case);

#endif

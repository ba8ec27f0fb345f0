/* SPDX-License-Identifier: MIT */
#ifndef SN_JSON_WRITE_H
#define SN_JSON_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/textbuf.h"

/* sn_json_add_string() writes a string of up to this many bytes whole. */
#define SN_JSON_STRING_MAX 1024

/*
 * Writes SRC into DST (CAP bytes) as the body of a JSON string (no quotes):
 * '"', '\\' and control characters escaped, bytes >= 0x80 replaced by '?'
 * so the output is always valid UTF-8.  Truncates at an escape boundary;
 * returns the length written.
 */
size_t sn_json_escape(char *dst, size_t cap, const char *src);

/* Appends S to T as a JSON string, quotes included (sn_json_escape; cut
 * beyond what SN_JSON_STRING_MAX bytes escape to). */
void sn_json_add_string(struct sn_text *t, const char *s);
/* Appends S as a JSON string, or null when S is NULL or "": the one null
 * of every JSON the project writes (a value not known). */
void sn_json_add_or_null(struct sn_text *t, const char *s);
/* Appends FMT's number when KNOWN, else null (the same null). */
void sn_json_add_number_or_null(struct sn_text *t, bool known,
				const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same to F: S as a JSON string, or null when OR_NULL and S is NULL
 * or "". */
void sn_json_print(FILE *f, const char *s, bool or_null);

#endif

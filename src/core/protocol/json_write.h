/* SPDX-License-Identifier: MIT */
#ifndef SN_JSON_WRITE_H
#define SN_JSON_WRITE_H

#include <stddef.h>

/*
 * Writes SRC into DST (CAP bytes) as the body of a JSON string (no quotes):
 * '"', '\\' and control characters escaped, bytes >= 0x80 replaced by '?'
 * so the output is always valid UTF-8.  Truncates at an escape boundary;
 * returns the length written.
 */
size_t sn_json_escape(char *dst, size_t cap, const char *src);

#endif

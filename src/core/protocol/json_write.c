/* SPDX-License-Identifier: MIT */
/*
 * JSON writing: nccl-warmup's result, the fleet record, the admin
 * tools' --json output.
 */
#include <stdarg.h>
#include <string.h>

#include "protocol/json_write.h"

size_t sn_json_escape(char *dst, size_t cap, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (!dst || cap == 0)
		return 0;
	for (const unsigned char *p = (const unsigned char *)src; p && *p;
	     p++) {
		char esc[7];
		size_t n;

		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			n = 2;
		} else if (*p == '\n') {
			memcpy(esc, "\\n", 2);
			n = 2;
		} else if (*p == '\t') {
			memcpy(esc, "\\t", 2);
			n = 2;
		} else if (*p < 0x20 || *p == 0x7f) {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[*p >> 4];
			esc[5] = hex[*p & 0xf];
			n = 6;
		} else if (*p >= 0x80) {
			/* Output must be valid UTF-8 whatever a driver error
			 * string contains: non-ASCII becomes '?'. */
			esc[0] = '?';
			n = 1;
		} else {
			esc[0] = (char)*p;
			n = 1;
		}
		if (o + n >= cap)
			break;
		memcpy(dst + o, esc, n);
		o += n;
	}
	dst[o] = '\0';
	return o;
}

void sn_json_add_string(struct sn_text *t, const char *s)
{
	char esc[6 * SN_JSON_STRING_MAX + 1];

	sn_json_escape(esc, sizeof(esc), s);
	sn_text_add(t, "\"%s\"", esc);
}

void sn_json_add_or_null(struct sn_text *t, const char *s)
{
	if (s && s[0])
		sn_json_add_string(t, s);
	else
		sn_text_add(t, "null");
}

void sn_json_add_number_or_null(struct sn_text *t, bool known,
				const char *fmt, ...)
{
	va_list ap;

	if (!known) {
		sn_text_add(t, "null");
		return;
	}
	va_start(ap, fmt);
	sn_text_vadd(t, fmt, ap);
	va_end(ap);
}

void sn_json_print(FILE *f, const char *s, bool or_null)
{
	char buf[6 * SN_JSON_STRING_MAX + 3];
	struct sn_text t = { .buf = buf, .cap = sizeof(buf) };

	if (or_null)
		sn_json_add_or_null(&t, s);
	else
		sn_json_add_string(&t, s);
	fputs(buf, f);
}

/* SPDX-License-Identifier: MIT */
/* The helper's output buffer, which result.c and result_health.c fill. */
#include <stdarg.h>
#include <stdio.h>

#include "result_out.h"
#include "warmup.h"

void wu_out_add(struct wu_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->len >= o->cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	o->len += (size_t)n;
	if (o->len >= o->cap)
		o->len = o->cap - 1;
}

void wu_out_json_string(struct wu_out *o, const char *s)
{
	char esc[6 * WU_MESSAGE_MAX + 1];

	sn_json_escape(esc, sizeof(esc), s);
	wu_out_add(o, "\"%s\"", esc);
}

void wu_out_json_or_null(struct wu_out *o, const char *s)
{
	if (s && s[0])
		wu_out_json_string(o, s);
	else
		wu_out_add(o, "null");
}

/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>

#include "base/textbuf.h"

void sn_text_vadd(struct sn_text *t, const char *fmt, va_list ap)
{
	int n;

	if (t->full || t->len >= t->cap) {
		t->full = true;
		return;
	}
	n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
	if (n < 0 || (size_t)n >= t->cap - t->len) {
		t->full = true;
		t->buf[t->len] = '\0';
		return;
	}
	t->len += (size_t)n;
}

void sn_text_add(struct sn_text *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sn_text_vadd(t, fmt, ap);
	va_end(ap);
}

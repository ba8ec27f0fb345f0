/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>

#include "base/textbuf.h"

void sn_text_add(struct sn_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->full || t->len >= t->cap) {
		t->full = true;
		return;
	}
	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= t->cap - t->len) {
		t->full = true;
		t->buf[t->len] = '\0';
		return;
	}
	t->len += (size_t)n;
}

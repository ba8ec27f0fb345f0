/* SPDX-License-Identifier: MIT */
/*
 * A bounded text builder for the fleet record, the .prom file and the
 * report: printf-style appends into a caller's buffer; once anything does
 * not fit, ->full is set and nothing more is added (callers then drop the
 * whole text rather than write a truncated one).
 */
#ifndef SN_TEXTBUF_H
#define SN_TEXTBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

struct sn_text {
	char *buf;
	size_t cap;
	size_t len;
	bool full;
};

void sn_text_add(struct sn_text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sn_text_vadd(struct sn_text *t, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

#endif

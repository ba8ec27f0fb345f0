/* SPDX-License-Identifier: MIT */
/* The helper's output buffer (result_out.c), which result.c and
 * result_health.c fill. */
#ifndef WU_RESULT_OUT_H
#define WU_RESULT_OUT_H

#include <stddef.h>

struct wu_run;

struct wu_out {
	char *buf;
	size_t len;
	size_t cap;
};

void wu_out_add(struct wu_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The JSON string S, escaped. */
void wu_out_json_string(struct wu_out *o, const char *s);
/* The JSON string S, or null when S is NULL or "". */
void wu_out_json_or_null(struct wu_out *o, const char *s);

/* result_health.c */
void wu_report_health_summary(const struct wu_run *s, struct wu_out *o);
void wu_report_health_json(const struct wu_run *s, struct wu_out *o);

#endif

/* SPDX-License-Identifier: MIT */
/* The GPU health checks in the helper's result (result_health.c), for
 * result.c. */
#ifndef WU_RESULT_HEALTH_H
#define WU_RESULT_HEALTH_H

#include "base/textbuf.h"

struct wu_run;

void wu_report_health_summary(const struct wu_run *s, struct sn_text *o);
void wu_report_health_json(const struct wu_run *s, struct sn_text *o);

#endif

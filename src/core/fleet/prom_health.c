/* SPDX-License-Identifier: MIT */
/*
 * The GPU health checks in the node's .prom file (issue 24): per check,
 * how many GPUs it failed or warned on, read from a result's
 * "health_findings" ("GPU N CHECK: detail; ...").  prom_state.c keeps
 * the gauge, fed only by runs the job's user cannot reach (issue 30).
 * Apart from it so that the two change independently.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "gpu/health.h"
#include "fleet/prom.h"

/* Findings of CHECK in TEXT: "GPU <digits> CHECK: " occurrences. */
static unsigned int count_check(const char *text, const char *check)
{
	char pat[40];
	unsigned int n = 0;
	const char *p = text;

	snprintf(pat, sizeof(pat), " %s: ", check);
	while ((p = strstr(p, pat)) != NULL) {
		const char *d = p;

		while (d > text && isdigit((unsigned char)d[-1]))
			d--;
		if (d < p && d - text >= 4 && strncmp(d - 4, "GPU ", 4) == 0)
			n++;
		p += strlen(pat);
	}
	return n;
}

unsigned int sn_prom_health_count(const struct sn_warmup_result *res,
				  int check)
{
	return count_check(res->health_findings,
			   sn_health_check_name((enum sn_health_check)check));
}

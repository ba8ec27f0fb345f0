/* SPDX-License-Identifier: MIT */
/*
 * The GPU health checks in the node's .prom file (issue 24): per check,
 * how many of the last warmup's GPUs it failed or warned on, read from
 * the result's "health_findings" ("GPU N CHECK: detail; ...").  A gauge
 * of the last warmup only, so nothing is carried from the file before;
 * every check is written, zeros included, when the checks ran.  Apart
 * from prom.c so that the two change independently.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "health.h"
#include "prom.h"
#include "textbuf.h"

#define NAME "spank_nccl_warmup_last_health_findings"

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

void sn_prom_render_health(struct sn_text *t, const struct sn_record *r)
{
	const struct sn_warmup_result *res = r->result;

	if (!res || !res->health_status[0])
		return;
	sn_text_add(t, "# HELP " NAME " GPUs on which each health check failed or warned in the last warmup (NVML).\n# TYPE " NAME " gauge\n");
	for (int c = 0; c < SN_HC_COUNT; c++)
		sn_text_add(t, NAME "{check=\"%s\"} %u\n",
			    sn_health_check_name((enum sn_health_check)c),
			    count_check(res->health_findings,
					sn_health_check_name((enum sn_health_check)c)));
}

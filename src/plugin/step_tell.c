/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.h"
#include "spank_wrap.h"
#include "step_tell.h"

/* TEXT's lines ('\n' between) each as its own "spank-nccl: " line. */
void sn_step_tell(struct sn_plugin *p, bool error, const char *text)
{
	const char *line = text, *end;

	if (p->in_agent && p->gate) {
		snprintf(p->gate->line, sizeof(p->gate->line), "%s", text);
		p->gate->line_error = error;
		return;
	}
	do {
		end = strchrnul(line, '\n');
		if (error)
			sn_log_error("%.*s", (int)(end - line), line);
		else
			sn_log_user("%.*s", (int)(end - line), line);
		line = end + 1;
	} while (*end);
}

void sn_step_tell_lines(struct sn_plugin *p, const char *lines)
{
	const char *nl;

	if (p->in_agent && p->gate) {
		snprintf(p->gate->lines, sizeof(p->gate->lines), "%s", lines);
		return;
	}
	for (; *lines; lines = nl ? nl + 1 : "") {
		nl = strchr(lines, '\n');
		sn_log_user("%.*s", (int)(nl ? nl - lines : (long)strlen(lines)),
			    lines);
	}
}

void sn_step_log_result(struct sn_plugin *p, const char *fmt, ...)
{
	char *line = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (p->in_agent && p->gate)
		vsnprintf(p->gate->log, sizeof(p->gate->log), fmt, ap);
	else if (vasprintf(&line, fmt, ap) >= 0)
		sn_log_info("%s", line);
	va_end(ap);
	free(line);
}

/* SPDX-License-Identifier: MIT */
/* The fan-out of a fleet record to the admin's sinks (sinks.h). */
#include <stdlib.h>

#include "fleet/prom.h"
#include "fleet/sinks.h"

static bool given(const char *setting)
{
	return setting && setting[0];
}

int sn_sinks_write(const struct sn_sinks *s, const struct sn_record *r,
		   struct sn_sinks_report *rep)
{
	struct sn_error why;
	char *line = NULL;
	size_t len = 0;
	int failed = 0;

	sn_error_clear(&rep->file);
	sn_error_clear(&rep->syslog);
	sn_error_clear(&rep->prom);
	sn_error_clear(&why);
	/* The line, for the file (syslog and the metrics need none). */
	if (given(s->record_file)) {
		line = malloc(SN_RECORD_MAX_BYTES);
		if (!line)
			sn_error_set(&why, "out of memory");
		else if (!(len = sn_record_format(r, line, SN_RECORD_MAX_BYTES)))
			sn_error_set(&why, "the record is larger than %d bytes",
				     SN_RECORD_MAX_BYTES);
	}
	if (given(s->record_file)) {
		if (!len)
			rep->file = why;
		if (!len || sn_record_append(s->record_file, r->node, line,
					     len, &rep->file) < 0)
			failed++;
	}
	/* In parts of its own (record_syslog.c): ident spank-nccl, @cee. */
	if (s->syslog && sn_record_syslog(r, &rep->syslog) < 0)
		failed++;
	free(line);
	/* A step's hang record is no warmup: no warmup metrics. */
	if (given(s->prom_dir) && !r->reused && !r->hang[0] &&
	    sn_prom_update(s->prom_dir, r, &rep->prom) < 0)
		failed++;
	return failed;
}

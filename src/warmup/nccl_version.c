/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "failed_call.h"

/* ncclGetVersion only reads a constant: it initialises nothing. */
void wu_nccl_version(struct wu_run *run)
{
	int v = 0;
	char text[32] = "";

	if (ncclGetVersion(&v) == ncclSuccess && v > 0) {
		/* Since 2.9 the code is MAJOR*10000 + MINOR*100 + PATCH. */
		if (v >= 20900)
			snprintf(text, sizeof(text), "%d.%d.%d", v / 10000,
				 (v % 10000) / 100, v % 100);
		else
			snprintf(text, sizeof(text), "%d.%d.%d", v / 1000,
				 (v % 1000) / 100, v % 100);
	}
	pthread_mutex_lock(&run->lock);
	snprintf(run->nccl_version, sizeof(run->nccl_version), "%s", text);
	pthread_mutex_unlock(&run->lock);
}

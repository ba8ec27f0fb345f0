/* SPDX-License-Identifier: MIT */
/* The NCCL phases every mode runs (phases.h). */
#include "bandwidth.h"
#include "phases.h"

int wu_run_nccl(struct wu_run *run, struct wu_comm *c, bool bandwidth,
		int (*check)(struct wu_run *run, int code, void *arg),
		void *arg)
{
	int code = wu_comm_init(run, c);

	if (check)
		code = check(run, code, arg);
	if (!code)
		code = wu_collectives(run, c);
	if (!code && bandwidth)
		code = wu_bandwidth(run, c);
	return code;
}

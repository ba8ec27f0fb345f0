/* SPDX-License-Identifier: MIT */
/* The phases every mode runs (phases.h). */
#include "bandwidth.h"
#include "phases.h"

int wu_health_nccl_load(struct wu_run *run, struct wu_nccl *nccl)
{
	int loaded, health;

	/*
	 * NVML's readings after cuInit, not beside it: both go through the
	 * driver, which served them in turn -- cuInit took 76 ms longer
	 * beside them on 4 H200s (check mode; docs/dev/benchmarks.md);
	 * NVML's init and handles started beside cuInit (run_all), NCCL's
	 * dlopen does not wait on NVML.  No setenv()
	 * until wu_health_check has joined NVML's threads: they call
	 * getenv(), and glibc's setenv may move the environment under a
	 * concurrent getenv (SIGSEGV).  Check mode loads NCCL too: every
	 * result names the NCCL the job would get (only its ncclGetVersion
	 * runs).
	 */
	if (run->opt.container_pid > 0) {
		/* Finding a container's NCCL sets its NCCL_* (setenv):
		 * NVML first, joined, then the load. */
		health = wu_health_check(run);
		return health ? health : wu_nccl_load(run, nccl);
	}
	wu_health_cuda_ready(run);
	loaded = wu_nccl_load(run, nccl);
	/* Before any context: another process's memory is named here, not
	 * met as an out-of-memory in cuDevicePrimaryCtxRetain. */
	health = wu_health_check(run);
	return health ? health : loaded;
}

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

/* SPDX-License-Identifier: MIT */
/* The phases every mode runs (phases.c): main.c's and fabric_run.c's. */
#ifndef WU_PHASES_H
#define WU_PHASES_H

#include "comm.h"
#include "nccl_loader.h"

/*
 * After cuInit and the duplicate check, before any context: the GPU
 * health checks (NVML) beside the load of the job's NCCL.  A health
 * failure wins over a load failure (its message, its code).
 */
int wu_health_nccl_load(struct wu_run *run, struct wu_nccl *nccl);

/*
 * Init of C, then CHECK when not NULL (fabric's transport, given the init's code, returning the code
 * to go on with), the collectives, and the bandwidth when BANDWIDTH.
 * The caller ends C (wu_comm_end) with what it returns.
 */
int wu_run_nccl(struct wu_run *run, struct wu_comm *c, bool bandwidth,
		int (*check)(struct wu_run *run, int code, void *arg),
		void *arg);

#endif

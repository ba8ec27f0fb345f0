/* SPDX-License-Identifier: MIT */
/*
 * NCCL's RAS (2.24+) per step.  Every NCCL process listens for RAS
 * queries on NCCL_RAS_ADDR (default localhost:28028): on a shared node
 * the first job's user owns that port, a second user's job gets no RAS
 * at all, and two jobs of one user answer each other's queries.  The
 * plugstack key ras= (sn_ras_policy) gives each step its own address in
 * the task environment, derived from the job and step ids as the fabric
 * ports are (sn_step_port) and moved past a port already taken on the
 * node; a value the user set is theirs.  RAS has no authentication:
 * any local user can read a step's RAS, whatever its port.
 */
#ifndef SN_RAS_H
#define SN_RAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/envlist.h"
#include "base/error.h"
#include "protocol/helper_protocol.h"

enum sn_ras_policy {
	SN_RAS_STEP = 0,	/* each step its own NCCL_RAS_ADDR */
	SN_RAS_OFF,		/* NCCL_RAS_ENABLE=0 */
	SN_RAS_NCCL,		/* NCCL's own defaults, untouched */
};

#define SN_RAS_PORT_LO_DEFAULT 28100
#define SN_RAS_PORT_HI_DEFAULT 28999
/* ras_sample=: the hang sampler's period (step_ras_sample.c). */
#define SN_RAS_SAMPLE_DEFAULT_S 30
#define SN_RAS_SAMPLE_MAX_S 3600
/* Ports tried after the derived one when it is taken. */
#define SN_RAS_ATTEMPTS 8
/*
 * The address spank-nccl set, beside NCCL_RAS_ADDR: a batch step's value
 * reaches the script's own srun steps, which must not take it for the
 * user's and share the batch step's port.
 */
#define SN_ENV_RAS_MARK "SPANK_NCCL_RAS_ADDR"

/* "step", "off" or "nccl" (any case); -1 for anything else. */
int sn_ras_policy_parse(const char *s, enum sn_ras_policy *out);
const char *sn_ras_policy_name(enum sn_ras_policy p);

/*
 * Port ATTEMPT (0, 1, ...) of step JOBID.STEPID in RANGE: steps of one
 * job get consecutive ports; jobs are spread over the range by a hash of
 * the job id.  Attempt k+1 is the port after attempt k.  The fabric
 * warmup's coordinator ports are the same function of fabric_ports=.
 */
unsigned int sn_step_port(const struct sn_port_range *range, uint32_t jobid,
			  uint32_t stepid, unsigned int attempt);

/* 1: nothing on the node listens on 127.0.0.1:PORT; 0: taken. */
typedef int (*sn_port_free_fn)(void *ctx, unsigned int port);

/*
 * Sets the step's RAS environment in ENV by POLICY.  step: unless the
 * user set NCCL_RAS_ADDR (a value other than SN_ENV_RAS_MARK's), the
 * first free of SN_RAS_ATTEMPTS ports from sn_step_port(), as
 * "127.0.0.1:PORT", into NCCL_RAS_ADDR and SN_ENV_RAS_MARK; when all are
 * taken, the derived one.  off: NCCL_RAS_ENABLE=0 unless the user set
 * NCCL_RAS_ENABLE.  nccl: nothing.  DONE (LEN bytes) says what happened,
 * for the log.  0, or -1 with ERR when ENV could not be read or set.
 */
int sn_ras_apply(enum sn_ras_policy policy, const struct sn_port_range *range,
		 uint32_t jobid, uint32_t stepid, struct sn_env *env,
		 sn_port_free_fn port_free, void *ctx, char *done, size_t len,
		 struct sn_error *err);

#endif

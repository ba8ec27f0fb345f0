/* SPDX-License-Identifier: MIT */
/*
 * Where a step's fabric warmup meets: every node computes, from what
 * slurmstepd knows (the step's node list, job and step ids) and the
 * admin's port range, the same NCCL bootstrap root "ADDR:PORT" without
 * talking to the others.  NCCL reads it from NCCL_COMM_ID: then
 * ncclGetUniqueId() only encodes that address and rank 0's
 * ncclCommInitRank() listens there (NCCL src/bootstrap.cc,
 * bootstrapGetUniqueId / bootstrapCreateRoot).
 */
#ifndef SN_FABRIC_ADDR_H
#define SN_FABRIC_ADDR_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
/* struct sn_port_range, sn_port_range_parse: shared with plugstack.conf. */
#include "helper_protocol.h"

#define SN_COMM_ID_MAX 80	/* "[v6 address]:port" and NUL */

/*
 * Candidate ATTEMPT (0, 1, …) for step JOBID.STEPID.  Steps of one job
 * get consecutive ports (distinct while the range is wider than the
 * number of concurrent steps); jobs are spread over the range by a hash
 * of the job id.  Attempt k+1 is the port after attempt k.
 */
unsigned int sn_fabric_port(const struct sn_port_range *range,
			    uint32_t jobid, uint32_t stepid,
			    unsigned int attempt);

/*
 * NCCL_COMM_ID for numeric address ADDR (IPv4 dotted quad, or IPv6,
 * written in brackets) and PORT.  Refuses anything but a numeric address.
 */
int sn_fabric_comm_id(char *out, size_t len, const char *addr,
		      unsigned int port, struct sn_error *err);

#endif

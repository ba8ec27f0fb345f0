/* SPDX-License-Identifier: MIT */
/*
 * Where a step's fabric warmup meets: every node computes, from what
 * slurmstepd knows (the step's job and step ids) and the admin's port
 * range, the same candidate ports of the coordinator on the step's first
 * node without talking to the others; and the endpoints ("ADDR:PORT")
 * that the coordination's seals and the records name.
 */
#ifndef SN_FABRIC_ADDR_H
#define SN_FABRIC_ADDR_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
/* struct sn_port_range, sn_port_range_parse: shared with plugstack.conf. */
#include "protocol/helper_protocol.h"

#define SN_ENDPOINT_MAX 80	/* "[v6 address]:port" and NUL */

/*
 * Candidate ATTEMPT (0, 1, …) for step JOBID.STEPID: ras.h's
 * sn_step_port() over fabric_ports= (distinct for the steps of one job
 * while the range is wider than the number of concurrent steps).
 */
unsigned int sn_fabric_port(const struct sn_port_range *range,
			    uint32_t jobid, uint32_t stepid,
			    unsigned int attempt);

/*
 * "ADDR:PORT" for numeric address ADDR (IPv4 dotted quad, or IPv6,
 * written in brackets, as NCCL_COMM_ID is) and PORT 1-65535: the same
 * text on both sides of a connection.  Refuses anything but a numeric
 * address.
 */
int sn_fabric_endpoint(char *out, size_t len, const char *addr,
		       unsigned int port, struct sn_error *err);

/*
 * Where NCCL's bootstrap root listens, from an ncclUniqueId made by
 * ncclGetUniqueId (ID, LEN bytes): NCCL writes struct
 * ncclBootstrapHandle { uint64_t magic; union ncclSocketAddress addr; }
 * into it (src/include/bootstrap.h, src/bootstrap.cc
 * bootstrapGetUniqueId), the address a sockaddr_in or sockaddr_in6.
 * "ADDR:PORT" into OUT, or -1 when the id holds no such address.
 */
int sn_nccl_id_endpoint(const unsigned char *id, size_t len, char *out,
			size_t outlen);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * What NCCL's own log (NCCL_DEBUG=INFO, written to NCCL_DEBUG_FILE)
 * says about a communicator; helper-only (libsn_core_helper).
 */
#ifndef SN_NCCL_LOG_H
#define SN_NCCL_LOG_H

#include <stddef.h>

#define SN_TRANSPORT_MAX 64	/* "NET/Plugin NAME (vN)" and NUL */

/*
 * The network NCCL chose, from the first "Using network NAME" line in
 * the LEN bytes of LOG: "NET/IB", "NET/Socket" (NCCL's own two), or for
 * any other NAME a net plugin, "NET/Plugin NAME (vN)" with the plugin API
 * version from NCCL's "Loaded net plugin NAME (vN)" line, or
 * "NET/Plugin NAME" without one ("NET/Plugin AWS Libfabric (v5)";
 * non-printable bytes become '?', a NAME too long for OUT is cut).
 * Returns 0, or -1 leaving OUT "" when no such line is there (NCCL not at
 * INFO level, or no communicator yet) or OUT cannot hold the answer.
 */
int sn_nccl_transport(const char *log, size_t len, char *out, size_t out_len);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * One question to NCCL's RAS (2.24+) on a step's NCCL_RAS_ADDR: CLIENT
 * PROTOCOL 2, SET FORMAT json (2.28.7+; older NCCL answers text), then
 * VERBOSE STATUS; NCCL closes after its answer.  Asked by
 * spank-nccl-status on a node of the step and by slurmstepd when a task
 * of the step dies by a signal (the hang record).
 */
#ifndef SN_RAS_ASK_H
#define SN_RAS_ASK_H

#include <stdbool.h>
#include <stddef.h>

struct sn_ras_answer {
	char *text;		/* malloc'd, NUL-terminated; NULL: none */
	size_t len;
	bool json;		/* the answer is JSON (else NCCL's text) */
	bool cut;		/* it stopped before NCCL closed (WHY says) */
};

/*
 * Asks RAS at ADDR ("host:port", "[v6]:port"), each send and receive
 * limited to TIMEOUT_MS, the answer capped at 16 MiB.  0 with A set
 * (free it with sn_ras_answer_free), or -1 with WHY (CAP bytes): nothing
 * answers, or not as RAS does.
 */
int sn_ras_ask(const char *addr, int timeout_ms, struct sn_ras_answer *a,
	       char *why, size_t cap);
void sn_ras_answer_free(struct sn_ras_answer *a);

#endif

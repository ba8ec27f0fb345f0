/* SPDX-License-Identifier: MIT */
/*
 * spank-nccl-status: where a step's NCCL is stuck, from NCCL's RAS, in
 * the job's terms.  status_main.c runs on the submit host; it starts
 * itself on the step's nodes (srun --overlap, as the caller), where
 * status_node.c reads the step's processes and asks RAS.
 */
#ifndef SN_STATUS_H
#define SN_STATUS_H

#include <stdbool.h>
#include <stddef.h>

/* A growing buffer of bytes read from a pipe. */
struct status_buf {
	char *data;
	size_t len, cap;
};
/* Reads FD to its end into B (NUL-terminated; capped at 64 MiB). */
void status_buf_read(struct status_buf *b, int fd);

/* One query: the step, its user and nodes (squeue), and what the nodes
 * printed (srun --label). */
struct status_run {
	char job[32], step[32], user[64], nodes[4096];
	struct status_buf out;
};

/* Prints RUN's answer (JSON: one object); 0, or 1 with the reason on
 * stderr (status_render.c). */
int status_render(const struct status_run *run, bool json);

/* The node side: prints the node's lines (status_node.c's header says
 * which) for step JOB.STEP; QUERY: also asks RAS.  Exit status 0. */
int sn_status_node(const char *job, const char *step, int query);

#endif

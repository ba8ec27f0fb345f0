/* SPDX-License-Identifier: MIT */
/*
 * The warmup's words: its line for the user and its line for slurmd's
 * log (step_tell.c).  In a pyxis container step the warmup runs in the
 * agent, whose descriptors are closed: there they go into the gate the
 * node's tasks share (step_container.c), and the task that took the
 * gate says them.
 */
#ifndef SN_STEP_TELL_H
#define SN_STEP_TELL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "helper_exec.h"

struct sn_plugin;

enum gate_state { GATE_PENDING = 0, GATE_PASSED, GATE_FAILED };

struct sn_container_gate {
	pthread_mutex_t lock;
	int state;		/* enum gate_state */
	bool line_error;	/* line is an error */
	char line[2048];	/* the warmup's line for the user, or "" */
	char lines[6144];	/* then these, "\n"-separated, or "" */
	/* its line for slurmd's log (the helper's JSON), or "" */
	char log[SN_HELPER_OUT_MAX + 1024];
	/* The first task's NCCL_* and LD_LIBRARY_PATH (pyxis put the
	 * image's in its job env), "NAME=value" each NUL-terminated. */
	size_t env_len;
	char env[16384];
};

/* The warmup's line for the user: logged, or (in the container warmup's
 * agent) handed to the task that prints it.  ERROR: an error line. */
void sn_step_tell(struct sn_plugin *p, bool error, const char *line);
/* Then several lines ("\n"-separated), each its own message to the user. */
void sn_step_tell_lines(struct sn_plugin *p, const char *lines);
/* The warmup's line for slurmd's log: logged, or (in the agent) handed to
 * the task that logs it. */
void sn_step_log_result(struct sn_plugin *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif

/* SPDX-License-Identifier: MIT */
/*
 * step_confirm.c: who is blamed for a failed warmup, after a clean check
 * as root (the decision: src/core/protocol/verdict.h).
 */
#ifndef SN_STEP_CONFIRM_H
#define SN_STEP_CONFIRM_H

#include <stdbool.h>

#include "helper_exec.h"
#include "protocol/helper_protocol.h"
#include "protocol/verdict.h"
#include "protocol/warmup_result.h"

struct sn_plugin;

/* The confirmation of one failed warmup (state NOT_RUN: none). */
struct sn_step_confirm {
	enum sn_confirm_state state;
	enum sn_record_class class;		/* its own run's */
	struct sn_helper_outcome outcome;
	struct sn_warmup_result result;		/* root's: the node's facts */
	bool have_result;
	/* slurmstepd could not return to the job user's ids afterwards. */
	bool leave_failed;
};

/* The record class of a helper that ended as O says. */
enum sn_record_class sn_outcome_class(const struct sn_helper_outcome *o);

/*
 * The fault of a failed warmup on NODE (GPUS, MODE) whose job helper
 * ended as JOB (JOB_RESULT: its parsed JSON, or NULL): runs the
 * confirmation into C when the helper's class calls for one
 * (sn_verdict_needs_confirm) and decides (sn_verdict_decide).
 */
enum sn_fault sn_step_blame(const struct sn_plugin *p, const char *node,
			    const char *gpus, enum sn_warmup_mode mode,
			    const struct sn_helper_outcome *job,
			    const struct sn_warmup_result *job_result,
			    struct sn_step_confirm *c);

#endif

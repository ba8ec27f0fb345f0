/* SPDX-License-Identifier: MIT */
/*
 * Who is blamed for a failed warmup, from evidence the job's user cannot
 * forge (issue 30; docs/security.md "Trust").  The job's helper runs as
 * the job user and loads what that user chooses, so its exit status and
 * its JSON are the job's story: shown to the user, recorded, never alone
 * a node's fault.  When it fails (a usage error aside), the plugin runs a
 * confirmation: nccl-warmup as root, with a clean environment, the
 * site's NCCL, on the step's GPUs (src/plugin/step_confirm.c).  Only a
 * failed confirmation makes the fault "node"; a node whose clean check
 * passes leaves the failure to the job (or, for a fabric step, whose
 * failure no node can be shown to have caused, to the environment).
 */
#ifndef SN_VERDICT_H
#define SN_VERDICT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "protocol/fault.h"
#include "protocol/record_schema.h"

/* What the confirmation found. */
enum sn_confirm_state {
	SN_CONFIRM_NOT_RUN = 0,	/* not needed, or could not be run */
	SN_CONFIRM_PASSED,	/* the node passed the clean check */
	SN_CONFIRM_FAILED,	/* it failed with a node's class */
	/* It ended without a word on the node (its usage, a fabric-only
	 * class): a site's set-up problem, logged; no node is blamed. */
	SN_CONFIRM_INCONCLUSIVE,
};

struct sn_verdict_facts {
	/* The job's helper, as the root side saw it end (its exit status,
	 * signal, deadline): the record's class. */
	enum sn_record_class helper_class;
	/* What the helper's JSON said ("fault"); SN_FAULT_NONE if nothing. */
	enum sn_fault helper_fault;
	bool fabric;		/* a fabric (multi-node) warmup */
	enum sn_confirm_state confirm;
};

/* Whether a job helper that ended with class C needs a confirmation. */
bool sn_verdict_needs_confirm(enum sn_record_class c);
/* The confirmation's state from the class of its own (root) run. */
enum sn_confirm_state sn_confirm_state_of(enum sn_record_class c);
/* The fault of the record (SN_FAULT_NONE for a pass). */
enum sn_fault sn_verdict_decide(const struct sn_verdict_facts *f);
/* "passed", "failed", "inconclusive"; NULL when not run. */
const char *sn_confirm_state_name(enum sn_confirm_state s);

/*
 * The confirmation's environment from TEXT, a confirm_env= file (changed
 * in place): each line that is neither blank nor a "#" comment is
 * NAME=VALUE, NAME a shell variable name.  Fills ENVP with at most CAP - 1
 * pointers into TEXT and a NULL; returns their count, or -1 with ERR
 * naming the line.
 */
int sn_confirm_env_parse(char *text, char **envp, size_t cap,
			 struct sn_error *err);

#endif

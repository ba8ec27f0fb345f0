/* SPDX-License-Identifier: MIT */
/*
 * Applies a resolved plan to an environment.  All changes are computed
 * first; only then are they written, so a failure leaves nothing
 * half-applied (already-written changes are rolled back).
 *
 * Semantics (documented in nccl-profiles.conf(5)):
 *   set      VAR unset -> VAR=VALUE; VAR set to another value -> kept, notice
 *   default  VAR unset -> VAR=VALUE; otherwise kept silently
 *   merge    KEY absent from the list -> appended; KEY with another value ->
 *            kept, notice; other keys always kept
 *   unset    VAR set -> kept, notice (only "force unset" removes it)
 *   force    the profile's value replaces the user's; notice
 *
 * Two names of one setting (env_alias.h) are one variable: an operation
 * on either applies to every name the user set or the plan names; a name
 * the user did not set starts from the user's value under the other, and
 * a merge KEY the user gave under either name is the user's.
 */
#ifndef SN_ENV_APPLY_H
#define SN_ENV_APPLY_H

#include <stdbool.h>
#include <stddef.h>

#include "profiles/applied.h"
#include "base/envlist.h"
#include "base/error.h"
#include "profiles/resolve.h"

enum sn_notice_kind {
	SN_NOTICE_USER_KEPT,		/* user's value wins over the profile */
	SN_NOTICE_USER_OVERRIDDEN,	/* forced: profile replaced user's value */
};

struct sn_notice {
	enum sn_notice_kind kind;
	enum sn_op_kind op;	/* SET, MERGE or UNSET (default is silent) */
	char var[128];
	char profile[64];
	char user_value[256];	/* truncated for display; MERGE: "KEY:VALUE" */
	char profile_value[256];	/* UNSET: empty */
	/* Other names of VAR's setting that the user did not set: they got
	 * VAR's value and share its outcome (", " between). */
	char also[128];
};

struct sn_apply_report {
	size_t n_set;		/* variables written */
	size_t n_unset;		/* variables removed */
	struct sn_notice *notices;
	size_t n_notices;
	struct sn_applied written;	/* each variable written: before, after */
	bool written_lost;		/* too many, or out of memory */
	/* sn_step_env_apply() only: */
	bool record_lost;		/* SN_ENV_APPLIED not written */
	bool inherited_ignored;		/* a malformed inherited record... */
	struct sn_error inherited_error;	/* ...and why */
};

int sn_plan_apply(const struct sn_plan *plan, struct sn_env *env,
		  struct sn_apply_report *report, struct sn_error *err);
/*
 * A step's environment in one call (slurmstepd, user_init): puts back what
 * an earlier step's profiles left (the SN_ENV_APPLIED record, applied.h),
 * applies PLAN (NULL: no profiles for this step), and leaves the record of
 * this step's changes for the steps it starts.  Losing the record is not
 * fatal (REPORT->record_lost); a malformed inherited one is ignored
 * (REPORT->inherited_ignored).  On -1, ERR holds the whole message.
 */
int sn_step_env_apply(const struct sn_plan *plan, struct sn_env *env,
		      struct sn_apply_report *report, struct sn_error *err);
void sn_apply_report_free(struct sn_apply_report *report);
/* One human sentence for a notice, without the "spank-nccl: " prefix. */
void sn_notice_format(const struct sn_notice *n, char *buf, size_t len);

#endif

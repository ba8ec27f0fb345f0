/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiles/env_alias.h"
#include "profiles/env_apply.h"
#include "base/kvlist.h"
#include "base/strutil.h"

/* Longest user value we read back (spank_getenv needs a buffer). */
#define APPLY_VALUE_MAX 32768
/* Longest inherited SPANK_NCCL_APPLIED record read back. */
#define APPLIED_TEXT_MAX (256 * 1024)

/* What one variable becomes; one entry per variable the plan touches. */
struct change {
	const char *var;	/* the plan's or the alias table's string */
	char *old;		/* NULL: was unset */
	char *now;		/* NULL: unset */
	/* Unset by the user, started from the user's value under another
	 * name of its setting (env_alias.h): that name. */
	const char *copy_of;
	bool touched;		/* an operation has seen it */
};

/* The variables one operation applies to (a setting has few names). */
#define TARGETS_MAX 4

struct apply {
	const struct sn_plan *plan;
	struct change *changes;
	size_t n;
	struct sn_notice *notices;
	size_t n_notices;
	char *buf;
	struct sn_env *env;
	struct sn_error *err;
};

static int oom(struct apply *a)
{
	sn_error_set(a->err, "out of memory while applying profiles");
	return -1;
}

static struct change *change_for(struct apply *a, const char *var)
{
	struct change *grown;
	size_t i;
	int rc;

	for (i = 0; i < a->n; i++) {
		if (strcmp(a->changes[i].var, var) == 0)
			return &a->changes[i];
	}
	rc = a->env->get(a->env->ctx, var, a->buf, APPLY_VALUE_MAX);
	if (rc < 0) {
		sn_error_set(a->err, "cannot read %s from the job environment (longer than %d bytes?); nothing was applied",
			     var, APPLY_VALUE_MAX - 1);
		return NULL;
	}
	grown = realloc(a->changes, (a->n + 1) * sizeof(*grown));
	if (!grown) {
		oom(a);
		return NULL;
	}
	a->changes = grown;
	grown += a->n;
	memset(grown, 0, sizeof(*grown));
	grown->var = var;
	grown->old = rc > 0 ? strdup(a->buf) : NULL;
	grown->now = rc > 0 ? strdup(a->buf) : NULL;
	if (rc > 0 && (!grown->old || !grown->now)) {
		free(grown->old);
		free(grown->now);
		oom(a);
		return NULL;
	}
	a->n++;
	return grown;
}

/*
 * A notice about VAR (a name the user set), naming the other names of its
 * setting among T that started as copies of VAR (their outcome is VAR's).
 */
static int notice(struct apply *a, enum sn_notice_kind kind,
		  const struct sn_env_op *op, const struct change *var,
		  struct change *const *t, size_t n_t,
		  const char *user_value, const char *profile_value)
{
	struct sn_notice *grown, *n, probe = { 0 };

	/* The names of one setting, or two agreeing profiles: once. */
	probe.kind = kind;
	probe.op = op->kind;
	sn_str_printable(probe.var, sizeof(probe.var), var->var);
	sn_str_printable(probe.profile, sizeof(probe.profile), op->profile);
	sn_str_printable(probe.user_value, sizeof(probe.user_value), user_value);
	sn_str_printable(probe.profile_value, sizeof(probe.profile_value),
			 profile_value ? profile_value : "");
	for (size_t i = 0; i < a->n_notices; i++)
		if (a->notices[i].kind == kind && a->notices[i].op == op->kind &&
		    !strcmp(a->notices[i].var, probe.var) &&
		    !strcmp(a->notices[i].profile, probe.profile) &&
		    !strcmp(a->notices[i].user_value, probe.user_value) &&
		    !strcmp(a->notices[i].profile_value, probe.profile_value))
			return 0;
	grown = realloc(a->notices, (a->n_notices + 1) * sizeof(*grown));
	if (!grown)
		return oom(a);
	a->notices = grown;
	n = &grown[a->n_notices++];
	*n = probe;
	for (size_t i = 0; i < n_t; i++) {
		size_t used = strlen(n->also);

		if (t[i]->copy_of != var->var)
			continue;
		snprintf(n->also + used, sizeof(n->also) - used, "%s%s",
			 used ? ", " : "", t[i]->var);
	}
	return 0;
}

static int replace_now(struct apply *a, struct change *c, const char *value)
{
	char *copy = NULL;

	if (value && !(copy = strdup(value)))
		return oom(a);
	free(c->now);
	c->now = copy;
	return 0;
}

/* Whether C's list has KEY (OP's) with another value than OP's. */
static int merge_state(struct apply *a, const struct sn_env_op *op,
		       const struct change *c, char *found)
{
	size_t klen = sn_kv_key_len(op->value);

	/* An empty variable is an empty list. */
	if (!c->now || !sn_kvlist_find_n(c->now, op->value, klen, found,
					 APPLY_VALUE_MAX))
		return 0;	/* absent */
	return strcmp(found, op->value + klen + 1) == 0 ? 1 : 2;
}

/*
 * MERGE into every name T of the setting: KEY is the user's when any of
 * them has it with another value; then, unless forced, no name gets the
 * profile's (the user's other name would contradict it).
 */
static int plan_merge(struct apply *a, const struct sn_env_op *op,
		      struct change *const *t, size_t n_t)
{
	size_t klen = sn_kv_key_len(op->value), i;
	char *found = NULL, *user = NULL, *next = NULL;
	bool conflict = false;
	int rc = -1, state;

	if (!(found = malloc(APPLY_VALUE_MAX)) ||
	    !(user = malloc(klen + APPLY_VALUE_MAX + 2))) {
		oom(a);
		goto out;
	}
	for (i = 0; i < n_t; i++)
		conflict = conflict || merge_state(a, op, t[i], found) == 2;
	for (i = 0; i < n_t; i++) {
		state = merge_state(a, op, t[i], found);
		if (state == 1 || (conflict && !op->force && state == 0))
			continue;
		if (state == 2)
			sprintf(user, "%.*s:%s", (int)klen, op->value, found);
		if (state == 2 && !op->force) {
			if (!t[i]->copy_of &&
			    notice(a, SN_NOTICE_USER_KEPT, op, t[i], t, n_t,
				   user, op->value) < 0)
				goto out;
			continue;
		}
		free(next);
		next = sn_kvlist_put(t[i]->now ? t[i]->now : "", op->value);
		if (!next) {
			oom(a);
			goto out;
		}
		if (replace_now(a, t[i], next) < 0)
			goto out;
		if (state == 2 && !t[i]->copy_of &&
		    notice(a, SN_NOTICE_USER_OVERRIDDEN, op, t[i], t, n_t, user,
			   op->value) < 0)
			goto out;
	}
	rc = 0;
out:
	free(found);
	free(user);
	free(next);
	return rc;
}

/* A name of OP's setting that the plan names (it gets the setting). */
static bool named_by_plan(const struct apply *a, const char *var)
{
	for (size_t i = 0; i < a->plan->n_ops; i++)
		if (strcmp(a->plan->ops[i].var, var) == 0)
			return true;
	return false;
}

/*
 * The variables OP applies to, into T: its own, and every other name of
 * its setting (env_alias.h) that the user set or the plan names.  A name
 * the user did not set starts, when first seen, from the user's value
 * under another name: both names then say the same.
 */
static int targets(struct apply *a, const struct sn_env_op *op,
		   struct change **t, size_t *n_t)
{
	const char *const *group = sn_env_alias_group(op->var);
	const char *self[] = { op->var, NULL };
	struct change *c, *from;
	size_t idx[TARGETS_MAX], i, j;

	/* Indices first: change_for() may move the array. */
	*n_t = 0;
	for (i = 0; (group ? group : self)[i] && *n_t < TARGETS_MAX; i++) {
		const char *name = (group ? group : self)[i];

		if (!(c = change_for(a, name)))
			return -1;
		if (c->old || strcmp(name, op->var) == 0 ||
		    named_by_plan(a, name))
			idx[(*n_t)++] = (size_t)(c - a->changes);
	}
	for (i = 0; i < *n_t; i++)
		t[i] = &a->changes[idx[i]];
	for (i = 0; i < *n_t; i++) {
		c = t[i];
		if (c->touched)
			continue;
		c->touched = true;
		for (j = 0, from = NULL; !c->old && !from && j < *n_t; j++)
			from = t[j]->old ? t[j] : NULL;
		if (!from)
			continue;
		if (replace_now(a, c, from->old) < 0)
			return -1;
		c->copy_of = from->var;
	}
	return 0;
}

static int plan_op(struct apply *a, const struct sn_env_op *op)
{
	struct change *t[TARGETS_MAX];
	enum sn_notice_kind kind = op->force ? SN_NOTICE_USER_OVERRIDDEN :
					       SN_NOTICE_USER_KEPT;
	size_t n_t, i;

	if (targets(a, op, t, &n_t) < 0)
		return -1;
	if (op->kind == SN_OP_MERGE)
		return plan_merge(a, op, t, n_t);
	for (i = 0; i < n_t; i++) {
		struct change *c = t[i];
		const char *want = op->kind == SN_OP_UNSET ? NULL : op->value;

		if (!c->now) {
			/* Unset: SET and DEFAULT write it, UNSET is done. */
			if (want && replace_now(a, c, want) < 0)
				return -1;
			continue;
		}
		if ((want && strcmp(c->now, want) == 0) ||
		    op->kind == SN_OP_DEFAULT)
			continue;
		if (!c->copy_of &&
		    notice(a, kind, op, c, t, n_t, c->now, want) < 0)
			return -1;
		if (op->force && replace_now(a, c, want) < 0)
			return -1;
	}
	return 0;
}

static bool changed(const struct change *c)
{
	if (!c->old || !c->now)
		return c->old != c->now;
	return strcmp(c->old, c->now) != 0;
}

static int write_change(struct sn_env *env, const char *var, const char *value)
{
	if (value)
		return env->set(env->ctx, var, value);
	return env->unset(env->ctx, var);
}

/* Writes every change; on a failure restores what was written. */
static int write_all(struct apply *a, struct sn_apply_report *report)
{
	bool restored = true;
	size_t i, j;

	for (i = 0; i < a->n; i++) {
		struct change *c = &a->changes[i];

		if (!changed(c))
			continue;
		if (write_change(a->env, c->var, c->now) == 0) {
			if (c->now)
				report->n_set++;
			else
				report->n_unset++;
			continue;
		}
		for (j = 0; j < i; j++) {
			struct change *w = &a->changes[j];

			if (changed(w) &&
			    write_change(a->env, w->var, w->old) < 0)
				restored = false;
		}
		sn_error_set(a->err, "cannot %s %s in the job environment; %s",
			     c->now ? "set" : "unset", c->var,
			     restored ? "no profile setting was applied"
				      : "restoring the variables already written also failed");
		report->n_set = report->n_unset = 0;
		return -1;
	}
	return 0;
}

static void free_changes(struct apply *a)
{
	size_t i;

	for (i = 0; i < a->n; i++) {
		free(a->changes[i].old);
		free(a->changes[i].now);
	}
	free(a->changes);
}

int sn_plan_apply(const struct sn_plan *plan, struct sn_env *env,
		  struct sn_apply_report *report, struct sn_error *err)
{
	struct apply a = { .plan = plan, .env = env, .err = err };
	size_t i;
	int rc = -1;

	memset(report, 0, sizeof(*report));
	a.buf = malloc(APPLY_VALUE_MAX);
	if (!a.buf) {
		oom(&a);
		return -1;
	}
	for (i = 0; i < plan->n_ops; i++) {
		if (plan_op(&a, &plan->ops[i]) < 0)
			goto out;
	}
	if (write_all(&a, report) < 0)
		goto out;
	for (i = 0; i < a.n; i++) {
		struct change *c = &a.changes[i];

		/* Only a record for later steps: losing it is not fatal. */
		if (changed(c) &&
		    sn_applied_add(&report->written, c->var, c->old, c->now) < 0) {
			sn_applied_free(&report->written);
			report->written_lost = true;
			break;
		}
	}
	report->notices = a.notices;
	report->n_notices = a.n_notices;
	a.notices = NULL;
	rc = 0;
out:
	free(a.notices);
	free_changes(&a);
	free(a.buf);
	return rc;
}

/*
 * Undo what an earlier step's profiles left in the inherited environment
 * (see applied.h), so this step's own request starts from the user's.
 */
static int revert_inherited(struct sn_env *env, struct sn_apply_report *report,
			    struct sn_error *err)
{
	struct sn_applied inherited;
	char *text = malloc(APPLIED_TEXT_MAX);
	int found, rc = 0;

	if (!text)
		return -1;
	found = env->get(env->ctx, SN_ENV_APPLIED, text, APPLIED_TEXT_MAX);
	if (found == 1) {
		if (sn_applied_decode(text, &inherited,
				      &report->inherited_error) == 0) {
			rc = sn_applied_revert(&inherited, env) < 0 ? -1 : 0;
			sn_applied_free(&inherited);
		} else {
			report->inherited_ignored = true;
		}
	}
	if (found != 0 && env->unset(env->ctx, SN_ENV_APPLIED) < 0)
		rc = -1;
	free(text);
	if (rc < 0)
		sn_error_set(err, "cannot restore the variables an earlier step's profiles changed");
	return rc;
}

/* Leaves a record of this step's changes for the steps it starts. */
static int record_changes(const struct sn_applied *written, struct sn_env *env)
{
	char *text;
	int rc;

	if (!written->n)
		return 0;
	text = sn_applied_encode(written);
	if (!text)
		return -1;
	rc = env->set(env->ctx, SN_ENV_APPLIED, text);
	free(text);
	return rc;
}

int sn_step_env_apply(const struct sn_plan *plan, struct sn_env *env,
		      struct sn_apply_report *report, struct sn_error *err)
{
	struct sn_apply_report inherited = { 0 };
	struct sn_error apply_err;
	int rc = 0;

	memset(report, 0, sizeof(*report));
	if (revert_inherited(env, &inherited, err) < 0) {
		rc = -1;
	} else if (plan && sn_plan_apply(plan, env, report, &apply_err) < 0) {
		sn_error_set(err, "profiles %s not applied: %s", plan->names,
			     apply_err.msg);
		rc = -1;
	} else if (plan && (report->written_lost ||
			    record_changes(&report->written, env) < 0)) {
		report->record_lost = true;
	}
	/* sn_plan_apply() starts a fresh report: what the revert saw, now. */
	report->inherited_ignored = inherited.inherited_ignored;
	report->inherited_error = inherited.inherited_error;
	return rc;
}

void sn_apply_report_free(struct sn_apply_report *report)
{
	if (!report)
		return;
	free(report->notices);
	sn_applied_free(&report->written);
	memset(report, 0, sizeof(*report));
}

void sn_notice_format(const struct sn_notice *n, char *buf, size_t len)
{
	int klen = (int)sn_kv_key_len(n->profile_value);
	char also[192] = "";

	if (n->also[0])
		snprintf(also, sizeof(also), ", also as %s (the same setting)",
			 n->also);
	if (n->kind == SN_NOTICE_USER_KEPT) {
		switch (n->op) {
		case SN_OP_MERGE:
			snprintf(buf, len, "%s in your environment has \"%s\"; profile \"%s\" wants \"%s\": keeping yours%s (remove %.*s from %s to use the profile)",
				 n->var, n->user_value, n->profile, n->profile_value,
				 also, klen, n->profile_value, n->var);
			return;
		case SN_OP_UNSET:
			snprintf(buf, len, "%s is set to \"%s\" in your environment; profile \"%s\" wants it unset: keeping yours%s (unset it to use the profile)",
				 n->var, n->user_value, n->profile, also);
			return;
		default:
			snprintf(buf, len, "%s is already set to \"%s\" in your environment; profile \"%s\" wants \"%s\": keeping yours%s (unset it to use the profile)",
				 n->var, n->user_value, n->profile, n->profile_value,
				 also);
			return;
		}
	}
	switch (n->op) {
	case SN_OP_MERGE:
		snprintf(buf, len, "profile \"%s\" replaced \"%s\" with \"%s\" in your %s%s",
			 n->profile, n->user_value, n->profile_value, n->var,
			 also);
		return;
	case SN_OP_UNSET:
		snprintf(buf, len, "profile \"%s\" removed your %s=\"%s\"%s",
			 n->profile, n->var, n->user_value, also);
		return;
	default:
		snprintf(buf, len, "profile \"%s\" replaced your %s=\"%s\" with \"%s\"%s",
			 n->profile, n->var, n->user_value, n->profile_value,
			 also);
		return;
	}
}

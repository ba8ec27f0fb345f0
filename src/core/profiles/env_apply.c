/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_apply.h"
#include "kvlist.h"
#include "strutil.h"

/* Longest user value we read back (spank_getenv needs a buffer). */
#define APPLY_VALUE_MAX 32768
/* Longest inherited SPANK_NCCL_APPLIED record read back. */
#define APPLIED_TEXT_MAX (256 * 1024)

/* What one variable becomes; one entry per variable the plan touches. */
struct change {
	const char *var;	/* the plan's string */
	char *old;		/* NULL: was unset */
	char *now;		/* NULL: unset */
};

struct apply {
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

static int notice(struct apply *a, enum sn_notice_kind kind,
		  const struct sn_env_op *op, const char *user_value,
		  const char *profile_value)
{
	struct sn_notice *grown, *n;

	grown = realloc(a->notices, (a->n_notices + 1) * sizeof(*grown));
	if (!grown)
		return oom(a);
	a->notices = grown;
	n = &grown[a->n_notices++];
	memset(n, 0, sizeof(*n));
	n->kind = kind;
	n->op = op->kind;
	sn_str_printable(n->var, sizeof(n->var), op->var);
	sn_str_printable(n->profile, sizeof(n->profile), op->profile);
	sn_str_printable(n->user_value, sizeof(n->user_value), user_value);
	sn_str_printable(n->profile_value, sizeof(n->profile_value),
			 profile_value ? profile_value : "");
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

static int plan_merge(struct apply *a, const struct sn_env_op *op,
		      struct change *c)
{
	size_t klen = sn_kv_key_len(op->value);
	const char *want = op->value + klen + 1;
	char *found = NULL, *user = NULL, *next = NULL;
	bool had;
	int rc = -1;

	if (!(found = malloc(APPLY_VALUE_MAX))) {
		oom(a);
		goto out;
	}
	/* An empty variable is an empty list. */
	had = c->now && sn_kvlist_find_n(c->now, op->value, klen, found,
					 APPLY_VALUE_MAX);
	if (had && strcmp(found, want) == 0) {
		rc = 0;
		goto out;
	}
	if (had) {
		user = malloc(klen + strlen(found) + 2);
		if (!user) {
			oom(a);
			goto out;
		}
		sprintf(user, "%.*s:%s", (int)klen, op->value, found);
		if (!op->force) {
			rc = notice(a, SN_NOTICE_USER_KEPT, op, user, op->value);
			goto out;
		}
	}
	next = sn_kvlist_put(c->now ? c->now : "", op->value);
	if (!next) {
		oom(a);
		goto out;
	}
	rc = replace_now(a, c, next);
	if (rc == 0 && had)
		rc = notice(a, SN_NOTICE_USER_OVERRIDDEN, op, user, op->value);
out:
	free(found);
	free(user);
	free(next);
	return rc;
}

static int plan_op(struct apply *a, const struct sn_env_op *op)
{
	struct change *c = change_for(a, op->var);

	if (!c)
		return -1;
	switch (op->kind) {
	case SN_OP_DEFAULT:
		return c->now ? 0 : replace_now(a, c, op->value);
	case SN_OP_SET:
		if (!c->now)
			return replace_now(a, c, op->value);
		if (strcmp(c->now, op->value) == 0)
			return 0;
		if (!op->force)
			return notice(a, SN_NOTICE_USER_KEPT, op, c->now,
				      op->value);
		if (notice(a, SN_NOTICE_USER_OVERRIDDEN, op, c->now,
			   op->value) < 0)
			return -1;
		return replace_now(a, c, op->value);
	case SN_OP_MERGE:
		return plan_merge(a, op, c);
	case SN_OP_UNSET:
		if (!c->now)
			return 0;
		if (!op->force)
			return notice(a, SN_NOTICE_USER_KEPT, op, c->now, NULL);
		if (notice(a, SN_NOTICE_USER_OVERRIDDEN, op, c->now, NULL) < 0)
			return -1;
		return replace_now(a, c, NULL);
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
	struct apply a = { .env = env, .err = err };
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

	if (n->kind == SN_NOTICE_USER_KEPT) {
		switch (n->op) {
		case SN_OP_MERGE:
			snprintf(buf, len, "%s in your environment has \"%s\"; profile \"%s\" wants \"%s\": keeping yours (remove %.*s from %s to use the profile)",
				 n->var, n->user_value, n->profile, n->profile_value,
				 klen, n->profile_value, n->var);
			return;
		case SN_OP_UNSET:
			snprintf(buf, len, "%s is set to \"%s\" in your environment; profile \"%s\" wants it unset: keeping yours (unset it to use the profile)",
				 n->var, n->user_value, n->profile);
			return;
		default:
			snprintf(buf, len, "%s is already set to \"%s\" in your environment; profile \"%s\" wants \"%s\": keeping yours (unset it to use the profile)",
				 n->var, n->user_value, n->profile, n->profile_value);
			return;
		}
	}
	switch (n->op) {
	case SN_OP_MERGE:
		snprintf(buf, len, "profile \"%s\" replaced \"%s\" with \"%s\" in your %s",
			 n->profile, n->user_value, n->profile_value, n->var);
		return;
	case SN_OP_UNSET:
		snprintf(buf, len, "profile \"%s\" removed your %s=\"%s\"",
			 n->profile, n->var, n->user_value);
		return;
	default:
		snprintf(buf, len, "profile \"%s\" replaced your %s=\"%s\" with \"%s\"",
			 n->profile, n->var, n->user_value, n->profile_value);
		return;
	}
}

/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiles/env_alias.h"
#include "base/kvlist.h"
#include "profiles/resolve.h"
#include "base/strutil.h"

/* An operation of the plan being built, with where it came from. */
struct pending {
	const struct sn_env_op *op;
	bool site;		/* from a site default profile */
};

struct builder {
	struct pending *ops;
	size_t n;
};

/*
 * Two operations are about the same thing: the same setting (one VAR, or
 * two names of one, env_alias.h), and the same merge KEY.
 */
static bool related(const struct sn_env_op *a, const struct sn_env_op *b)
{
	if (!sn_env_same_setting(a->var, b->var))
		return false;
	if (a->kind != SN_OP_MERGE || b->kind != SN_OP_MERGE)
		return true;
	return sn_kv_same_key(a->value, b->value);
}

/*
 * Operations that want the same result: both assign the same value (set
 * and default), both unset, or both merge the same KEY:VALUE.  Whether
 * one of them is forced does not change what the variable ends up as.
 */
static bool agree(const struct sn_env_op *a, const struct sn_env_op *b)
{
	bool assign_a = a->kind == SN_OP_SET || a->kind == SN_OP_DEFAULT;
	bool assign_b = b->kind == SN_OP_SET || b->kind == SN_OP_DEFAULT;

	if (assign_a && assign_b)
		return strcmp(a->value, b->value) == 0;
	if (a->kind != b->kind)
		return false;
	return a->kind == SN_OP_UNSET || strcmp(a->value, b->value) == 0;
}

/* The stronger of two agreeing operations: force beats plain, set default. */
static const struct sn_env_op *stronger(const struct sn_env_op *a,
					const struct sn_env_op *b)
{
	if (a->force != b->force)
		return a->force ? a : b;
	if (a->kind == SN_OP_DEFAULT && b->kind == SN_OP_SET)
		return b;
	return a;
}

static void describe(const struct sn_env_op *op, char *buf, size_t len)
{
	char value[120];
	const char *force = op->force ? "force " : "";

	sn_str_printable(value, sizeof(value), op->value ? op->value : "");
	switch (op->kind) {
	case SN_OP_SET:
		snprintf(buf, len, "%sset it to \"%s\"", force, value);
		break;
	case SN_OP_DEFAULT:
		snprintf(buf, len, "default it to \"%s\"", value);
		break;
	case SN_OP_MERGE:
		snprintf(buf, len, "%smerge \"%s\" into it", force, value);
		break;
	case SN_OP_UNSET:
		snprintf(buf, len, "%sunset it", force);
		break;
	}
}

static void conflict_error(const struct sn_env_op *a, const struct sn_env_op *b,
			   bool site, struct sn_error *err)
{
	const char *fix = site ? "fix default_profiles= in plugstack.conf"
			       : "request only one of them";
	const char *who = site ? "site default profiles" : "profiles";
	char va[200], vb[200], var[300];

	/* Two names of one setting (env_alias.h): both, and why. */
	if (strcmp(a->var, b->var) != 0)
		snprintf(var, sizeof(var), "%s/%s (one setting)", a->var,
			 b->var);
	else
		snprintf(var, sizeof(var), "%s", a->var);
	if (a->kind == SN_OP_SET && b->kind == SN_OP_SET) {
		sn_str_printable(va, sizeof(va), a->value);
		sn_str_printable(vb, sizeof(vb), b->value);
		sn_error_set(err, "%s \"%s\" and \"%s\" both set %s, to \"%s\" and \"%s\": %s",
			     who, a->profile, b->profile, var, va, vb, fix);
	} else if (a->kind == SN_OP_MERGE && b->kind == SN_OP_MERGE) {
		sn_str_printable(va, sizeof(va), a->value);
		sn_str_printable(vb, sizeof(vb), b->value);
		sn_error_set(err, "%s \"%s\" and \"%s\" both merge key \"%.*s\" into %s, as \"%s\" and \"%s\": %s",
			     who, a->profile, b->profile,
			     (int)sn_kv_key_len(a->value), a->value, var, va, vb,
			     fix);
	} else {
		describe(a, va, sizeof(va));
		describe(b, vb, sizeof(vb));
		sn_error_set(err, "%s \"%s\" and \"%s\" disagree on %s: \"%s\" wants to %s, \"%s\" wants to %s: %s",
			     who, a->profile, b->profile, var, a->profile,
			     va, b->profile, vb, fix);
	}
}

static int add(struct builder *b, const struct sn_env_op *op, bool site,
	       struct sn_error *err)
{
	struct pending *grown = realloc(b->ops, (b->n + 1) * sizeof(*grown));

	if (!grown) {
		sn_error_set(err, "out of memory while resolving profiles");
		return -1;
	}
	b->ops = grown;
	b->ops[b->n].op = op;
	b->ops[b->n].site = site;
	b->n++;
	return 0;
}

static void drop(struct builder *b, size_t i)
{
	memmove(&b->ops[i], &b->ops[i + 1], (b->n - i - 1) * sizeof(*b->ops));
	b->n--;
}

/*
 * Adds PROFILE's operations.  A requested profile silently replaces what a
 * site default said about the same variable; between two profiles of the
 * same kind (site or requested) a disagreement is an error.
 */
static int add_profile(struct builder *b, const struct sn_profile *profile,
		       bool site, struct sn_error *err)
{
	size_t i, j;

	for (i = 0; i < profile->n_ops; i++) {
		const struct sn_env_op *op = &profile->ops[i];
		bool merged = false;

		for (j = 0; j < b->n;) {
			struct pending *p = &b->ops[j];

			if (!related(p->op, op)) {
				j++;
				continue;
			}
			if (p->site && !site) {
				drop(b, j);
				continue;
			}
			if (!agree(p->op, op)) {
				conflict_error(p->op, op, site, err);
				return -1;
			}
			/* The other name of one setting stays in the plan:
			 * the tasks get both names (env_apply.c). */
			if (strcmp(p->op->var, op->var) == 0) {
				p->op = stronger(p->op, op);
				merged = true;
			}
			j++;
		}
		if (!merged && add(b, op, site, err) < 0)
			return -1;
	}
	return 0;
}

void sn_profile_names(const struct sn_profile_set *set, char *buf, size_t len)
{
	size_t i, used = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (i = 0; set && i < set->n_profiles; i++) {
		int n = snprintf(buf + used, len - used, "%s%s",
				 i ? ", " : "", set->profiles[i].name);

		if (n < 0 || (size_t)n >= len - used) {
			/* Cut at a name boundary and say so. */
			buf[used] = '\0';
			if (used + 5 <= len)
				strcpy(buf + used, ", ...");
			else if (len >= 4)
				strcpy(buf + len - 4, "...");
			return;
		}
		used += (size_t)n;
	}
}

void sn_profile_ops_format(const struct sn_profile *profile, char *buf,
			   size_t len)
{
	static const char *const kind[] = {
		[SN_OP_SET] = "set", [SN_OP_DEFAULT] = "default",
		[SN_OP_MERGE] = "merge", [SN_OP_UNSET] = "unset",
	};
	size_t used = 0, i;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (i = 0; i < profile->n_ops && used < len; i++) {
		const struct sn_env_op *op = &profile->ops[i];
		char value[200] = "";
		int n;

		if (op->value)
			sn_str_printable(value, sizeof(value), op->value);
		n = snprintf(buf + used, len - used, "%s%s%s %s%s%s",
			     i ? "; " : "", op->force ? "force " : "",
			     kind[op->kind], op->var,
			     op->kind == SN_OP_UNSET ? "" :
			     op->kind == SN_OP_MERGE ? " " : "=", value);
		if (n < 0)
			return;
		used += (size_t)n;
	}
	if (used >= len && len >= 4)
		strcpy(buf + len - 4, "...");
}

static int lookup_all(const struct sn_profile_set *set,
		      const struct sn_profile_request *req, bool site,
		      const struct sn_profile **out, struct sn_error *err)
{
	char known[SN_ERROR_MAX / 2];
	size_t i;

	for (i = 0; i < req->count; i++) {
		out[i] = sn_profile_set_find(set, req->names[i]);
		if (out[i])
			continue;
		sn_profile_names(set, known, sizeof(known));
		if (site)
			sn_error_set(err, "plugstack.conf default_profiles names unknown profile \"%s\"; profiles in %s: %s (fix default_profiles= or the profile file)",
				     req->names[i], set->path ? set->path : "the profile file",
				     *known ? known : "(none)");
		else
			sn_error_set(err, "unknown profile \"%s\"; known profiles: %s (see --nccl-profile=list)",
				     req->names[i], *known ? known : "(none)");
		return -1;
	}
	return 0;
}

static bool contributes(const struct builder *b, const char *name)
{
	size_t i;

	for (i = 0; i < b->n; i++) {
		if (strcmp(b->ops[i].op->profile, name) == 0)
			return true;
	}
	return false;
}

static void append_name(char *names, size_t len, const char *name, bool *cut)
{
	size_t used = strlen(names);
	/* A name already listed (site default also requested) appears once. */
	const char *p = names;
	size_t n = strlen(name);

	while ((p = strstr(p, name))) {
		if ((p == names || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return;
		p += n;
	}
	if (*cut)
		return;
	if (used + (used ? 1 : 0) + n + 1 > len) {
		/* Full: drop whole names until ",..." fits after the rest. */
		while (used > 0 && used + 5 > len) {
			char *comma = strrchr(names, ',');

			used = comma ? (size_t)(comma - names) : 0;
			names[used] = '\0';
		}
		strcpy(names + used, used ? ",..." : "...");
		*cut = true;
		return;
	}
	if (used)
		names[used++] = ',';
	memcpy(names + used, name, n + 1);
}

static int copy_plan(const struct builder *b, struct sn_plan *plan,
		     struct sn_error *err)
{
	size_t i;

	plan->ops = calloc(b->n ? b->n : 1, sizeof(*plan->ops));
	if (!plan->ops)
		goto oom;
	for (i = 0; i < b->n; i++) {
		const struct sn_env_op *src = b->ops[i].op;
		struct sn_env_op *dst = &plan->ops[i];

		*dst = *src;
		dst->var = strdup(src->var);
		dst->value = src->value ? strdup(src->value) : NULL;
		dst->profile = strdup(src->profile);
		plan->n_ops = i + 1;
		if (!dst->var || (src->value && !dst->value) || !dst->profile)
			goto oom;
	}
	return 0;
oom:
	sn_error_set(err, "out of memory while resolving profiles");
	return -1;
}

int sn_resolve(const struct sn_profile_set *set,
	       const struct sn_profile_request *site_defaults,
	       const struct sn_profile_request *requested,
	       struct sn_plan *plan, struct sn_error *err)
{
	const struct sn_profile *site[SN_PROFILE_REQUEST_MAX];
	const struct sn_profile *req[SN_PROFILE_REQUEST_MAX];
	size_t n_site = 0, n_req = 0, i;
	struct builder b = { 0 };
	bool none = requested && requested->given && requested->none;
	bool cut = false;

	memset(plan, 0, sizeof(*plan));
	if (requested && requested->given && requested->list) {
		sn_error_set(err, "--nccl-profile=list lists profiles; it does not apply any");
		return -1;
	}
	if (site_defaults && !site_defaults->none && !none) {
		if (lookup_all(set, site_defaults, true, site, err) < 0)
			return -1;
		n_site = site_defaults->count;
	}
	if (requested && requested->given && !none) {
		if (lookup_all(set, requested, false, req, err) < 0)
			return -1;
		n_req = requested->count;
	}
	for (i = 0; i < n_site; i++) {
		if (add_profile(&b, site[i], true, err) < 0)
			goto fail;
	}
	for (i = 0; i < n_req; i++) {
		if (add_profile(&b, req[i], false, err) < 0)
			goto fail;
	}
	for (i = 0; i < n_site; i++) {
		if (contributes(&b, site[i]->name))
			append_name(plan->names, sizeof(plan->names),
				    site[i]->name, &cut);
	}
	for (i = 0; i < n_req; i++)
		append_name(plan->names, sizeof(plan->names), req[i]->name,
			    &cut);
	if (copy_plan(&b, plan, err) < 0)
		goto fail;
	free(b.ops);
	return 0;
fail:
	free(b.ops);
	sn_plan_free(plan);
	return -1;
}

void sn_plan_free(struct sn_plan *plan)
{
	size_t i;

	if (!plan)
		return;
	for (i = 0; i < plan->n_ops; i++) {
		free(plan->ops[i].var);
		free(plan->ops[i].value);
		free((char *)plan->ops[i].profile);
	}
	free(plan->ops);
	memset(plan, 0, sizeof(*plan));
}

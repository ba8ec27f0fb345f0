/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "base/kvlist.h"
#include "profiles/rules.h"
#include "base/strutil.h"

/* Large enough for any allocator or NCCL setting a rule would look at. */
#define RULE_VALUE_MAX 8192

enum lookup {
	VAR_UNSET,	/* absent or empty */
	VAR_VALUE,	/* present; value in the buffer */
	VAR_UNREADABLE,	/* present but too long to read: matches no value */
};

static enum lookup lookup(struct sn_env *env, const char *name, char *buf,
			  size_t len)
{
	int rc = env->get(env->ctx, name, buf, len);

	if (rc == 0 || (rc > 0 && !buf[0]))
		return VAR_UNSET;
	return rc > 0 ? VAR_VALUE : VAR_UNREADABLE;
}

static bool any_equals(const struct sn_rule_cond *c, const char *value)
{
	size_t i;

	for (i = 0; i < c->n_values; i++) {
		if (sn_streq_nocase(value, c->values[i]))
			return true;
	}
	return false;
}

static bool cond_holds(const struct sn_rule_cond *c, struct sn_env *env,
		       char *buf, size_t len)
{
	bool any = false;
	size_t i;

	for (i = 0; i < c->n_vars && !any; i++) {
		enum lookup state = lookup(env, c->vars[i], buf, len);

		switch (c->kind) {
		case SN_COND_EQ:
		case SN_COND_NE:
			any = state == VAR_VALUE && any_equals(c, buf);
			break;
		case SN_COND_HAS:
			any = state == VAR_VALUE && sn_kvlist_has(buf, c->values[0]);
			break;
		case SN_COND_SET:
		case SN_COND_UNSET:
			any = state != VAR_UNSET;
			break;
		}
	}
	/* NE and UNSET are the negations of "any variable matches". */
	if (c->kind == SN_COND_NE || c->kind == SN_COND_UNSET)
		return !any;
	return any;
}

bool sn_rule_matches(const struct sn_rule *rule, struct sn_env *env)
{
	char buf[RULE_VALUE_MAX];
	bool match = rule->n_conds > 0;
	size_t i;

	for (i = 0; i < rule->n_conds && match; i++)
		match = cond_holds(&rule->conds[i], env, buf, sizeof(buf));
	return match;
}

size_t sn_rules_evaluate(const struct sn_profile_set *set, struct sn_env *env,
			 const struct sn_rule **matched, size_t max)
{
	size_t i, n = 0;

	for (i = 0; i < set->n_rules && n < max; i++) {
		if (sn_rule_matches(&set->rules[i], env))
			matched[n++] = &set->rules[i];
	}
	return n;
}

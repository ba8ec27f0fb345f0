/* SPDX-License-Identifier: MIT */
/*
 * Known-bad combinations: the [rule] sections of the profile file,
 * evaluated against an environment (after the plan was applied).
 */
#ifndef SN_RULES_H
#define SN_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "base/envlist.h"
#include "profiles/profile_file.h"

/* True if every condition of RULE holds in ENV. */
bool sn_rule_matches(const struct sn_rule *rule, struct sn_env *env);

/*
 * Evaluates every rule of SET; writes pointers to the matching ones into
 * MATCHED (up to MAX) and returns how many matched.
 */
size_t sn_rules_evaluate(const struct sn_profile_set *set, struct sn_env *env,
			 const struct sn_rule **matched, size_t max);

#endif

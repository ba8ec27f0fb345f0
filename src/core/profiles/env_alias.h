/* SPDX-License-Identifier: MIT */
/*
 * Settings with two names: variables a program reads under either name,
 * so that a profile and the user writing different names would give the
 * tasks two values of one setting.  The profile merge (env_apply.c) and
 * resolution (resolve.c) treat a group's names as one setting.
 */
#ifndef SN_ENV_ALIAS_H
#define SN_ENV_ALIAS_H

#include <stdbool.h>

/* VAR's group (VAR included), NULL-terminated; NULL when VAR has none. */
const char *const *sn_env_alias_group(const char *var);
/* A and B are one setting: the same name, or two names of one group. */
bool sn_env_same_setting(const char *a, const char *b);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The admin-owned profile file, nccl-profiles.conf(5).  Parsed whole into
 * memory; any error names the file and line and nothing is kept.
 *
 *   [profile NAME]
 *   description = one line shown by --nccl-profile=list
 *   set     VAR=VALUE           user's own VAR wins (user is told)
 *   default VAR=VALUE           only if VAR is unset; silent otherwise
 *   merge   VAR KEY:VALUE       into a comma-separated key:value list
 *   unset   VAR
 *   force set|merge|unset ...   the profile wins over the user (user is told)
 *
 *   [rule NAME]
 *   level   = warning | error
 *   message = text shown to the user
 *   when VAR[,VAR...] = V1[|V2...]     any VAR equals any V (case-insensitive)
 *   when VAR[,VAR...] != V1[|V2...]    no VAR equals any V (unset counts)
 *   when VAR[,VAR...] has KEY:VALUE    any VAR's list holds KEY:VALUE
 *   when VAR[,VAR...] set | unset
 *   (all "when" lines of a rule must hold for it to fire)
 */
#ifndef SN_PROFILE_FILE_H
#define SN_PROFILE_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define SN_VAR_NAME_MAX 128
#define SN_VALUE_MAX 4096
#define SN_PROFILE_FILE_MAX_BYTES (1024 * 1024)

enum sn_op_kind {
	SN_OP_SET,
	SN_OP_DEFAULT,
	SN_OP_MERGE,
	SN_OP_UNSET,
};

struct sn_env_op {
	enum sn_op_kind kind;
	bool force;
	char *var;
	char *value;		/* SET/DEFAULT: value; MERGE: "KEY:VALUE"; UNSET: NULL */
	const char *profile;	/* name of the owning profile (not owned) */
	unsigned int line;
};

struct sn_profile {
	char *name;
	char *description;
	unsigned int line;
	struct sn_env_op *ops;
	size_t n_ops;
};

enum sn_rule_level {
	SN_RULE_WARNING,
	SN_RULE_ERROR,
};

enum sn_cond_kind {
	SN_COND_EQ,
	SN_COND_NE,
	SN_COND_HAS,
	SN_COND_SET,
	SN_COND_UNSET,
};

struct sn_rule_cond {
	enum sn_cond_kind kind;
	char **vars;		/* one or more variable names */
	size_t n_vars;
	char **values;		/* EQ/NE: alternatives; HAS: one "KEY:VALUE" */
	size_t n_values;
};

struct sn_rule {
	char *name;
	enum sn_rule_level level;
	char *message;
	unsigned int line;
	struct sn_rule_cond *conds;
	size_t n_conds;
};

struct sn_profile_set {
	char *path;
	struct sn_profile *profiles;
	size_t n_profiles;
	struct sn_rule *rules;
	size_t n_rules;
};

/* Reads and parses PATH.  Refuses a file that is not a regular file. */
int sn_profile_set_load(struct sn_profile_set *set, const char *path,
			struct sn_error *err);
/* Parses TEXT; PATH is used only in messages ("PATH:LINE: ..."). */
int sn_profile_set_parse(struct sn_profile_set *set, const char *text,
			 const char *path, struct sn_error *err);
void sn_profile_set_free(struct sn_profile_set *set);
const struct sn_profile *sn_profile_set_find(const struct sn_profile_set *set,
					     const char *name);

#endif

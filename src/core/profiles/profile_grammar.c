/* SPDX-License-Identifier: MIT */
/*
 * The [profile NAME] section grammar of nccl-profiles.conf(5):
 * description, set, default, merge, unset and their "force" forms.
 */
#include <stdlib.h>
#include <string.h>

#include "base/kvlist.h"
#include "profiles/profile_syntax.h"
#include "base/strutil.h"

#define PROFILE_DIRECTIVES "description, set, default, merge, unset, force"

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int check_duplicate_op(struct sn_pf_parser *p,
			      const struct sn_env_op *op)
{
	const struct sn_profile *prof = p->profile;
	size_t i;

	for (i = 0; i < prof->n_ops; i++) {
		const struct sn_env_op *o = &prof->ops[i];

		if (strcmp(o->var, op->var) != 0)
			continue;
		if (o->kind == SN_OP_MERGE && op->kind == SN_OP_MERGE) {
			if (!sn_kv_same_key(o->value, op->value))
				continue;
			return PERR(p, "profile \"%s\" already merges key \"%.*s\" into %s (line %u): give each key once",
				    prof->name, (int)sn_kv_key_len(op->value),
				    op->value, op->var, o->line);
		}
		return PERR(p, "profile \"%s\" already has a line for %s (line %u): give one operation per variable",
			    prof->name, op->var, o->line);
	}
	return 0;
}

static int add_op(struct sn_pf_parser *p, enum sn_op_kind kind, bool force,
		  const char *var, const char *value)
{
	struct sn_profile *prof = p->profile;
	struct sn_env_op op = {
		.kind = kind, .force = force, .var = (char *)var,
		.value = (char *)value, .profile = prof->name, .line = p->line,
	};
	struct sn_env_op *ops;

	if (check_duplicate_op(p, &op) < 0)
		return -1;
	ops = sn_pf_grow(prof->ops, prof->n_ops, sizeof(*ops));
	if (!ops)
		return sn_pf_oom(p);
	prof->ops = ops;
	op.var = strdup(var);
	op.value = dup_or_null(value);
	if (!op.var || (value && !op.value)) {
		free(op.var);
		free(op.value);
		return sn_pf_oom(p);
	}
	prof->ops[prof->n_ops++] = op;
	return 0;
}

/* "VAR=VALUE" of set/default; REST is modified. */
static int parse_assignment(struct sn_pf_parser *p, enum sn_op_kind kind,
			    bool force, const char *verb, char *rest)
{
	char *eq = strchr(rest, '=');
	char *value;

	if (!eq)
		return PERR(p, "expected \"%s VAR=VALUE\"", verb);
	*eq = '\0';
	value = sn_strtrim(eq + 1);
	sn_strtrim(rest);
	if (sn_pf_check_var(p, rest) < 0 || sn_pf_check_value(p, "value", value) < 0)
		return -1;
	return add_op(p, kind, force, rest, value);
}

/* "VAR KEY:VALUE" of merge. */
static int parse_merge(struct sn_pf_parser *p, bool force, char *rest)
{
	char *kv = rest;

	while (*kv && !sn_pf_is_blank(*kv))
		kv++;
	if (*kv)
		*kv++ = '\0';
	kv = sn_strtrim(kv);
	if (sn_pf_check_var(p, rest) < 0)
		return -1;
	if (!*kv)
		return PERR(p, "expected \"merge VAR KEY:VALUE\" (e.g. merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True)");
	if (sn_pf_check_kv(p, kv) < 0)
		return -1;
	return add_op(p, SN_OP_MERGE, force, rest, kv);
}

static int parse_unset(struct sn_pf_parser *p, bool force, char *rest)
{
	const char *c;

	for (c = rest; *c; c++) {
		if (sn_pf_is_blank(*c))
			return PERR(p, "expected \"unset VAR\" with one variable per line");
	}
	if (sn_pf_check_var(p, rest) < 0)
		return -1;
	return add_op(p, SN_OP_UNSET, force, rest, NULL);
}

static int parse_op(struct sn_pf_parser *p, const char *word, size_t n,
		    bool force, char *rest)
{
	const char *verb = force ? "force set" : "set";

	rest = sn_strtrim(rest);
	if (sn_pf_word_is(word, n, "set"))
		return parse_assignment(p, SN_OP_SET, force, verb, rest);
	if (sn_pf_word_is(word, n, "default"))
		return parse_assignment(p, SN_OP_DEFAULT, false, "default", rest);
	if (sn_pf_word_is(word, n, "merge"))
		return parse_merge(p, force, rest);
	return parse_unset(p, force, rest);
}

int sn_pf_profile_line(struct sn_pf_parser *p, char *line)
{
	size_t n = sn_pf_word_len(line);
	char *rest = line + n;

	if (sn_pf_word_is(line, n, "description")) {
		return sn_pf_text_once(p, "profile", p->profile->name,
				       "description", rest,
				       &p->profile->description);
	}
	if (sn_pf_word_is(line, n, "force")) {
		char *verb = (char *)sn_pf_skip_blanks(rest);
		size_t vn = sn_pf_word_len(verb);

		if (sn_pf_word_is(verb, vn, "default"))
			return PERR(p, "\"force default\" is contradictory: default never overrides the user; use \"force set\"");
		if (!(sn_pf_word_is(verb, vn, "set") ||
		      sn_pf_word_is(verb, vn, "merge") ||
		      sn_pf_word_is(verb, vn, "unset")) ||
		    !sn_pf_is_blank(verb[vn]))
			return PERR(p, "expected \"force set VAR=VALUE\", \"force merge VAR KEY:VALUE\" or \"force unset VAR\"");
		return parse_op(p, verb, vn, true, verb + vn);
	}
	if (sn_pf_word_is(line, n, "set") || sn_pf_word_is(line, n, "default") ||
	    sn_pf_word_is(line, n, "merge") || sn_pf_word_is(line, n, "unset"))
		return parse_op(p, line, n, false, rest);
	return sn_pf_unknown(p, line, "profile", p->profile->name,
			     PROFILE_DIRECTIVES);
}

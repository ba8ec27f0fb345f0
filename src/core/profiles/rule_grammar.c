/* SPDX-License-Identifier: MIT */
/*
 * The [rule NAME] section grammar of nccl-profiles.conf(5): level,
 * message and "when" conditions (evaluated by rules.c).
 */
#include <stdlib.h>
#include <string.h>

#include "profiles/profile_syntax.h"
#include "base/strutil.h"

#define RULE_DIRECTIVES "level, message, when"
#define WHEN_SYNTAX "\"when VAR[,VAR...] = V1[|V2...]\", \"!= V1[|V2...]\", \"has KEY:VALUE\", \"set\" or \"unset\""

/* Splits S at SEP into a new array of trimmed, non-empty strings. */
static int split_list(struct sn_pf_parser *p, char *s, char sep,
		      const char *what, char ***out, size_t *n_out)
{
	char **items = NULL;
	size_t n = 0;
	char *next;

	do {
		char **grown;

		next = strchr(s, sep);
		if (next)
			*next++ = '\0';
		s = sn_strtrim(s);
		if (!*s) {
			PERR(p, "empty %s in the list: separate them with a single '%c'",
			     what, sep);
			goto fail;
		}
		grown = sn_pf_grow(items, n, sizeof(*items));
		if (!grown || !(grown[n] = strdup(s))) {
			items = grown ? grown : items;
			sn_pf_oom(p);
			goto fail;
		}
		items = grown;
		n++;
		s = next;
	} while (s);
	*out = items;
	*n_out = n;
	return 0;
fail:
	while (n > 0)
		free(items[--n]);
	free(items);
	return -1;
}

void sn_rule_cond_free(struct sn_rule_cond *c)
{
	size_t i;

	for (i = 0; i < c->n_vars; i++)
		free(c->vars[i]);
	free(c->vars);
	for (i = 0; i < c->n_values; i++)
		free(c->values[i]);
	free(c->values);
}

static int parse_when(struct sn_pf_parser *p, char *rest)
{
	struct sn_rule_cond cond = { 0 };
	struct sn_rule_cond *conds;
	char *vars = (char *)sn_pf_skip_blanks(rest);
	char *op = vars;
	char *arg;
	size_t n, i;

	while ((*op >= 'A' && *op <= 'Z') || (*op >= 'a' && *op <= 'z') ||
	       (*op >= '0' && *op <= '9') || *op == '_' || *op == ',' ||
	       sn_pf_is_blank(*op)) {
		/* A blank ends the list unless more names follow a comma. */
		if (sn_pf_is_blank(*op) && op[-1] != ',' &&
		    *sn_pf_skip_blanks(op) != ',')
			break;
		op++;
	}
	if (op == vars)
		return PERR(p, "expected " WHEN_SYNTAX);
	arg = (char *)sn_pf_skip_blanks(op);
	if (arg[0] == '!' && arg[1] == '=') {
		cond.kind = SN_COND_NE;
		arg += 2;
	} else if (arg[0] == '=') {
		cond.kind = SN_COND_EQ;
		arg += 1;
	} else {
		n = sn_pf_word_len(arg);
		if (sn_pf_word_is(arg, n, "has"))
			cond.kind = SN_COND_HAS;
		else if (sn_pf_word_is(arg, n, "set"))
			cond.kind = SN_COND_SET;
		else if (sn_pf_word_is(arg, n, "unset"))
			cond.kind = SN_COND_UNSET;
		else
			return PERR(p, "expected " WHEN_SYNTAX);
		arg += n;
		if (*arg && !sn_pf_is_blank(*arg))
			return PERR(p, "expected " WHEN_SYNTAX);
	}
	*op = '\0';
	arg = sn_strtrim(arg);
	if (split_list(p, vars, ',', "variable name", &cond.vars,
		       &cond.n_vars) < 0)
		return -1;
	for (i = 0; i < cond.n_vars; i++) {
		if (sn_pf_check_var(p, cond.vars[i]) < 0)
			goto fail;
	}
	switch (cond.kind) {
	case SN_COND_EQ:
	case SN_COND_NE:
		if (!*arg) {
			PERR(p, "missing value after \"%s\": write V1[|V2...]",
			     cond.kind == SN_COND_EQ ? "=" : "!=");
			goto fail;
		}
		if (sn_pf_check_value(p, "value", arg) < 0 ||
		    split_list(p, arg, '|', "value", &cond.values,
			       &cond.n_values) < 0)
			goto fail;
		break;
	case SN_COND_HAS:
		if (!*arg) {
			PERR(p, "expected \"has KEY:VALUE\" (e.g. has expandable_segments:True)");
			goto fail;
		}
		if (sn_pf_check_kv(p, arg) < 0)
			goto fail;
		cond.values = malloc(sizeof(*cond.values));
		if (!cond.values || !(cond.values[0] = strdup(arg))) {
			sn_pf_oom(p);
			goto fail;
		}
		cond.n_values = 1;
		break;
	case SN_COND_SET:
	case SN_COND_UNSET:
		if (*arg) {
			PERR(p, "unexpected text after \"%s\": write \"when VAR[,VAR...] %s\"",
			     cond.kind == SN_COND_SET ? "set" : "unset",
			     cond.kind == SN_COND_SET ? "set" : "unset");
			goto fail;
		}
		break;
	}
	conds = sn_pf_grow(p->rule->conds, p->rule->n_conds, sizeof(*conds));
	if (!conds) {
		sn_pf_oom(p);
		goto fail;
	}
	p->rule->conds = conds;
	conds[p->rule->n_conds++] = cond;
	return 0;
fail:
	sn_rule_cond_free(&cond);
	return -1;
}

int sn_pf_rule_line(struct sn_pf_parser *p, char *line)
{
	size_t n = sn_pf_word_len(line);
	char *rest = line + n;
	char *text;

	if (sn_pf_word_is(line, n, "level")) {
		if (p->rule_has_level)
			return PERR(p, "rule \"%s\" already has a level: give one",
				    p->rule->name);
		text = sn_pf_key_value(p, "level", rest);
		if (!text)
			return -1;
		if (strcmp(text, "warning") == 0)
			p->rule->level = SN_RULE_WARNING;
		else if (strcmp(text, "error") == 0)
			p->rule->level = SN_RULE_ERROR;
		else
			return PERR(p, "unknown level: use \"level = warning\" or \"level = error\"");
		p->rule_has_level = true;
		return 0;
	}
	if (sn_pf_word_is(line, n, "message")) {
		return sn_pf_text_once(p, "rule", p->rule->name, "message",
				       rest, &p->rule->message);
	}
	if (sn_pf_word_is(line, n, "when"))
		return parse_when(p, rest);
	return sn_pf_unknown(p, line, "rule", p->rule->name, RULE_DIRECTIVES);
}

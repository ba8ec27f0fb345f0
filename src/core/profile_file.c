/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options.h"
#include "profile_file.h"
#include "strutil.h"

#define PROFILE_DIRECTIVES "description, set, default, merge, unset, force"
#define RULE_DIRECTIVES "level, message, when"
#define WHEN_SYNTAX "\"when VAR[,VAR...] = V1[|V2...]\", \"!= V1[|V2...]\", \"has KEY:VALUE\", \"set\" or \"unset\""

/* Parser state; SET is built in place and freed whole on any error. */
struct parser {
	struct sn_profile_set *set;
	const char *path;
	unsigned int line;
	struct sn_profile *profile;	/* current section, or NULL */
	struct sn_rule *rule;
	bool rule_has_level;
	struct sn_error *err;
};

#define PERR(p, ...) parse_error((p), __VA_ARGS__)

static int parse_error(struct parser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int parse_error(struct parser *p, const char *fmt, ...)
{
	char detail[SN_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	sn_error_set(p->err, "%s:%u: %s", p->path, p->line, detail);
	return -1;
}

static void *grow(void *array, size_t n, size_t size)
{
	/* Grows by one element; N is the current count. */
	return realloc(array, (n + 1) * size);
}

static int oom(struct parser *p)
{
	return PERR(p, "out of memory");
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* ---- small lexical helpers ------------------------------------------ */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static const char *skip_blanks(const char *s)
{
	while (is_blank(*s))
		s++;
	return s;
}

/* Length of the leading [a-z_] word (directive names are lower case). */
static size_t word_len(const char *s)
{
	size_t n = 0;

	while ((s[n] >= 'a' && s[n] <= 'z') || s[n] == '_' ||
	       (s[n] >= 'A' && s[n] <= 'Z'))
		n++;
	return n;
}

static bool word_is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && strncmp(s, word, n) == 0;
}

static int check_value(struct parser *p, const char *what, const char *value)
{
	if (strlen(value) >= SN_VALUE_MAX)
		return PERR(p, "%s is too long: at most %d bytes",
			    what, SN_VALUE_MAX - 1);
	if (sn_str_has_control(value))
		return PERR(p, "%s contains a control character: use printable text",
			    what);
	return 0;
}

static int check_var(struct parser *p, const char *var)
{
	char shown[64];

	sn_str_printable(shown, sizeof(shown), var);
	if (!*var)
		return PERR(p, "missing variable name");
	if (strlen(var) >= SN_VAR_NAME_MAX)
		return PERR(p, "variable name \"%s\" is too long: at most %d characters",
			    shown, SN_VAR_NAME_MAX - 1);
	if (!sn_env_name_valid(var))
		return PERR(p, "invalid variable name \"%s\": use letters, digits and '_', not starting with a digit",
			    shown);
	return 0;
}

/* KEY:VALUE of a merge or "has": no spaces, no ',' anywhere, KEY non-empty. */
static int check_kv(struct parser *p, const char *kv)
{
	const char *colon = strchr(kv, ':');
	char shown[80];
	const char *c;

	sn_str_printable(shown, sizeof(shown), kv);
	if (!colon || colon == kv || colon[1] == '\0')
		return PERR(p, "expected KEY:VALUE, got \"%s\" (e.g. expandable_segments:True)",
			    shown);
	for (c = kv; *c; c++) {
		if (*c == ',' || is_blank(*c) || (*c == ':' && c > colon))
			return PERR(p, "\"%s\" is not a single KEY:VALUE: no spaces, commas or second ':'",
				    shown);
	}
	return check_value(p, "KEY:VALUE", kv);
}

/* ---- profile sections ----------------------------------------------- */

static bool merge_key_eq(const char *a, const char *b)
{
	size_t na = strcspn(a, ":");

	return na == strcspn(b, ":") && strncmp(a, b, na) == 0;
}

static int check_duplicate_op(struct parser *p, const struct sn_env_op *op)
{
	const struct sn_profile *prof = p->profile;
	size_t i;

	for (i = 0; i < prof->n_ops; i++) {
		const struct sn_env_op *o = &prof->ops[i];

		if (strcmp(o->var, op->var) != 0)
			continue;
		if (o->kind == SN_OP_MERGE && op->kind == SN_OP_MERGE) {
			if (!merge_key_eq(o->value, op->value))
				continue;
			return PERR(p, "profile \"%s\" already merges key \"%.*s\" into %s (line %u): give each key once",
				    prof->name, (int)strcspn(op->value, ":"),
				    op->value, op->var, o->line);
		}
		return PERR(p, "profile \"%s\" already has a line for %s (line %u): give one operation per variable",
			    prof->name, op->var, o->line);
	}
	return 0;
}

static int add_op(struct parser *p, enum sn_op_kind kind, bool force,
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
	ops = grow(prof->ops, prof->n_ops, sizeof(*ops));
	if (!ops)
		return oom(p);
	prof->ops = ops;
	op.var = strdup(var);
	op.value = dup_or_null(value);
	if (!op.var || (value && !op.value)) {
		free(op.var);
		free(op.value);
		return oom(p);
	}
	prof->ops[prof->n_ops++] = op;
	return 0;
}

/* "VAR=VALUE" of set/default; REST is modified. */
static int parse_assignment(struct parser *p, enum sn_op_kind kind, bool force,
			    const char *verb, char *rest)
{
	char *eq = strchr(rest, '=');
	char *value;

	if (!eq)
		return PERR(p, "expected \"%s VAR=VALUE\"", verb);
	*eq = '\0';
	value = sn_strtrim(eq + 1);
	sn_strtrim(rest);
	if (check_var(p, rest) < 0 || check_value(p, "value", value) < 0)
		return -1;
	return add_op(p, kind, force, rest, value);
}

/* "VAR KEY:VALUE" of merge. */
static int parse_merge(struct parser *p, bool force, char *rest)
{
	char *kv = rest;

	while (*kv && !is_blank(*kv))
		kv++;
	if (*kv)
		*kv++ = '\0';
	kv = sn_strtrim(kv);
	if (check_var(p, rest) < 0)
		return -1;
	if (!*kv)
		return PERR(p, "expected \"merge VAR KEY:VALUE\" (e.g. merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True)");
	if (check_kv(p, kv) < 0)
		return -1;
	return add_op(p, SN_OP_MERGE, force, rest, kv);
}

static int parse_unset(struct parser *p, bool force, char *rest)
{
	const char *c;

	for (c = rest; *c; c++) {
		if (is_blank(*c))
			return PERR(p, "expected \"unset VAR\" with one variable per line");
	}
	if (check_var(p, rest) < 0)
		return -1;
	return add_op(p, SN_OP_UNSET, force, rest, NULL);
}

static int parse_op(struct parser *p, const char *word, size_t n, bool force,
		    char *rest)
{
	const char *verb = force ? "force set" : "set";

	rest = sn_strtrim(rest);
	if (word_is(word, n, "set"))
		return parse_assignment(p, SN_OP_SET, force, verb, rest);
	if (word_is(word, n, "default"))
		return parse_assignment(p, SN_OP_DEFAULT, false, "default", rest);
	if (word_is(word, n, "merge"))
		return parse_merge(p, force, rest);
	return parse_unset(p, force, rest);
}

/* "= TEXT" after a key word; returns the text or NULL after an error. */
static char *key_value(struct parser *p, const char *key, char *rest)
{
	rest = (char *)skip_blanks(rest);
	if (*rest != '=') {
		PERR(p, "expected \"%s = TEXT\"", key);
		return NULL;
	}
	rest = sn_strtrim(rest + 1);
	if (!*rest) {
		PERR(p, "empty %s: write \"%s = TEXT\"", key, key);
		return NULL;
	}
	if (check_value(p, key, rest) < 0)
		return NULL;
	return rest;
}

static int profile_line(struct parser *p, char *line)
{
	size_t n = word_len(line);
	char *rest = line + n;
	char shown[40];
	char *text;

	if (word_is(line, n, "description")) {
		if (p->profile->description)
			return PERR(p, "profile \"%s\" already has a description: give one",
				    p->profile->name);
		text = key_value(p, "description", rest);
		if (!text)
			return -1;
		p->profile->description = strdup(text);
		return p->profile->description ? 0 : oom(p);
	}
	if (word_is(line, n, "force")) {
		char *verb = (char *)skip_blanks(rest);
		size_t vn = word_len(verb);

		if (word_is(verb, vn, "default"))
			return PERR(p, "\"force default\" is contradictory: default never overrides the user; use \"force set\"");
		if (!(word_is(verb, vn, "set") || word_is(verb, vn, "merge") ||
		      word_is(verb, vn, "unset")) || !is_blank(verb[vn]))
			return PERR(p, "expected \"force set VAR=VALUE\", \"force merge VAR KEY:VALUE\" or \"force unset VAR\"");
		return parse_op(p, verb, vn, true, verb + vn);
	}
	if (word_is(line, n, "set") || word_is(line, n, "default") ||
	    word_is(line, n, "merge") || word_is(line, n, "unset"))
		return parse_op(p, line, n, false, rest);
	sn_str_printable(shown, sizeof(shown), line);
	shown[strcspn(shown, " \t=")] = '\0';
	return PERR(p, "unknown directive \"%s\" in [profile %s] (valid: " PROFILE_DIRECTIVES ")",
		    shown, p->profile->name);
}

/* ---- rule sections -------------------------------------------------- */

/* Splits S at SEP into a new array of trimmed, non-empty strings. */
static int split_list(struct parser *p, char *s, char sep, const char *what,
		      char ***out, size_t *n_out)
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
		grown = grow(items, n, sizeof(*items));
		if (!grown || !(grown[n] = strdup(s))) {
			items = grown ? grown : items;
			oom(p);
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

static void free_cond(struct sn_rule_cond *c)
{
	size_t i;

	for (i = 0; i < c->n_vars; i++)
		free(c->vars[i]);
	free(c->vars);
	for (i = 0; i < c->n_values; i++)
		free(c->values[i]);
	free(c->values);
}

static int parse_when(struct parser *p, char *rest)
{
	struct sn_rule_cond cond = { 0 };
	struct sn_rule_cond *conds;
	char *vars = (char *)skip_blanks(rest);
	char *op = vars;
	char *arg;
	size_t n, i;

	while ((*op >= 'A' && *op <= 'Z') || (*op >= 'a' && *op <= 'z') ||
	       (*op >= '0' && *op <= '9') || *op == '_' || *op == ',' ||
	       is_blank(*op)) {
		/* A blank ends the list unless more names follow a comma. */
		if (is_blank(*op) && op[-1] != ',' &&
		    *skip_blanks(op) != ',')
			break;
		op++;
	}
	if (op == vars)
		return PERR(p, "expected " WHEN_SYNTAX);
	arg = (char *)skip_blanks(op);
	if (arg[0] == '!' && arg[1] == '=') {
		cond.kind = SN_COND_NE;
		arg += 2;
	} else if (arg[0] == '=') {
		cond.kind = SN_COND_EQ;
		arg += 1;
	} else {
		n = word_len(arg);
		if (word_is(arg, n, "has"))
			cond.kind = SN_COND_HAS;
		else if (word_is(arg, n, "set"))
			cond.kind = SN_COND_SET;
		else if (word_is(arg, n, "unset"))
			cond.kind = SN_COND_UNSET;
		else
			return PERR(p, "expected " WHEN_SYNTAX);
		arg += n;
		if (*arg && !is_blank(*arg))
			return PERR(p, "expected " WHEN_SYNTAX);
	}
	*op = '\0';
	arg = sn_strtrim(arg);
	if (split_list(p, vars, ',', "variable name", &cond.vars,
		       &cond.n_vars) < 0)
		return -1;
	for (i = 0; i < cond.n_vars; i++) {
		if (check_var(p, cond.vars[i]) < 0)
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
		if (check_value(p, "value", arg) < 0 ||
		    split_list(p, arg, '|', "value", &cond.values,
			       &cond.n_values) < 0)
			goto fail;
		break;
	case SN_COND_HAS:
		if (!*arg) {
			PERR(p, "expected \"has KEY:VALUE\" (e.g. has expandable_segments:True)");
			goto fail;
		}
		if (check_kv(p, arg) < 0)
			goto fail;
		cond.values = malloc(sizeof(*cond.values));
		if (!cond.values || !(cond.values[0] = strdup(arg))) {
			oom(p);
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
	conds = grow(p->rule->conds, p->rule->n_conds, sizeof(*conds));
	if (!conds) {
		oom(p);
		goto fail;
	}
	p->rule->conds = conds;
	conds[p->rule->n_conds++] = cond;
	return 0;
fail:
	free_cond(&cond);
	return -1;
}

static int rule_line(struct parser *p, char *line)
{
	size_t n = word_len(line);
	char *rest = line + n;
	char shown[40];
	char *text;

	if (word_is(line, n, "level")) {
		if (p->rule_has_level)
			return PERR(p, "rule \"%s\" already has a level: give one",
				    p->rule->name);
		text = key_value(p, "level", rest);
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
	if (word_is(line, n, "message")) {
		if (p->rule->message)
			return PERR(p, "rule \"%s\" already has a message: give one",
				    p->rule->name);
		text = key_value(p, "message", rest);
		if (!text)
			return -1;
		p->rule->message = strdup(text);
		return p->rule->message ? 0 : oom(p);
	}
	if (word_is(line, n, "when"))
		return parse_when(p, rest);
	sn_str_printable(shown, sizeof(shown), line);
	shown[strcspn(shown, " \t=")] = '\0';
	return PERR(p, "unknown directive \"%s\" in [rule %s] (valid: " RULE_DIRECTIVES ")",
		    shown, p->rule->name);
}

/* ---- sections ------------------------------------------------------- */

/* Checks the section just ended; P->line is moved to its header. */
static int finish_section(struct parser *p)
{
	unsigned int line = p->line;
	int rc = 0;

	if (p->profile && p->profile->n_ops == 0) {
		p->line = p->profile->line;
		rc = PERR(p, "profile \"%s\" has no settings: add set, default, merge or unset lines",
			  p->profile->name);
	} else if (p->rule && !p->rule->message) {
		p->line = p->rule->line;
		rc = PERR(p, "rule \"%s\" has no message: add \"message = TEXT\"",
			  p->rule->name);
	} else if (p->rule && p->rule->n_conds == 0) {
		p->line = p->rule->line;
		rc = PERR(p, "rule \"%s\" has no condition: add at least one \"when\" line",
			  p->rule->name);
	}
	p->line = line;
	p->profile = NULL;
	p->rule = NULL;
	p->rule_has_level = false;
	return rc;
}

static int section_header(struct parser *p, char *line)
{
	size_t len = strlen(line);
	struct sn_profile_set *set = p->set;
	char shown[80];
	char *kind, *name;
	size_t i, n;

	sn_str_printable(shown, sizeof(shown), line);
	if (finish_section(p) < 0)
		return -1;
	if (line[len - 1] != ']')
		return PERR(p, "malformed section header \"%s\": use [profile NAME] or [rule NAME]",
			    shown);
	line[len - 1] = '\0';
	kind = sn_strtrim(line + 1);
	n = word_len(kind);
	name = (char *)skip_blanks(kind + n);
	if (!(word_is(kind, n, "profile") || word_is(kind, n, "rule")) ||
	    name == kind + n || !*name)
		return PERR(p, "malformed section header \"%s\": use [profile NAME] or [rule NAME]",
			    shown);
	kind[n] = '\0';
	if (!sn_profile_name_valid(name)) {
		sn_str_printable(shown, sizeof(shown), name);
		return PERR(p, "invalid %s name \"%s\": use up to %d letters, digits, '.', '_' and '-', starting with a letter or digit",
			    kind, shown, SN_PROFILE_NAME_MAX - 1);
	}
	if (kind[0] == 'p') {
		struct sn_profile *profiles;

		if (strcmp(name, "list") == 0 || strcmp(name, "none") == 0)
			return PERR(p, "\"%s\" is reserved (--nccl-profile=%s): choose another profile name",
				    name, name);
		for (i = 0; i < set->n_profiles; i++) {
			if (strcmp(set->profiles[i].name, name) == 0)
				return PERR(p, "profile \"%s\" is already defined at line %u: rename one",
					    name, set->profiles[i].line);
		}
		profiles = grow(set->profiles, set->n_profiles,
				sizeof(*profiles));
		if (!profiles)
			return oom(p);
		set->profiles = profiles;
		p->profile = &profiles[set->n_profiles];
		memset(p->profile, 0, sizeof(*p->profile));
		p->profile->line = p->line;
		p->profile->name = strdup(name);
		if (!p->profile->name)
			return oom(p);
		set->n_profiles++;
	} else {
		struct sn_rule *rules;

		for (i = 0; i < set->n_rules; i++) {
			if (strcmp(set->rules[i].name, name) == 0)
				return PERR(p, "rule \"%s\" is already defined at line %u: rename one",
					    name, set->rules[i].line);
		}
		rules = grow(set->rules, set->n_rules, sizeof(*rules));
		if (!rules)
			return oom(p);
		set->rules = rules;
		p->rule = &rules[set->n_rules];
		memset(p->rule, 0, sizeof(*p->rule));
		p->rule->line = p->line;
		p->rule->level = SN_RULE_WARNING;
		p->rule->name = strdup(name);
		if (!p->rule->name)
			return oom(p);
		set->n_rules++;
	}
	return 0;
}

static int parse_line(struct parser *p, char *line)
{
	char shown[40];

	line = sn_strtrim(line);
	if (!*line || *line == '#')
		return 0;
	if (*line == '[')
		return section_header(p, line);
	if (p->profile)
		return profile_line(p, line);
	if (p->rule)
		return rule_line(p, line);
	sn_str_printable(shown, sizeof(shown), line);
	return PERR(p, "\"%s\" is outside any section: start one with [profile NAME] or [rule NAME]",
		    shown);
}

int sn_profile_set_parse(struct sn_profile_set *set, const char *text,
			 const char *path, struct sn_error *err)
{
	struct parser p = { .set = set, .path = path, .err = err };
	const char *cursor = text;
	char *line = NULL;

	memset(set, 0, sizeof(*set));
	set->path = strdup(path);
	if (!set->path) {
		sn_error_set(err, "%s: out of memory", path);
		return -1;
	}
	while (*cursor) {
		size_t n = strcspn(cursor, "\n");

		p.line++;
		line = strndup(cursor, n);
		if (!line) {
			oom(&p);
			goto fail;
		}
		if (parse_line(&p, line) < 0)
			goto fail;
		free(line);
		line = NULL;
		cursor += n;
		if (*cursor == '\n')
			cursor++;
	}
	if (finish_section(&p) < 0)
		goto fail;
	return 0;
fail:
	free(line);
	sn_profile_set_free(set);
	return -1;
}

int sn_profile_set_load(struct sn_profile_set *set, const char *path,
			struct sn_error *err)
{
	struct stat st;
	char *text = NULL;
	ssize_t got;
	size_t len = 0;
	int fd, rc = -1;

	memset(set, 0, sizeof(*set));
	/* O_NONBLOCK: a FIFO must not hang srun; it is refused below. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		int e = errno;

		/* srun reads the file as the user: it must be world-readable. */
		sn_error_set(err, "%s: cannot open profile file: %s (%s)",
			     path, strerror(e),
			     e == EACCES ? "make it readable by every user: chmod a+r"
					 : "set profiles= in plugstack.conf");
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		sn_error_set(err, "%s: cannot stat profile file: %s", path,
			     strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		sn_error_set(err, "%s: %s, not a regular file (set profiles= in plugstack.conf to the profile file)",
			     path, S_ISDIR(st.st_mode) ? "is a directory"
						       : "is a special file");
		goto out;
	}
	/* The file decides what every job's environment holds. */
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		sn_error_set(err, "%s: owned by uid %u, not root: the profile file must belong to root (chown root %s)",
			     path, (unsigned int)st.st_uid, path);
		goto out;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		sn_error_set(err, "%s: is writable by group/others; run chmod go-w %s",
			     path, path);
		goto out;
	}
	if (st.st_size > SN_PROFILE_FILE_MAX_BYTES) {
		sn_error_set(err, "%s: profile file is larger than %d bytes: split off what is not needed",
			     path, SN_PROFILE_FILE_MAX_BYTES);
		goto out;
	}
	text = malloc(SN_PROFILE_FILE_MAX_BYTES + 2);
	if (!text) {
		sn_error_set(err, "%s: out of memory", path);
		goto out;
	}
	/* Read to EOF: the size may change under us; the cap still holds. */
	while (len <= SN_PROFILE_FILE_MAX_BYTES) {
		got = read(fd, text + len, SN_PROFILE_FILE_MAX_BYTES + 1 - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			sn_error_set(err, "%s: cannot read profile file: %s",
				     path, strerror(errno));
			goto out;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	if (len > SN_PROFILE_FILE_MAX_BYTES) {
		sn_error_set(err, "%s: profile file is larger than %d bytes: split off what is not needed",
			     path, SN_PROFILE_FILE_MAX_BYTES);
		goto out;
	}
	text[len] = '\0';
	if (memchr(text, '\0', len)) {
		unsigned int line = 1;
		const char *c;

		for (c = text; *c; c++)
			line += *c == '\n';
		sn_error_set(err, "%s:%u: NUL byte in the profile file: it must be text",
			     path, line);
		goto out;
	}
	rc = sn_profile_set_parse(set, text, path, err);
out:
	free(text);
	close(fd);
	return rc;
}

void sn_profile_set_free(struct sn_profile_set *set)
{
	size_t i, j;

	if (!set)
		return;
	for (i = 0; i < set->n_profiles; i++) {
		struct sn_profile *prof = &set->profiles[i];

		for (j = 0; j < prof->n_ops; j++) {
			free(prof->ops[j].var);
			free(prof->ops[j].value);
		}
		free(prof->ops);
		free(prof->name);
		free(prof->description);
	}
	free(set->profiles);
	for (i = 0; i < set->n_rules; i++) {
		struct sn_rule *rule = &set->rules[i];

		for (j = 0; j < rule->n_conds; j++)
			free_cond(&rule->conds[j]);
		free(rule->conds);
		free(rule->name);
		free(rule->message);
	}
	free(set->rules);
	free(set->path);
	memset(set, 0, sizeof(*set));
}

const struct sn_profile *sn_profile_set_find(const struct sn_profile_set *set,
					     const char *name)
{
	size_t i;

	for (i = 0; i < set->n_profiles; i++) {
		if (strcmp(set->profiles[i].name, name) == 0)
			return &set->profiles[i];
	}
	return NULL;
}

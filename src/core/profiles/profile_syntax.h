/* SPDX-License-Identifier: MIT */
/*
 * Internal to the profile file parser: the state shared by the loader and
 * section driver (profile_file.c), the profile grammar (profile_grammar.c)
 * and the rule grammar (rule_grammar.c), and the lexical checks they share
 * (profile_syntax.c).  Not used outside those four files.
 */
#ifndef SN_PROFILE_SYNTAX_H
#define SN_PROFILE_SYNTAX_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "base/error.h"
#include "profiles/profile_file.h"

/* Parser state; SET is built in place and freed whole on any error. */
struct sn_pf_parser {
	struct sn_profile_set *set;
	const char *path;
	unsigned int line;
	struct sn_profile *profile;	/* current section, or NULL */
	struct sn_rule *rule;
	bool rule_has_level;
	struct sn_error *err;
};

/* Sets "PATH:LINE: message"; returns -1. */
int sn_pf_error(struct sn_pf_parser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define PERR(p, ...) sn_pf_error((p), __VA_ARGS__)
int sn_pf_oom(struct sn_pf_parser *p);
/* ARRAY grown by one element of SIZE; N is the current count. */
void *sn_pf_grow(void *array, size_t n, size_t size);

static inline bool sn_pf_is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static inline const char *sn_pf_skip_blanks(const char *s)
{
	while (sn_pf_is_blank(*s))
		s++;
	return s;
}

/* Length of the leading [A-Za-z_] word (directive names are lower case). */
static inline size_t sn_pf_word_len(const char *s)
{
	size_t n = 0;

	while ((s[n] >= 'a' && s[n] <= 'z') || s[n] == '_' ||
	       (s[n] >= 'A' && s[n] <= 'Z'))
		n++;
	return n;
}

static inline bool sn_pf_word_is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && strncmp(s, word, n) == 0;
}

/* Checks of a value, a variable name and a KEY:VALUE; -1 after PERR. */
int sn_pf_check_value(struct sn_pf_parser *p, const char *what,
		      const char *value);
int sn_pf_check_var(struct sn_pf_parser *p, const char *var);
int sn_pf_check_kv(struct sn_pf_parser *p, const char *kv);
/* "= TEXT" after a key word; returns the text or NULL after an error. */
char *sn_pf_key_value(struct sn_pf_parser *p, const char *key, char *rest);
/*
 * "KEY = TEXT" that may appear once per section: the text (strdup'd) goes
 * to *FIELD; a second one is an error naming SECTION NAME.
 */
int sn_pf_text_once(struct sn_pf_parser *p, const char *section,
		    const char *name, const char *key, char *rest, char **field);
/* "unknown directive" for LINE in [SECTION NAME], listing VALID. */
int sn_pf_unknown(struct sn_pf_parser *p, const char *line,
		  const char *section, const char *name, const char *valid);

/* One line inside a [profile] (profile_grammar.c) or [rule] section. */
int sn_pf_profile_line(struct sn_pf_parser *p, char *line);
int sn_pf_rule_line(struct sn_pf_parser *p, char *line);
void sn_rule_cond_free(struct sn_rule_cond *c);

#endif

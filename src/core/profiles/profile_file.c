/* SPDX-License-Identifier: MIT */
/*
 * nccl-profiles.conf(5): reading the file (ownership, mode, size), the
 * line and section driver, and the parsed set's lifetime.  The grammars
 * of the two section kinds are in profile_grammar.c and rule_grammar.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/options.h"
#include "profiles/profile_syntax.h"
#include "base/strutil.h"

/* Checks the section just ended; P->line is moved to its header. */
static int finish_section(struct sn_pf_parser *p)
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

static int section_header(struct sn_pf_parser *p, char *line)
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
	n = sn_pf_word_len(kind);
	name = (char *)sn_pf_skip_blanks(kind + n);
	if (!(sn_pf_word_is(kind, n, "profile") || sn_pf_word_is(kind, n, "rule")) ||
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
		profiles = sn_pf_grow(set->profiles, set->n_profiles,
				      sizeof(*profiles));
		if (!profiles)
			return sn_pf_oom(p);
		set->profiles = profiles;
		p->profile = &profiles[set->n_profiles];
		memset(p->profile, 0, sizeof(*p->profile));
		p->profile->line = p->line;
		p->profile->name = strdup(name);
		if (!p->profile->name)
			return sn_pf_oom(p);
		set->n_profiles++;
	} else {
		struct sn_rule *rules;

		for (i = 0; i < set->n_rules; i++) {
			if (strcmp(set->rules[i].name, name) == 0)
				return PERR(p, "rule \"%s\" is already defined at line %u: rename one",
					    name, set->rules[i].line);
		}
		rules = sn_pf_grow(set->rules, set->n_rules, sizeof(*rules));
		if (!rules)
			return sn_pf_oom(p);
		set->rules = rules;
		p->rule = &rules[set->n_rules];
		memset(p->rule, 0, sizeof(*p->rule));
		p->rule->line = p->line;
		p->rule->level = SN_RULE_WARNING;
		p->rule->name = strdup(name);
		if (!p->rule->name)
			return sn_pf_oom(p);
		set->n_rules++;
	}
	return 0;
}

static int parse_line(struct sn_pf_parser *p, char *line)
{
	char shown[40];

	line = sn_strtrim(line);
	if (!*line || *line == '#')
		return 0;
	if (*line == '[')
		return section_header(p, line);
	if (p->profile)
		return sn_pf_profile_line(p, line);
	if (p->rule)
		return sn_pf_rule_line(p, line);
	sn_str_printable(shown, sizeof(shown), line);
	return PERR(p, "\"%s\" is outside any section: start one with [profile NAME] or [rule NAME]",
		    shown);
}

int sn_profile_set_parse(struct sn_profile_set *set, const char *text,
			 const char *path, struct sn_error *err)
{
	struct sn_pf_parser p = { .set = set, .path = path, .err = err };
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
			sn_pf_oom(&p);
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
			sn_rule_cond_free(&rule->conds[j]);
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

/* SPDX-License-Identifier: MIT */
/*
 * Docs as tests: every profile and rule snippet the documentation shows
 * (a code block of README.md, of docs/NAME.md or of a man page holding a
 * "[profile NAME]" or "[rule NAME]" line) is read from the docs at run
 * time and loaded by the real parser (sn_profile_set_parse), so an
 * example an admin copies into nccl-profiles.conf is one spank-nccl
 * accepts.  Beyond parsing:
 *   - every section of a snippet is one the parser kept (no header lost);
 *   - every profile resolves on its own and applies to an empty
 *     environment;
 *   - every rule can fire: an environment built from its own "when"
 *     lines matches it (a rule that can never match warns nobody);
 *   - nccl-profiles.conf(5)'s worked example ("With VAR=VALUE in the
 *     user's environment, --nccl-profile=NAME gives the tasks: ...")
 *     gives exactly the variables it shows, with the man page's own
 *     profile.
 * The files are found under SN_SRCDIR (the source tree), so the test
 * runs from any build directory.
 */
#include "core_testutil.h"

#include <errno.h>
#include <glob.h>
#include <stdbool.h>
#include <stdlib.h>

#include "profiles/env_apply.h"
#include "profiles/profile_file.h"
#include "profiles/resolve.h"
#include "profiles/rules.h"

#ifndef SN_SRCDIR
#error "SN_SRCDIR must name the source tree"
#endif

#define MAX_SNIPPETS 64

struct snippet {
	char where[600];	/* "docs/profiles.md" */
	unsigned int line;	/* of its opening fence or .nf */
	char *text;		/* blank lines up to LINE, then the block */
	size_t n_headers;	/* [profile ...] and [rule ...] lines */
};

static struct snippet snippets[MAX_SNIPPETS];
static size_t n_snippets;

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text;
	size_t n;

	if (!f)
		fail_msg("%s: %s", path, strerror(errno));
	text = calloc(1, 4 * 1024 * 1024 + 1);
	assert_non_null(text);
	n = fread(text, 1, 4 * 1024 * 1024, f);
	assert_int_equal(ferror(f), 0);
	fclose(f);
	text[n] = '\0';
	return text;
}

/* Appends S to the growing string *BUF. */
static void append(char **buf, const char *s)
{
	size_t old = *buf ? strlen(*buf) : 0;
	char *p = realloc(*buf, old + strlen(s) + 2);

	assert_non_null(p);
	memcpy(p + old, s, strlen(s));
	p[old + strlen(s)] = '\n';
	p[old + strlen(s) + 1] = '\0';
	*buf = p;
}

/* Man page escapes to text, in place (the ones example blocks use). */
static void deroff(char *s)
{
	char *r = s, *w = s;

	while (*r) {
		if (r[0] == '\\' && r[1] == '-') {
			*w++ = '-';
			r += 2;
		} else if (r[0] == '\\' && r[1] == 'e') {
			*w++ = '\\';
			r += 2;
		} else if (r[0] == '\\' && r[1] == '&') {
			r += 2;
		} else if (r[0] == '\\' && r[1] == '(' && r[2] && r[3]) {
			*w++ = '-';	/* \(em, \(en */
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

static const char *skip_blanks(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static bool is_header(const char *line)
{
	line = skip_blanks(line);
	return strncmp(line, "[profile ", 9) == 0 ||
	       strncmp(line, "[rule ", 6) == 0;
}

static bool block_start(const char *line, bool man)
{
	if (!man)
		return strncmp(skip_blanks(line), "```", 3) == 0;
	return strncmp(line, ".nf", 3) == 0 || strncmp(line, ".EX", 3) == 0;
}

static bool block_end(const char *line, bool man)
{
	if (!man)
		return strncmp(skip_blanks(line), "```", 3) == 0;
	return strncmp(line, ".fi", 3) == 0 || strncmp(line, ".EE", 3) == 0;
}

/* Collects the snippets of one file; REL is its name in messages. */
static void scan_file(const char *path, const char *rel)
{
	char *text = read_all(path), *line, *save = NULL, *block = NULL;
	size_t len = strlen(rel) - (strstr(rel, ".in") &&
				    strcmp(strstr(rel, ".in"), ".in") == 0 ? 3 : 0);
	/* a man page: NAME.N, or its template NAME.N.in */
	bool man = len > 2 && rel[len - 2] == '.' && rel[len - 1] >= '0' &&
		   rel[len - 1] <= '9';
	bool in_block = false;
	unsigned int lineno = 0, start = 0;
	size_t headers = 0;

	/* strtok_r would merge empty lines: walk the text by hand. */
	for (line = text; line; line = save) {
		save = strchr(line, '\n');
		if (save)
			*save++ = '\0';
		lineno++;
		if (!in_block) {
			if (block_start(line, man)) {
				unsigned int i;

				in_block = true;
				start = lineno;
				headers = 0;
				free(block);
				block = NULL;
				/* Blank lines up to the fence: the parser's
				 * line numbers are the file's. */
				for (i = 0; i < lineno; i++)
					append(&block, "");
			}
			continue;
		}
		if (block_end(line, man)) {
			in_block = false;
			if (headers > 0) {
				struct snippet *s = &snippets[n_snippets++];

				assert_true(n_snippets <= MAX_SNIPPETS);
				snprintf(s->where, sizeof(s->where), "%s", rel);
				s->line = start;
				s->text = block;
				s->n_headers = headers;
				block = NULL;
			}
			continue;
		}
		if (man) {
			if (line[0] == '.' || line[0] == '\'')
				line[0] = '\0';	/* a request in the block */
			deroff(line);
		}
		if (is_header(line))
			headers++;
		append(&block, line);
	}
	free(block);
	free(text);
}

static int collect(void **state)
{
	static const char *const patterns[] = {
		"README.md", "docs/*.md", "man/*.[0-9]", "man/*.[0-9].in",
	};
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		char pat[512];
		glob_t g;

		snprintf(pat, sizeof(pat), "%s/%s", SN_SRCDIR, patterns[i]);
		if (glob(pat, 0, NULL, &g) != 0)
			continue;
		for (j = 0; j < g.gl_pathc; j++)
			scan_file(g.gl_pathv[j],
				  g.gl_pathv[j] + strlen(SN_SRCDIR) + 1);
		globfree(&g);
	}
	return 0;
}

static int release(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < n_snippets; i++)
		free(snippets[i].text);
	return 0;
}

/* The places the docs teach the file format all show snippets. */
static void test_snippets_found(void **state)
{
	static const char *const files[] = {
		"docs/profiles.md", "docs/admin-guide.md",
		"man/nccl-profiles.conf.5",
	};
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		bool found = false;

		for (j = 0; j < n_snippets; j++)
			found |= strcmp(snippets[j].where, files[i]) == 0;
		if (!found)
			fail_msg("no [profile]/[rule] snippet found in %s "
				 "(moved? update test_doc_profiles.c)",
				 files[i]);
	}
	for (j = 0; j < n_snippets; j++)
		print_message("snippet %s:%u: %zu section(s)\n",
			      snippets[j].where, snippets[j].line,
			      snippets[j].n_headers);
}

/* An environment in which every "when" line of RULE holds, if one can
 * be built from the rule itself. */
static void env_for_rule(const struct sn_rule *rule, struct fake_env *f)
{
	size_t i;

	fake_env_init(f, NULL);
	for (i = 0; i < rule->n_conds; i++) {
		const struct sn_rule_cond *c = &rule->conds[i];

		switch (c->kind) {
		case SN_COND_EQ:
		case SN_COND_HAS:
			assert_int_equal(sn_envlist_set(&f->list, c->vars[0],
							c->values[0]), 0);
			break;
		case SN_COND_SET:
			if (!sn_envlist_get(&f->list, c->vars[0]))
				assert_int_equal(sn_envlist_set(&f->list,
								c->vars[0],
								"1"), 0);
			break;
		case SN_COND_NE:
		case SN_COND_UNSET:
			break;	/* unset satisfies both */
		}
	}
}

static void check_snippet(const struct snippet *s)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };
	size_t i;

	if (sn_profile_set_parse(&set, s->text, s->where, &err) != 0)
		fail_msg("the snippet at %s:%u does not load: %s", s->where,
			 s->line, err.msg);
	if (set.n_profiles + set.n_rules != s->n_headers)
		fail_msg("%s:%u: %zu section headers, the parser kept %zu "
			 "profiles and %zu rules", s->where, s->line,
			 s->n_headers, set.n_profiles, set.n_rules);
	for (i = 0; i < set.n_profiles; i++) {
		struct sn_profile_request req = { .given = true, .count = 1 };
		struct sn_plan plan;
		struct sn_apply_report report;
		struct fake_env f;

		snprintf(req.names[0], sizeof(req.names[0]), "%s",
			 set.profiles[i].name);
		if (sn_resolve(&set, NULL, &req, &plan, &err) != 0)
			fail_msg("%s:%u: profile %s does not resolve: %s",
				 s->where, s->line, set.profiles[i].name,
				 err.msg);
		fake_env_init(&f, NULL);
		memset(&report, 0, sizeof(report));
		if (sn_plan_apply(&plan, &f.env, &report, &err) != 0)
			fail_msg("%s:%u: profile %s does not apply: %s",
				 s->where, s->line, set.profiles[i].name,
				 err.msg);
		assert_true(report.n_set + report.n_unset > 0 ||
			    plan.n_ops > 0);
		sn_apply_report_free(&report);
		fake_env_free(&f);
		sn_plan_free(&plan);
	}
	for (i = 0; i < set.n_rules; i++) {
		struct fake_env f;

		env_for_rule(&set.rules[i], &f);
		if (!sn_rule_matches(&set.rules[i], &f.env))
			fail_msg("%s:%u: rule %s never fires, even where its "
				 "own \"when\" lines hold", s->where, s->line,
				 set.rules[i].name);
		fake_env_free(&f);
	}
	sn_profile_set_free(&set);
}

static void test_snippets_load(void **state)
{
	size_t i;

	(void)state;
	assert_true(n_snippets > 0);
	for (i = 0; i < n_snippets; i++)
		check_snippet(&snippets[i]);
}

/* Word of LINE that starts with PREFIX (up to a blank), or NULL. */
static char *word_after(const char *line, const char *prefix, char *buf,
			size_t len)
{
	const char *p = strstr(line, prefix);
	size_t n;

	if (!p)
		return NULL;
	p += strlen(prefix);
	n = strcspn(p, " \t");
	if (n == 0 || n >= len)
		return NULL;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return buf;
}

/*
 * nccl-profiles.conf(5), EXAMPLES:
 *   With
 *   .B VAR=VALUE
 *   in the user's environment,
 *   .B \-\-nccl\-profile=NAME
 *   gives the tasks:
 *   .nf  (VAR=VALUE lines)  .fi
 */
static void test_worked_example(void **state)
{
	const char *rel = "man/nccl-profiles.conf.5";
	char path[512], *text, *lines[4096], *line, *next;
	char user[SN_VALUE_MAX], name[128], *eq;
	const struct snippet *example = NULL;
	struct sn_profile_request req = { .given = true, .count = 1 };
	struct sn_profile_set set;
	struct sn_plan plan;
	struct sn_apply_report report;
	struct sn_error err = { "" };
	struct fake_env f;
	char *initial[2] = { NULL, NULL };
	size_t n = 0, i, at = 0, shown = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/%s", SN_SRCDIR, rel);
	text = read_all(path);
	for (line = text; line && n < 4096; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		deroff(line);
		lines[n++] = line;
	}
	for (i = 0; i < n && !at; i++)
		if (strstr(lines[i], "gives the tasks:"))
			at = i;
	if (!at)
		fail_msg("%s: the worked example (\"gives the tasks:\") is gone; "
			 "update test_doc_profiles.c", rel);
	user[0] = name[0] = '\0';
	for (i = at > 6 ? at - 6 : 0; i < at; i++) {
		if (!word_after(lines[i], "--nccl-profile=", name, sizeof(name)) &&
		    strncmp(lines[i], ".B ", 3) == 0 && strchr(lines[i], '=') &&
		    strstr(lines[i + 1], "user's environment"))
			snprintf(user, sizeof(user), "%s", lines[i] + 3);
	}
	if (!user[0] || !name[0])
		fail_msg("%s: cannot read the worked example's input near line "
			 "%zu (user value \"%s\", profile \"%s\")", rel, at + 1,
			 user, name);
	for (i = 0; i < n_snippets; i++)
		if (strcmp(snippets[i].where, rel) == 0)
			example = &snippets[i];
	assert_non_null(example);
	if (sn_profile_set_parse(&set, example->text, example->where, &err))
		fail_msg("%s", err.msg);
	snprintf(req.names[0], sizeof(req.names[0]), "%s", name);
	if (sn_resolve(&set, NULL, &req, &plan, &err) != 0)
		fail_msg("%s: --nccl-profile=%s: %s", rel, name, err.msg);
	initial[0] = user;
	fake_env_init(&f, initial);
	memset(&report, 0, sizeof(report));
	if (sn_plan_apply(&plan, &f.env, &report, &err) != 0)
		fail_msg("%s", err.msg);
	/* The block after "gives the tasks:": exactly these variables. */
	for (i = at + 1; i < n && strncmp(lines[i], ".nf", 3) != 0; i++)
		;
	for (i++; i < n && strncmp(lines[i], ".fi", 3) != 0; i++) {
		char var[SN_VAR_NAME_MAX];
		const char *got;

		if (lines[i][0] == '.' || !(eq = strchr(lines[i], '=')))
			continue;
		snprintf(var, sizeof(var), "%.*s", (int)(eq - lines[i]),
			 lines[i]);
		got = sn_envlist_get(&f.list, var);
		if (!got || strcmp(got, eq + 1) != 0)
			fail_msg("%s: the man page shows %s, the parser and "
				 "env_apply give %s=%s", rel, lines[i], var,
				 got ? got : "(unset)");
		shown++;
	}
	if (shown == 0)
		fail_msg("%s: no VAR=VALUE lines after \"gives the tasks:\"",
			 rel);
	if (f.list.n != shown)
		fail_msg("%s: the man page shows %zu variables, the tasks get "
			 "%zu", rel, shown, f.list.n);
	sn_apply_report_free(&report);
	fake_env_free(&f);
	sn_plan_free(&plan);
	sn_profile_set_free(&set);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_snippets_found),
		cmocka_unit_test(test_snippets_load),
		cmocka_unit_test(test_worked_example),
	};

	return cmocka_run_group_tests(tests, collect, release);
}

/* SPDX-License-Identifier: MIT */
/*
 * Hostile values for the profile file as text: the parser's table of
 * malformed files, accepted oddities applied byte for byte, thousands of
 * profiles and a million lines.
 * Each case checks two things: the message says what was wrong (key words
 * asserted), and nothing was half-kept (the output structure is zeroed or
 * untouched, the environment is as it was).  Shared helpers:
 * hostile_testutil.h.
 */
#include "hostile_testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "profiles/env_apply.h"
#include "profiles/profile_file.h"
#include "profiles/resolve.h"
#include "base/strutil.h"

/* ---- the profile file as text --------------------------------------- */

struct text_case {
	const char *name;
	const char *head;	/* text before the filler */
	char fill;		/* filler byte, 0: none */
	size_t fill_len;
	const char *tail;	/* text after the filler */
	unsigned int line;	/* 0: must be accepted */
	const char *words[4];
};

static const struct text_case text_cases[] = {
	/* Overlong. */
	{ "profile-name-64", "[profile ", 'a', 64, "]\nset A=1\n", 1,
	  { "invalid profile name", "up to 63", NULL } },
	{ "profile-name-63", "[profile ", 'a', 63, "]\nset A=1\n", 0, { NULL } },
	{ "profile-name-10k", "[profile ", 'a', 10000, "]\nset A=1\n", 1,
	  { "invalid profile name", "...", NULL } },
	{ "var-name-128", "[profile p]\nset ", 'A', 128, "=1\n", 2,
	  { "variable name", "too long", "at most 127" } },
	{ "var-name-127", "[profile p]\nset ", 'A', 127, "=1\n", 0, { NULL } },
	{ "value-4096", "[profile p]\nset A=", 'v', 4096, "\n", 2,
	  { "value is too long", "at most 4095", NULL } },
	{ "value-4095", "[profile p]\nset A=", 'v', 4095, "\n", 0, { NULL } },
	{ "description-100k", "[profile p]\ndescription = ", 'd', 100000,
	  "\nset A=1\n", 2, { "description is too long", NULL } },
	{ "merge-value-5000", "[profile p]\nmerge A k:", 'v', 5000, "\n", 2,
	  { "too long", NULL } },
	{ "rule-values-10k", "[rule r]\nlevel = warning\nmessage = m\nwhen A = ",
	  'x', 10000, "\n", 4, { "too long", NULL } },
	/* Bytes that are not text. */
	{ "non-utf8-profile-name", "[profile \xff\xfe]\nset A=1\n", 0, 0, "",
	  1, { "invalid profile name", NULL } },
	{ "non-utf8-var-name", "[profile p]\nset A\xe9=1\n", 0, 0, "", 2,
	  { "invalid variable name", NULL } },
	{ "non-utf8-rule-var", "[rule r]\nlevel = warning\nmessage = m\nwhen \xc3\xa9 set\n",
	  0, 0, "", 4, { "expected \"when VAR", NULL } },
	/* Values are opaque bytes (NCCL reads bytes): accepted as given. */
	{ "non-utf8-value", "[profile p]\nset A=\xff\xfe\x80\n", 0, 0, "", 0,
	  { NULL } },
	{ "escape-in-description", "[profile p]\ndescription = \x1b[2Jgone\nset A=1\n",
	  0, 0, "", 2, { "description contains a control character", NULL } },
	{ "cr-in-value", "[profile p]\nset A=x\ry\n", 0, 0, "", 2,
	  { "control character", NULL } },
	{ "del-in-message", "[rule r]\nlevel = warning\nmessage = a\x7f b\nwhen A set\n",
	  0, 0, "", 3, { "control character", NULL } },
	{ "bell-in-merge", "[profile p]\nmerge A k:\a\n", 0, 0, "", 2,
	  { "control character", NULL } },
	/* '=' and newlines inside values. */
	{ "newline-splits-value", "[profile p]\nset A=x\ny\n", 0, 0, "", 3,
	  { "unknown directive \"y\"", "[profile p]", NULL } },
	{ "equals-in-value", "[profile p]\nset A=b=c==\n", 0, 0, "", 0,
	  { NULL } },
	{ "equals-in-unset", "[profile p]\nunset A=B\n", 0, 0, "", 2,
	  { "invalid variable name \"A=B\"", NULL } },
	{ "equals-in-merge", "[profile p]\nmerge A k=v\n", 0, 0, "", 2,
	  { "expected KEY:VALUE", "k=v", NULL } },
	{ "comma-in-merge", "[profile p]\nmerge A k:v,w:z\n", 0, 0, "", 2,
	  { "not a single KEY:VALUE", NULL } },
	/* Empty lists and empty parts. */
	{ "empty-profile", "[profile p]\n", 0, 0, "", 1,
	  { "profile \"p\" has no settings", NULL } },
	{ "empty-profile-before-next", "[profile p]\n[profile q]\nset A=1\n", 0,
	  0, "", 1, { "has no settings", NULL } },
	{ "empty-section-name", "[profile]\n", 0, 0, "", 1,
	  { "malformed section header", NULL } },
	{ "empty-description", "[profile p]\ndescription =\nset A=1\n", 0, 0,
	  "", 2, { "empty description", NULL } },
	{ "empty-var", "[profile p]\nset =1\n", 0, 0, "", 2,
	  { "missing variable name", NULL } },
	{ "empty-when-values", "[rule r]\nlevel = warning\nmessage = m\nwhen A = \n",
	  0, 0, "", 4, { "missing value", NULL } },
	{ "empty-when-alternative", "[rule r]\nlevel = warning\nmessage = m\nwhen A = x||y\n",
	  0, 0, "", 4, { "empty value in the list", "'|'", NULL } },
	{ "empty-when-var", "[rule r]\nlevel = warning\nmessage = m\nwhen A,,B = x\n",
	  0, 0, "", 4, { "empty variable name in the list", NULL } },
	{ "rule-without-when", "[rule r]\nlevel = warning\nmessage = m\n", 0, 0,
	  "", 1, { "has no condition", NULL } },
	{ "rule-without-message", "[rule r]\nlevel = warning\nwhen A set\n", 0,
	  0, "", 1, { "has no message", NULL } },
	/* Duplicates. */
	{ "duplicate-profile", "[profile p]\nset A=1\n[profile p]\nset B=1\n",
	  0, 0, "", 3, { "profile \"p\" is already defined at line 1", NULL } },
	{ "duplicate-rule", "[rule r]\nmessage = m\nwhen A set\n[rule r]\nmessage = m\nwhen A set\n",
	  0, 0, "", 4, { "rule \"r\" is already defined at line 1", NULL } },
	{ "duplicate-description", "[profile p]\ndescription = a\ndescription = b\nset A=1\n",
	  0, 0, "", 3, { "already has a description", NULL } },
	{ "duplicate-level", "[rule r]\nlevel = warning\nlevel = error\nmessage = m\nwhen A set\n",
	  0, 0, "", 3, { "already has a level", NULL } },
	{ "duplicate-message", "[rule r]\nmessage = m\nmessage = n\nwhen A set\n",
	  0, 0, "", 3, { "already has a message", NULL } },
	/* A good first profile is not kept when a later line is bad. */
	{ "bad-after-good", "[profile good]\nset A=1\n[profile bad]\nbogus\n",
	  0, 0, "", 4, { "unknown directive", NULL } },
};

static char *build_text(const struct text_case *c)
{
	size_t head = strlen(c->head), tail = strlen(c->tail);
	char *text = malloc(head + c->fill_len + tail + 1);

	assert_non_null(text);
	memcpy(text, c->head, head);
	memset(text + head, c->fill, c->fill_len);
	memcpy(text + head + c->fill_len, c->tail, tail + 1);
	return text;
}

static void test_profile_file_text(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(text_cases) / sizeof(text_cases[0]); i++) {
		const struct text_case *c = &text_cases[i];
		struct sn_profile_set set;
		struct sn_error err = { "" };
		char *text = build_text(c);
		char where[32];
		int rc = sn_profile_set_parse(&set, text, "h.conf", &err);

		free(text);
		if (c->line == 0) {
			if (rc != 0)
				fail_msg("%s: refused: %s", c->name, err.msg);
			assert_true(set.n_profiles + set.n_rules > 0);
			sn_profile_set_free(&set);
			continue;
		}
		if (rc != -1)
			fail_msg("%s: accepted", c->name);
		assert_true(all_zero(&set, sizeof(set)));
		snprintf(where, sizeof(where), "h.conf:%u: ", c->line);
		if (strncmp(err.msg, where, strlen(where)) != 0)
			fail_msg("%s: expected \"%s\" at the start of \"%s\"",
				 c->name, where, err.msg);
		assert_all_contained(err.msg, c->words);
		/* Messages are one line whatever the input held. */
		assert_true(!sn_str_has_control(err.msg));
	}
}

/* Accepted oddities reach the environment byte for byte. */
static void test_odd_values_applied_exactly(void **state)
{
	static const char text[] =
		"[profile p]\n"
		"set EQ=b=c==\n"
		"set BYTES=\xff\xfe\x80\n"
		"set TAB=a\tb\n"
		"set EMPTY=\n";
	struct sn_profile_set set;
	struct sn_profile_request none = { 0 }, req = { .given = true,
							.count = 1 };
	struct sn_plan plan;
	struct sn_apply_report report = { 0 };
	struct sn_error err = { "" };
	struct fake_env f;

	strcpy(req.names[0], "p");
	assert_int_equal(sn_profile_set_parse(&set, text, "h.conf", &err), 0);
	assert_int_equal(sn_resolve(&set, &none, &req, &plan, &err), 0);
	fake_env_init(&f, NULL);
	assert_int_equal(sn_plan_apply(&plan, &f.env, &report, &err), 0);
	assert_string_equal(sn_envlist_get(&f.list, "EQ"), "b=c==");
	assert_string_equal(sn_envlist_get(&f.list, "BYTES"), "\xff\xfe\x80");
	assert_string_equal(sn_envlist_get(&f.list, "TAB"), "a\tb");
	assert_string_equal(sn_envlist_get(&f.list, "EMPTY"), "");
	sn_apply_report_free(&report);
	sn_plan_free(&plan);
	fake_env_free(&f);
	sn_profile_set_free(&set);
}

/* ---- thousands of profiles ------------------------------------------ */

#define MANY 5000

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) +
	       (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static char *many_profiles_text(size_t n, const char *extra)
{
	size_t i, used = 0, cap = n * 96 + strlen(extra) + 1;
	char *text = malloc(cap);

	assert_non_null(text);
	for (i = 0; i < n; i++)
		used += (size_t)snprintf(text + used, cap - used,
					 "[profile prof-%05zu]\ndescription = number %zu\nset VAR_%zu=%zu\n",
					 i, i, i, i);
	snprintf(text + used, cap - used, "%s", extra);
	return text;
}

static void test_thousands_of_profiles(void **state)
{
	struct sn_profile_set set;
	struct sn_profile_request defaults = { .given = true, .count = 1 };
	struct sn_profile_request req = { .given = true };
	struct sn_plan plan;
	struct sn_error err = { "" };
	struct timespec t0;
	char names[4096], path[512];
	char *text = many_profiles_text(MANY, "");
	size_t i;
	double took;

	/* Parse and load from disk: well under a second natively; the
	 * bound leaves room for valgrind and sanitizers. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (sn_profile_set_parse(&set, text, "many.conf", &err) != 0)
		fail_msg("%s", err.msg);
	took = seconds_since(&t0);
	print_message("  %d profiles parsed in %.3f s\n", MANY, took);
	assert_true(took < 30.0);
	assert_int_equal(set.n_profiles, MANY);
	assert_non_null(sn_profile_set_find(&set, "prof-04999"));
	assert_null(sn_profile_set_find(&set, "prof-05000"));

	/* Resolve: a site default plus the last 32 profiles. */
	strcpy(defaults.names[0], "prof-00000");
	for (i = 0; i < SN_PROFILE_REQUEST_MAX; i++)
		snprintf(req.names[req.count++], SN_PROFILE_NAME_MAX,
			 "prof-%05zu", MANY - 1 - i);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (sn_resolve(&set, &defaults, &req, &plan, &err) != 0)
		fail_msg("%s", err.msg);
	print_message("  resolved 33 of them in %.3f s\n", seconds_since(&t0));
	assert_int_equal(plan.n_ops, SN_PROFILE_REQUEST_MAX + 1);
	sn_plan_free(&plan);

	/* An unknown name: the list of known names is cut, not overrun. */
	strcpy(req.names[0], "no-such-profile");
	assert_int_equal(sn_resolve(&set, &defaults, &req, &plan, &err), -1);
	assert_contains(err.msg, "unknown profile \"no-such-profile\"");
	assert_true(strlen(err.msg) < SN_ERROR_MAX);
	assert_true(all_zero(&plan, sizeof(plan)));
	sn_profile_names(&set, names, sizeof(names));
	assert_true(strlen(names) < sizeof(names));
	sn_profile_set_free(&set);

	tmp_path(path, sizeof(path), "many.conf");
	write_file(path, text, 0644);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (sn_profile_set_load(&set, path, &err) != 0)
		fail_msg("%s", err.msg);
	assert_true(seconds_since(&t0) < 30.0);
	assert_int_equal(set.n_profiles, MANY);
	sn_profile_set_free(&set);
	free(text);

	/* One duplicate at the very end throws away all 5000. */
	text = many_profiles_text(MANY, "[profile prof-00007]\nset X=1\n");
	assert_int_equal(sn_profile_set_parse(&set, text, "many.conf", &err), -1);
	assert_contains(err.msg, "many.conf:15001: profile \"prof-00007\" is already defined at line 22");
	assert_true(all_zero(&set, sizeof(set)));
	free(text);
}

/* A file of a million empty lines (the size limit): linear time, the
 * line number of what follows still right. */
static void test_million_lines(void **state)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };
	struct timespec t0;
	size_t n = SN_PROFILE_FILE_MAX_BYTES;
	char *text = malloc(n + 1);
	static const char tail[] = "[profile p]\nset A=1\n";
	double took;

	assert_non_null(text);
	memset(text, '\n', n);
	memcpy(text + n - strlen(tail), tail, strlen(tail) + 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (sn_profile_set_parse(&set, text, "lines.conf", &err) != 0)
		fail_msg("%s", err.msg);
	took = seconds_since(&t0);
	print_message("  %zu lines parsed in %.3f s\n", n - strlen(tail), took);
	assert_true(took < 30.0);
	assert_int_equal(set.n_profiles, 1);
	assert_int_equal(set.profiles[0].line, n - strlen(tail) + 1);
	sn_profile_set_free(&set);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile_file_text),
		cmocka_unit_test(test_odd_values_applied_exactly),
		cmocka_unit_test(test_thousands_of_profiles),
		cmocka_unit_test(test_million_lines),
	};

	return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}

/* SPDX-License-Identifier: MIT */
/*
 * Hostile values for what the user and the admin pass at run time:
 * --nccl-profile/--nccl-warmup, plugstack.conf arguments,
 * SPANK_NCCL_APPLIED, the helper's JSON, and an apply failing midway.
 * The profile file: test_hostile_file.c and test_hostile_text.c.
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

#include "profiles/applied.h"
#include "config/config.h"
#include "profiles/env_apply.h"
#include "config/options.h"
#include "profiles/profile_file.h"
#include "profiles/resolve.h"
#include "base/strutil.h"
#include "protocol/warmup_result.h"

/* ---- option values ---------------------------------------------------- */

struct option_case {
	bool warmup;		/* --nccl-warmup, else --nccl-profile */
	const char *value;
	char fill;		/* appended FILL_LEN times */
	size_t fill_len;
	const char *words[3];
};

static const struct option_case option_cases[] = {
	{ false, "", 0, 0, { "empty value", "list", NULL } },
	{ false, ",", 0, 0, { "empty profile name", NULL } },
	{ false, "a,,b", 0, 0, { "empty profile name", "single commas", NULL } },
	{ false, "a,", 0, 0, { "empty profile name", NULL } },
	{ false, " ", 0, 0, { "empty profile name", NULL } },
	{ false, "a,a", 0, 0, { "profile \"a\" is given twice", NULL } },
	{ false, "a, a", 0, 0, { "given twice", NULL } },
	{ false, "list,a", 0, 0, { "\"list\" must be given alone", NULL } },
	{ false, "a,none", 0, 0, { "\"none\" must be given alone", NULL } },
	{ false, "none,none", 0, 0, { "must be given alone", NULL } },
	{ false, "a=b", 0, 0, { "invalid profile name \"a=b\"", NULL } },
	{ false, "a\nb", 0, 0, { "invalid profile name \"a?b\"", NULL } },
	{ false, "a\rb", 0, 0, { "invalid profile name", NULL } },
	{ false, "\xff\xfe", 0, 0, { "invalid profile name", NULL } },
	{ false, "caf\xc3\xa9", 0, 0, { "invalid profile name", NULL } },
	{ false, "-a", 0, 0, { "invalid profile name", "starting with", NULL } },
	{ false, "../../etc/passwd", 0, 0, { "invalid profile name", NULL } },
	{ false, "a;rm -rf /", 0, 0, { "invalid profile name", NULL } },
	{ false, "", 'a', 64, { "too long", "at most 63", NULL } },
	{ false, "", 'a', 100000, { "too long", "...", NULL } },
	{ false, "x,", 'a', 5000, { "too long", NULL } },
	{ false, "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t,u,v,w,x,y,z,"
		 "aa,bb,cc,dd,ee,ff,gg", 0, 0, { "too many profiles", "32", NULL } },
	{ true, ",", 0, 0, { "empty word", NULL } },
	{ true, "comm,", 0, 0, { "empty word", NULL } },
	{ true, "fast", 0, 0, { "unknown word \"fast\"", "bandwidth", NULL } },
	{ true, "comm,check", 0, 0, { "two modes", NULL } },
	{ true, "comm=1", 0, 0, { "unknown word", NULL } },
	{ true, "comm\nbandwidth", 0, 0, { "unknown word \"comm?bandwidth\"", NULL } },
	{ true, "\xff", 0, 0, { "unknown word", NULL } },
	{ true, "", 'c', 100000, { "unknown word", "...", NULL } },
};

static void test_option_values(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(option_cases) / sizeof(option_cases[0]); i++) {
		const struct option_case *c = &option_cases[i];
		size_t len = strlen(c->value);
		char *value = malloc(len + c->fill_len + 1);
		struct sn_error err = { "" };
		int rc;

		assert_non_null(value);
		memcpy(value, c->value, len);
		memset(value + len, c->fill, c->fill_len);
		value[len + c->fill_len] = '\0';
		if (c->warmup) {
			struct sn_warmup_request req;

			memset(&req, 0xa5, sizeof(req));
			rc = sn_warmup_option_parse(value, &req, &err);
			if (rc != -1)
				fail_msg("case %zu: accepted", i);
			assert_true(all_zero(&req, sizeof(req)));
			assert_contains(err.msg, "--nccl-warmup: ");
		} else {
			struct sn_profile_request req;

			memset(&req, 0xa5, sizeof(req));
			rc = sn_profile_option_parse(value, &req, &err);
			if (rc != -1)
				fail_msg("case %zu: accepted", i);
			assert_true(all_zero(&req, sizeof(req)));
			assert_contains(err.msg, "--nccl-profile: ");
		}
		if (rc != -1)
			fail_msg("case %zu (\"%.20s\"): accepted", i, value);
		assert_all_contained(err.msg, c->words);
		assert_true(!sn_str_has_control(err.msg));
		assert_true(strlen(err.msg) < 400);
		free(value);
	}
}

/* ---- plugstack.conf arguments ---------------------------------------- */

struct config_case {
	const char *args[3];
	const char *words[3];
};

static const struct config_case config_cases[] = {
	{ { "profiles=relative.conf" }, { "absolute path", NULL } },
	{ { "profiles=" }, { "empty value", NULL } },
	{ { "profiles" }, { "expected KEY=VALUE", NULL } },
	{ { "=x" }, { "unknown key", NULL } },
	{ { "profiles=/a", "profiles=/b" }, { "given twice", NULL } },
	{ { "warmup_helper=/x\ny" }, { "control characters", NULL } },
	{ { "default_profiles=a,a" }, { "given twice", NULL } },
	{ { "default_profiles=a,,b" }, { "empty profile name", NULL } },
	{ { "default_profiles=a=b" }, { "invalid profile name", NULL } },
	{ { "warmup_timeout=0" }, { "between 1 and 540", NULL } },
	{ { "warmup_timeout=541" }, { "between 1 and 540", NULL } },
	{ { "warmup_timeout=-1" }, { "between 1 and 540", NULL } },
	{ { "warmup_timeout=99999999999999999999999" }, { "between 1 and 540", NULL } },
	{ { "warmup_timeout=1e3" }, { "between 1 and 540", NULL } },
	{ { "warmup_timeout=60s" }, { "between 1 and 540", NULL } },
	{ { "warmup_bytes=0" }, { "1K to 16G", NULL } },
	{ { "warmup_bytes=1T" }, { "1K to 16G", NULL } },
	{ { "warmup_bytes=18446744073709551617" }, { "1K to 16G", NULL } },
	{ { "warmup_min_busbw=nan" }, { "GB/s", NULL } },
	{ { "warmup_min_busbw=inf" }, { "GB/s", NULL } },
	{ { "warmup_min_busbw=-1" }, { "GB/s", NULL } },
	{ { "warmup_mode=fast" }, { "expected one of", NULL } },
	{ { "warmup_policy=ignore" }, { "warmup_policy", NULL } },
	/* A good argument before a bad one is not kept either. */
	{ { "warmup_timeout=30", "warmup_mode=fast" }, { "warmup_mode", NULL } },
};

static void test_config_arguments(void **state)
{
	size_t i;
	char *long_path = malloc(PATH_MAX + 64);

	assert_non_null(long_path);
	for (i = 0; i < sizeof(config_cases) / sizeof(config_cases[0]); i++) {
		const struct config_case *c = &config_cases[i];
		struct sn_config cfg, before;
		struct sn_error err = { "" };
		int argc = 0;

		while (argc < 3 && c->args[argc])
			argc++;
		sn_config_defaults(&cfg);
		before = cfg;
		if (sn_config_parse(&cfg, argc, (char *const *)c->args, &err) != -1)
			fail_msg("%s: accepted", c->args[0]);
		assert_memory_equal(&cfg, &before, sizeof(cfg));
		assert_contains(err.msg, "plugstack.conf argument");
		assert_all_contained(err.msg, c->words);
	}
	/* A path longer than PATH_MAX. */
	{
		struct sn_config cfg, before;
		struct sn_error err = { "" };
		char *argv[1] = { long_path };

		strcpy(long_path, "profiles=/");
		memset(long_path + 10, 'p', PATH_MAX + 10);
		long_path[PATH_MAX + 20] = '\0';
		sn_config_defaults(&cfg);
		before = cfg;
		assert_int_equal(sn_config_parse(&cfg, 1, argv, &err), -1);
		assert_memory_equal(&cfg, &before, sizeof(cfg));
		assert_contains(err.msg, "profiles");
		assert_true(strlen(err.msg) < SN_ERROR_MAX);
	}
	free(long_path);
}

/* ---- SPANK_NCCL_APPLIED (the user can edit it) ------------------------ */

static void test_applied_record(void **state)
{
	static const char *const bad[] = {
		"A=4E:-",		/* upper-case hex is not ours */
		"A=4:-",		/* odd number of digits */
		"A=00:-",		/* a NUL byte */
		"A=-",			/* no AFTER */
		"=-:-",			/* no variable */
		"A=-:-,",		/* trailing comma */
		"A=-:-,,B=-:-",		/* empty entry */
		"A=-:-:-",
		"A=zz:-",
		"A=-:0a0",
		NULL,
	};
	struct sn_applied a;
	struct sn_error err = { "" };
	char *many, *huge;
	size_t i, used = 0;

	for (i = 0; bad[i]; i++) {
		memset(&a, 0xa5, sizeof(a));
		if (sn_applied_decode(bad[i], &a, &err) != -1)
			fail_msg("\"%s\": accepted", bad[i]);
		assert_true(all_zero(&a, sizeof(a)));
		assert_contains(err.msg, "SPANK_NCCL_APPLIED is malformed near");
	}
	/* More entries than we ever write. */
	many = malloc((SN_APPLIED_MAX_ENTRIES + 1) * 16);
	assert_non_null(many);
	for (i = 0; i <= SN_APPLIED_MAX_ENTRIES; i++)
		used += (size_t)sprintf(many + used, "%sV%zu=-:31", i ? "," : "",
					i);
	assert_int_equal(sn_applied_decode(many, &a, &err), -1);
	assert_true(all_zero(&a, sizeof(a)));
	free(many);
	/* A value longer than any profile value. */
	huge = malloc(2 * SN_VALUE_MAX + 16);
	assert_non_null(huge);
	strcpy(huge, "A=-:");
	for (i = 0; i < SN_VALUE_MAX; i++)
		memcpy(huge + 4 + 2 * i, "41", 2);
	huge[4 + 2 * SN_VALUE_MAX] = '\0';
	assert_int_equal(sn_applied_decode(huge, &a, &err), -1);
	assert_true(all_zero(&a, sizeof(a)));
	assert_true(strlen(err.msg) < 200);
	free(huge);
}

/* ---- the helper's JSON (runs as the user) ----------------------------- */

static void test_helper_result(void **state)
{
	static const char head[] = "{\"version\":1,\"status\":\"ok\",\"exit_code\":0,";
	struct sn_warmup_result r;
	struct sn_error err = { "" };
	char *text = malloc(SN_RESULT_MAX_BYTES + 64);
	size_t n, i;

	assert_non_null(text);
	/* Deep nesting within the size limit: refused, not recursed into. */
	n = (size_t)sprintf(text, "%s\"x\":", head);
	for (i = 0; i < 60000; i++)
		text[n++] = '[';
	assert_int_equal(sn_warmup_result_parse(text, n, &r, &err), -1);
	assert_contains(err.msg, "nccl-warmup result");
	/* Over the size limit. */
	memset(text, ' ', SN_RESULT_MAX_BYTES + 1);
	assert_int_equal(sn_warmup_result_parse(text, SN_RESULT_MAX_BYTES + 1,
						&r, &err), -1);
	assert_contains(err.msg, "more than the limit of 65536");
	/* More GPUs than a node has. */
	n = (size_t)sprintf(text, "%s\"gpus\":[", head);
	for (i = 0; i <= SN_RESULT_MAX_GPUS; i++)
		n += (size_t)sprintf(text + n, "%s{\"index\":%zu,\"busid\":\"0000:%02zx:00.0\"}",
				     i ? "," : "", i, i);
	n += (size_t)sprintf(text + n, "]}");
	assert_int_equal(sn_warmup_result_parse(text, n, &r, &err), -1);
	assert_contains(err.msg, "more than 64 GPUs");
	/* Duplicate keys, trailing garbage, NULs, lone surrogates. */
	sprintf(text, "%s\"exit_code\":9}", head);
	assert_int_equal(sn_warmup_result_parse(text, strlen(text), &r, &err), -1);
	assert_contains(err.msg, "duplicate key \"exit_code\"");
	n = (size_t)sprintf(text, "%s\"x\":1}", head);
	memcpy(text + n, "\0{\"exit_code\":1}", 17);
	n += 17;
	assert_int_equal(sn_warmup_result_parse(text, n, &r, &err), -1);
	assert_contains(err.msg, "NUL byte");
	sprintf(text, "%s\"message\":\"a\\u0000b\"}", head);
	assert_int_equal(sn_warmup_result_parse(text, strlen(text), &r, &err), -1);
	assert_contains(err.msg, "not allowed");
	sprintf(text, "%s\"message\":\"a\\ud800b\"}", head);
	assert_int_equal(sn_warmup_result_parse(text, strlen(text), &r, &err), -1);
	assert_contains(err.msg, "surrogate");
	sprintf(text, "{\"version\":1,\"status\":\"ok\",\"exit_code\":1e999}");
	assert_int_equal(sn_warmup_result_parse(text, strlen(text), &r, &err), -1);
	assert_contains(err.msg, "out of range");
	/* A message longer than its field: refused, not cut silently. */
	n = (size_t)sprintf(text, "%s\"message\":\"", head);
	memset(text + n, 'm', 5000);
	n += 5000;
	n += (size_t)sprintf(text + n, "\"}");
	assert_int_equal(sn_warmup_result_parse(text, n, &r, &err), -1);
	assert_contains(err.msg, "\"message\" is longer than 1023 bytes");
	free(text);
}

/* ---- nothing half-applied --------------------------------------------- */

/* A write failing at any point of the apply leaves the environment as it
 * was, whatever the plan holds. */
static void test_apply_rollback_every_step(void **state)
{
	static const char text[] =
		"[profile p]\n"
		"set A=1\n"
		"force set USER_SET=forced\n"
		"merge LIST k:v\n"
		"force unset GONE\n"
		"default D=d\n";
	static char *const start[] = {
		"USER_SET=mine", "LIST=a:b", "GONE=here", NULL,
	};
	struct sn_profile_set set;
	struct sn_profile_request none = { 0 }, req = { .given = true,
							.count = 1 };
	struct sn_plan plan;
	struct sn_error err = { "" };
	char before[512], after[512];
	int fail;

	strcpy(req.names[0], "p");
	assert_int_equal(sn_profile_set_parse(&set, text, "h.conf", &err), 0);
	assert_int_equal(sn_resolve(&set, &none, &req, &plan, &err), 0);
	for (fail = 1; fail <= 5; fail++) {
		struct sn_apply_report report = { 0 };
		struct fake_env f;

		fake_env_init(&f, start);
		f.fail_write = fail;
		fake_env_dump(&f, before, sizeof(before));
		assert_int_equal(sn_plan_apply(&plan, &f.env, &report, &err), -1);
		fake_env_dump(&f, after, sizeof(after));
		assert_string_equal(after, before);
		sn_apply_report_free(&report);
		fake_env_free(&f);
	}
	sn_plan_free(&plan);
	sn_profile_set_free(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_option_values),
		cmocka_unit_test(test_config_arguments),
		cmocka_unit_test(test_applied_record),
		cmocka_unit_test(test_helper_result),
		cmocka_unit_test(test_apply_rollback_every_step),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

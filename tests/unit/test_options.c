/* SPDX-License-Identifier: MIT */
#include "core_testutil.h"

#include <limits.h>

#include "config/options.h"
#include "base/strutil.h"

static void test_profile_single_and_list(void **state)
{
	struct sn_profile_request req;
	struct sn_error err = { "" };

	assert_int_equal(sn_profile_option_parse("ppo-tree", &req, &err), 0);
	assert_true(req.given);
	assert_false(req.list);
	assert_false(req.none);
	assert_int_equal(req.count, 1);
	assert_string_equal(req.names[0], "ppo-tree");

	assert_int_equal(sn_profile_option_parse("a, b.c ,D_9", &req, &err), 0);
	assert_int_equal(req.count, 3);
	assert_string_equal(req.names[0], "a");
	assert_string_equal(req.names[1], "b.c");
	assert_string_equal(req.names[2], "D_9");
}

static void test_profile_list_none(void **state)
{
	struct sn_profile_request req;
	struct sn_error err = { "" };

	assert_int_equal(sn_profile_option_parse("list", &req, &err), 0);
	assert_true(req.list);
	assert_int_equal(req.count, 0);
	assert_int_equal(sn_profile_option_parse("none", &req, &err), 0);
	assert_true(req.none);
	assert_false(req.list);
	assert_int_equal(req.count, 0);
}

static void test_profile_max_names(void **state)
{
	struct sn_profile_request req;
	struct sn_error err = { "" };
	char value[SN_PROFILE_REQUEST_MAX * 8 + 16] = "";
	size_t used = 0;
	int i;

	for (i = 0; i < SN_PROFILE_REQUEST_MAX; i++)
		used += (size_t)sprintf(value + used, "%sp%d", i ? "," : "", i);
	assert_int_equal(sn_profile_option_parse(value, &req, &err), 0);
	assert_int_equal(req.count, SN_PROFILE_REQUEST_MAX);
	assert_string_equal(req.names[31], "p31");
	strcat(value, ",p99");
	assert_int_equal(sn_profile_option_parse(value, &req, &err), -1);
	assert_contains(err.msg, "too many profiles: at most 32");
	assert_int_equal(req.count, 0);
}

static void test_profile_name_length(void **state)
{
	struct sn_profile_request req;
	struct sn_error err = { "" };
	char name[200];

	memset(name, 'x', 63);
	name[63] = '\0';
	assert_int_equal(sn_profile_option_parse(name, &req, &err), 0);
	assert_string_equal(req.names[0], name);
	assert_true(sn_profile_name_valid(name));
	name[63] = 'x';
	name[64] = '\0';
	assert_false(sn_profile_name_valid(name));
	assert_int_equal(sn_profile_option_parse(name, &req, &err), -1);
	assert_contains(err.msg, "is too long: at most 63 characters");
	memset(name, 'y', 199);
	name[199] = '\0';
	assert_int_equal(sn_profile_option_parse(name, &req, &err), -1);
	assert_contains(err.msg, "is too long");
	assert_contains(err.msg, "...");
}

struct bad_case {
	const char *value;
	const char *expect;
};

static void test_profile_errors(void **state)
{
	static const struct bad_case cases[] = {
		{ "", "--nccl-profile: empty value: give profile names separated by commas, \"list\" or \"none\"" },
		{ NULL, "empty value" },
		/* Slurm's encoding of a missing value (options.c) */
		{ "(null)", "empty value" },
		{ "a,,b", "empty profile name in the list" },
		{ "a,", "empty profile name" },
		{ ",a", "empty profile name" },
		{ "a b", "--nccl-profile: invalid profile name \"a b\": use letters, digits, '.', '_' and '-'" },
		{ "-a", "invalid profile name \"-a\"" },
		{ ".hidden", "invalid profile name" },
		{ "a/b", "invalid profile name \"a/b\"" },
		{ "a;rm", "invalid profile name" },
		{ "caf\xc3\xa9", "invalid profile name" },
		{ "a\nb", "invalid profile name \"a?b\"" },
		{ "a,a", "profile \"a\" is given twice" },
		{ "list,a", "\"list\" must be given alone" },
		{ "a,list", "\"list\" must be given alone" },
		{ "none,a", "\"none\" must be given alone" },
		{ "a,none", "\"none\" must be given alone" },
		{ "list,none", "must be given alone" },
		{ "none,none", "\"none\" must be given alone" },
	};
	struct sn_profile_request req;
	struct sn_error err;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err.msg[0] = '\0';
		memset(&req, 0x5a, sizeof(req));
		if (sn_profile_option_parse(cases[i].value, &req, &err) != -1)
			fail_msg("accepted \"%s\"", cases[i].value);
		assert_contains(err.msg, "--nccl-profile: ");
		assert_contains(err.msg, cases[i].expect);
		assert_false(req.given);
		assert_int_equal(req.count, 0);
	}
}

static void test_profile_list_parse_for(void **state)
{
	struct sn_profile_request req;
	struct sn_error err = { "" };

	assert_int_equal(sn_profile_list_parse_for("a,b", &req, "X", &err), 0);
	assert_int_equal(req.count, 2);
	assert_int_equal(sn_profile_list_parse_for("a,,b", &req, "plugstack", &err), -1);
	assert_contains(err.msg, "plugstack: empty profile name");
	assert_not_contains(err.msg, "--nccl-profile");
}

static void test_warmup_bare(void **state)
{
	struct sn_warmup_request req;
	struct sn_error err = { "" };

	assert_int_equal(sn_warmup_option_parse(NULL, &req, &err), 0);
	assert_true(req.given);
	assert_int_equal(req.mode, SN_WARMUP_MODE_UNSET);
	assert_false(req.verbose);
	assert_int_equal(sn_warmup_option_parse("", &req, &err), 0);
	assert_true(req.given);
	assert_int_equal(req.mode, SN_WARMUP_MODE_UNSET);
	/* What an srun inside an "#SBATCH --nccl-warmup" job receives. */
	assert_int_equal(sn_warmup_option_parse("(null)", &req, &err), 0);
	assert_true(req.given);
	assert_int_equal(req.mode, SN_WARMUP_MODE_UNSET);
	assert_false(req.verbose);
	assert_false(req.fresh);
	assert_true(sn_option_value_absent(NULL));
	assert_true(sn_option_value_absent(""));
	assert_true(sn_option_value_absent("(null)"));
	assert_false(sn_option_value_absent("(null"));
	assert_false(sn_option_value_absent("null"));
	assert_false(sn_option_value_absent(" "));
}

static void test_warmup_modes(void **state)
{
	static const struct {
		const char *value;
		enum sn_warmup_mode mode;
		bool verbose;
		bool fresh;
	} cases[] = {
		{ "off", SN_WARMUP_MODE_OFF, false, false },
		{ "check", SN_WARMUP_MODE_CHECK, false, false },
		{ "comm", SN_WARMUP_MODE_COMM, false, false },
		{ "bandwidth", SN_WARMUP_MODE_BANDWIDTH, false, false },
		{ "BANDWIDTH", SN_WARMUP_MODE_BANDWIDTH, false, false },
		{ "comm,verbose", SN_WARMUP_MODE_COMM, true, false },
		{ "verbose,check", SN_WARMUP_MODE_CHECK, true, false },
		{ "verbose", SN_WARMUP_MODE_UNSET, true, false },
		{ " comm , verbose ", SN_WARMUP_MODE_COMM, true, false },
		{ "comm,comm", SN_WARMUP_MODE_COMM, false, false },
		{ "comm,fresh", SN_WARMUP_MODE_COMM, false, true },
		{ "fresh,verbose", SN_WARMUP_MODE_UNSET, true, true },
		{ "FRESH", SN_WARMUP_MODE_UNSET, false, true },
		{ "fabric", SN_WARMUP_MODE_FABRIC, false, false },
		{ "Fabric,verbose,fresh", SN_WARMUP_MODE_FABRIC, true, true },
	};
	struct sn_warmup_request req;
	struct sn_error err = { "" };
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (sn_warmup_option_parse(cases[i].value, &req, &err) != 0)
			fail_msg("rejected \"%s\": %s", cases[i].value, err.msg);
		assert_true(req.given);
		assert_int_equal(req.mode, cases[i].mode);
		assert_int_equal(req.verbose, cases[i].verbose);
		assert_int_equal(req.fresh, cases[i].fresh);
	}
}

static void test_warmup_errors(void **state)
{
	static const struct bad_case cases[] = {
		{ "fast", "--nccl-warmup: unknown word \"fast\": use one of off, check, comm, bandwidth, fabric, optionally followed by \",verbose\" and/or \",fresh\"" },
		{ "comm,bandwidth", "two modes, \"comm\" and \"bandwidth\"" },
		{ "fabric,comm", "two modes, \"fabric\" and \"comm\": give one of off, check, comm, bandwidth, fabric" },
		{ "comm,", "empty word" },
		{ ",comm", "empty word" },
		{ "comm,,verbose", "empty word" },
		{ "default", "unknown word \"default\"" },
		{ "comm=1", "unknown word \"comm=1\"" },
		{ "x\x01y", "unknown word \"x?y\"" },
		{ "(null),comm", "unknown word \"(null)\"" },
		{ "comm,(null)", "unknown word \"(null)\"" },
	};
	struct sn_warmup_request req;
	struct sn_error err;
	char longword[300];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err.msg[0] = '\0';
		memset(&req, 0x5a, sizeof(req));
		if (sn_warmup_option_parse(cases[i].value, &req, &err) != -1)
			fail_msg("accepted \"%s\"", cases[i].value);
		assert_contains(err.msg, cases[i].expect);
		assert_false(req.given);
	}
	memset(longword, 'c', sizeof(longword) - 1);
	longword[sizeof(longword) - 1] = '\0';
	assert_int_equal(sn_warmup_option_parse(longword, &req, &err), -1);
	assert_contains(err.msg, "unknown word");
}

static void test_warmup_nccl_path(void **state)
{
	static const char venv[] =
		"/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib";
	struct sn_warmup_request req;
	struct sn_error err = { "" };
	char value[4200];

	snprintf(value, sizeof(value), "comm,nccl=%s,verbose", venv);
	assert_int_equal(sn_warmup_option_parse(value, &req, &err), 0);
	assert_int_equal(req.mode, SN_WARMUP_MODE_COMM);
	assert_true(req.verbose);
	assert_string_equal(req.nccl, venv);
	/* Alone, last, any case of the key. */
	assert_int_equal(sn_warmup_option_parse("NCCL=/x/libnccl.so.2", &req,
						&err), 0);
	assert_string_equal(req.nccl, "/x/libnccl.so.2");
	assert_int_equal(req.mode, SN_WARMUP_MODE_UNSET);
	assert_int_equal(sn_warmup_option_parse("comm", &req, &err), 0);
	assert_string_equal(req.nccl, "");

	assert_int_equal(sn_warmup_option_parse("comm,nccl=lib/libnccl.so.2",
						&req, &err), -1);
	assert_contains(err.msg, "nccl= needs the absolute path");
	assert_int_equal(sn_warmup_option_parse("comm,nccl=", &req, &err), -1);
	assert_contains(err.msg, "nccl= needs the absolute path");
	assert_int_equal(sn_warmup_option_parse("nccl=/a\x01b", &req, &err),
			 -1);
	assert_contains(err.msg, "control characters");
	memset(value, 'a', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	memcpy(value, "nccl=/", 6);
	assert_int_equal(sn_warmup_option_parse(value, &req, &err), -1);
	assert_contains(err.msg, "at most 4095 characters");
}

static void test_warmup_mode_names(void **state)
{
	enum sn_warmup_mode m;

	for (m = SN_WARMUP_MODE_OFF; m <= SN_WARMUP_MODE_BANDWIDTH; m++)
		assert_int_equal(sn_warmup_mode_from_name(sn_warmup_mode_name(m)), m);
	assert_string_equal(sn_warmup_mode_name(SN_WARMUP_MODE_COMM), "comm");
	assert_string_equal(sn_warmup_mode_name(SN_WARMUP_MODE_UNSET), "default");
	assert_string_equal(sn_warmup_mode_name((enum sn_warmup_mode)42), "unknown");
	assert_int_equal(sn_warmup_mode_from_name("nope"), SN_WARMUP_MODE_UNSET);
	assert_int_equal(sn_warmup_mode_from_name("default"), SN_WARMUP_MODE_UNSET);
	assert_int_equal(sn_warmup_mode_from_name(NULL), SN_WARMUP_MODE_UNSET);
}

/* The table the parsers, --help and the docs (test_option_docs.c) share. */
static void test_word_table(void **state)
{
	const struct sn_option_word *w;
	struct sn_warmup_request req;
	struct sn_profile_request preq;
	struct sn_error err = { "" };
	char modes[128] = "", value[64];
	size_t i, n;

	w = sn_warmup_words(&n);
	for (i = 0; i < n; i++) {
		if (w[i].kind == SN_WORD_MODE) {
			snprintf(modes + strlen(modes), sizeof(modes) - strlen(modes),
				 "%s%s", *modes ? ", " : "", w[i].word);
			assert_int_equal(sn_warmup_mode_from_name(w[i].word), w[i].id);
			assert_string_equal(sn_warmup_mode_name(w[i].id), w[i].word);
		} else {
			assert_int_equal(sn_warmup_mode_from_name(w[i].word),
					 SN_WARMUP_MODE_UNSET);
		}
		/* Each word is a whole value on its own. */
		snprintf(value, sizeof(value), "%s%s", w[i].word,
			 w[i].kind == SN_WORD_PATH ? "/x" : "");
		if (sn_warmup_option_parse(value, &req, &err) != 0)
			fail_msg("the parser rejects its own word \"%s\": %s",
				 value, err.msg);
		assert_non_null(w[i].help);
		assert_true((w[i].kind == SN_WORD_PATH) == (w[i].arg != NULL));
	}
	/* The messages' list is the table's. */
	assert_string_equal(modes, SN_WARMUP_MODES);

	w = sn_profile_words(&n);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++) {
		assert_int_equal(sn_profile_option_parse(w[i].word, &preq, &err), 0);
		assert_true(w[i].id == SN_WORD_LIST ? preq.list : preq.none);
	}
	/* Only the exact word: "List" is a profile name. */
	assert_int_equal(sn_profile_option_parse("List", &preq, &err), 0);
	assert_false(preq.list);
	assert_int_equal(preq.count, 1);
}

static void test_usage_texts(void **state)
{
	const struct sn_option_word *w;
	struct sn_profile_request defaults;
	struct sn_error err = { "" };
	char text[4096], small[64];
	size_t i, n;

	assert_int_equal(sn_warmup_value_synopsis(text, sizeof(text)), 0);
	assert_string_equal(text, "MODE[,verbose][,fresh][,nccl=PATH]");
	assert_int_equal(sn_warmup_value_synopsis(small, 8), -1);

	assert_int_equal(sn_warmup_usage(text, sizeof(text),
					 SN_WARMUP_MODE_COMM), 0);
	assert_contains(text, "[spank-nccl] ");
	assert_contains(text, "follows '=' only: in \"--nccl-warmup comm\", comm is the program to run.");
	/* No nested parentheses in the word list. */
	assert_not_contains(text, "))");
	assert_contains(text, "Without a value: comm, this site's default.");
	assert_contains(text, "Env: SPANK_NCCL_WARMUP");
	assert_not_contains(text, "(default)");
	w = sn_warmup_words(&n);
	for (i = 0; i < n; i++) {
		char want[64];

		snprintf(want, sizeof(want), "%s%s%s (%s)",
			 w[i].kind == SN_WORD_MODE ? "" : ",", w[i].word,
			 w[i].arg ? w[i].arg : "", w[i].help);
		assert_contains(text, want);
	}
	/* Slurm prints at most 4095 characters of a usage text. */
	assert_true(strlen(text) < 2048);
	assert_int_equal(sn_warmup_usage(text, sizeof(text),
					 SN_WARMUP_MODE_CHECK), 0);
	assert_contains(text, "Without a value: check, this site's default.");
	assert_int_equal(sn_warmup_usage(small, sizeof(small),
					 SN_WARMUP_MODE_COMM), -1);

	assert_int_equal(sn_profile_option_parse("quiet-logs,ppo-tree",
						 &defaults, &err), 0);
	assert_int_equal(sn_profile_usage(text, sizeof(text), &defaults), 0);
	assert_contains(text, "site's default profiles (quiet-logs, ppo-tree)");
	assert_contains(text, "list (print the site's profiles and exit)");
	assert_contains(text, "none (no profiles, not even the site's defaults)");
	assert_contains(text, "Env: SPANK_NCCL_PROFILE");
	memset(&defaults, 0, sizeof(defaults));
	assert_int_equal(sn_profile_usage(text, sizeof(text), &defaults), 0);
	assert_contains(text, "site's default profiles (none)");
	assert_true(strlen(text) < 2048);
}

static void test_strutil(void **state)
{
	char buf[8];
	char s[] = " \t a b \r\n";
	char all[] = "   ";

	assert_int_equal(sn_strlcpy(buf, "1234567", sizeof(buf)), 0);
	assert_string_equal(buf, "1234567");
	assert_int_equal(sn_strlcpy(buf, "12345678", sizeof(buf)), -1);
	assert_string_equal(buf, "");
	assert_int_equal(sn_strlcpy(buf, "x", 0), -1);
	assert_string_equal(sn_strtrim(s), "a b");
	assert_string_equal(sn_strtrim(all), "");
	assert_true(sn_env_name_valid("NCCL_ALGO"));
	assert_true(sn_env_name_valid("_x1"));
	assert_false(sn_env_name_valid("1X"));
	assert_false(sn_env_name_valid(""));
	assert_false(sn_env_name_valid(NULL));
	assert_false(sn_env_name_valid("A-B"));
	assert_false(sn_env_name_valid("A=B"));
	assert_false(sn_env_name_valid("\xc3\xa9"));
	assert_true(sn_streq_nocase("Tree", "tREE"));
	assert_false(sn_streq_nocase("Tree", "Tre"));
	assert_false(sn_streq_nocase("Tre", "Tree"));
	assert_false(sn_str_has_control("a\tb \xc3\xa9"));
	assert_true(sn_str_has_control("a\rb"));
	assert_true(sn_str_has_control("a\x7f"));
	sn_str_printable(buf, sizeof(buf), "a\nb");
	assert_string_equal(buf, "a?b");
	sn_str_printable(buf, sizeof(buf), "abcdefghij");
	assert_string_equal(buf, "abcd...");
}

static void format_printable(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sn_vformat_printable(buf, len, fmt, ap);
	va_end(ap);
}

/* Every log line's path: what a user typed cannot forge a second line. */
static void test_log_line_escaped(void **state)
{
	char buf[128];

	(void)state;
	format_printable(buf, sizeof(buf), "%s=%s: %s", "SPANK_NCCL_WARMUP",
			 "comm\nspank-nccl: node n1 is broken\x1b[2J\r\t",
			 "unknown mode");
	assert_string_equal(buf, "SPANK_NCCL_WARMUP=comm?spank-nccl: node n1 is broken?[2J??: unknown mode");
	format_printable(buf, sizeof(buf), "image %s", "a\x7f\x01" "b");
	assert_string_equal(buf, "image a??b");
	/* Cut by vsnprintf: still one line, still terminated. */
	format_printable(buf, 8, "%s", "abc\ndefghijk");
	assert_string_equal(buf, "abc?def");
	format_printable(buf, sizeof(buf), "%d%%", 5);
	assert_string_equal(buf, "5%");
}

static void test_parse_u64(void **state)
{
	unsigned long long v = 7;
	const char *s = "29400-29499", *end = NULL;

	assert_int_equal(sn_parse_u64("0", 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(sn_parse_u64("10", 10, &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(sn_parse_u64("007", 10, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(sn_parse_u64("0", 0, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(sn_parse_u64("18446744073709551615", ULLONG_MAX, &v),
			 0);
	assert_true(v == ULLONG_MAX);
	v = 7;
	for (const char *const *p = (const char *const[]){ "", "11", "+1",
		"-1", "-0", " 1", "1 ", "\t1", "0x10", "1a", "1.0", "1e1", NULL };
	     *p; p++)
		assert_int_equal(sn_parse_u64(*p, 10, &v), -1);
	assert_int_equal(sn_parse_u64("1", 0, &v), -1);
	assert_int_equal(sn_parse_u64(NULL, 10, &v), -1);
	/* 2^64 and beyond wrap in 64 bits: refused, not taken modulo. */
	assert_int_equal(sn_parse_u64("18446744073709551616", ULLONG_MAX, &v),
			 -1);
	assert_int_equal(sn_parse_u64("36893488147419103232", ULLONG_MAX, &v),
			 -1);
	assert_int_equal(sn_parse_u64("99999999999999999999999", ULLONG_MAX,
				      &v), -1);
	assert_int_equal(v, 7);

	assert_int_equal(sn_parse_u64_prefix(s, 65535, &v, &end), 0);
	assert_int_equal(v, 29400);
	assert_ptr_equal(end, s + 5);
	assert_int_equal(sn_parse_u64_prefix("12", 65535, &v, &end), 0);
	assert_int_equal(*end, '\0');
	end = NULL;
	v = 7;
	assert_int_equal(sn_parse_u64_prefix("-5", 65535, &v, &end), -1);
	assert_int_equal(sn_parse_u64_prefix("70000-1", 65535, &v, &end), -1);
	assert_null(end);
	assert_int_equal(v, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile_single_and_list),
		cmocka_unit_test(test_profile_list_none),
		cmocka_unit_test(test_profile_max_names),
		cmocka_unit_test(test_profile_name_length),
		cmocka_unit_test(test_profile_errors),
		cmocka_unit_test(test_profile_list_parse_for),
		cmocka_unit_test(test_warmup_bare),
		cmocka_unit_test(test_warmup_modes),
		cmocka_unit_test(test_warmup_errors),
		cmocka_unit_test(test_warmup_nccl_path),
		cmocka_unit_test(test_warmup_mode_names),
		cmocka_unit_test(test_word_table),
		cmocka_unit_test(test_usage_texts),
		cmocka_unit_test(test_strutil),
		cmocka_unit_test(test_log_line_escaped),
		cmocka_unit_test(test_parse_u64),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * core/cmdline.c: reading a command line back, and what follows an option
 * getopt_long just parsed, as srun/sbatch/salloc call it (the optind of
 * each case is what glibc's getopt_long leaves there with "+").
 */
#include <stdlib.h>
#include <unistd.h>

#include "core_testutil.h"

#include "config/cmdline.h"

struct after_case {
	const char *line[10];
	int optind;
	enum sn_next_word want;
	const char *word;
};

static void test_word_after(void **state)
{
	static const struct after_case cases[] = {
		/* The trap itself, and the option abbreviated. */
		{ { "srun", "--nccl-warmup", "comm", "f1", "f2" }, 2,
		  SN_NEXT_WORD, "comm" },
		{ { "srun", "-N", "1", "--nccl-w", "check", "x" }, 4,
		  SN_NEXT_WORD, "check" },
		{ { "srun", "--gres=gpu:1", "--nccl-warmup", "python" }, 3,
		  SN_NEXT_WORD, "python" },
		/* Another option, or nothing, follows: no command word. */
		{ { "srun", "--nccl-warmup", "-N1", "comm" }, 2,
		  SN_NEXT_NONE, NULL },
		{ { "srun", "-N1", "--nccl-warmup" }, 3, SN_NEXT_NONE, NULL },
		{ { "sbatch", "--nccl-warmup", "comm.sh" }, 2,
		  SN_NEXT_WORD, "comm.sh" },
		{ { "srun", "--nccl-warmup", "-" }, 2, SN_NEXT_WORD, "-" },
		/* Heterogeneous components: argv moved to each ":". */
		{ { "srun", "-n1", "hostname", ":", "--nccl-warmup", "comm",
		    "x" }, 2, SN_NEXT_WORD, "comm" },
		{ { "srun", "--nccl-warmup", ":", "-n1", "hostname" }, 2,
		  SN_NEXT_NONE, NULL },
		{ { "srun", "--nccl-warmup", "comm", ":", "--nccl-warmup",
		    "comm" }, 2, SN_NEXT_WORD, "comm" },
		/* Two places fit and disagree: no answer. */
		{ { "srun", "--nccl-warmup", "hostname", ":", "--nccl-warmup",
		    "comm" }, 2, SN_NEXT_UNKNOWN, NULL },
		/* An #SBATCH line's own argv does not fit the command line. */
		{ { "sbatch", "job.sh" }, 2, SN_NEXT_UNKNOWN, NULL },
		{ { "sbatch", "-N1", "job.sh" }, 3, SN_NEXT_UNKNOWN, NULL },
		/* ... nor a script's own arguments. */
		{ { "sbatch", "job.sh", "--nccl-warmup", "comm" }, 3,
		  SN_NEXT_UNKNOWN, NULL },
		{ { "sbatch", "-o", "out", "job.sh", "--nccl-warmup", "comm" },
		  5, SN_NEXT_UNKNOWN, NULL },
		{ { "sbatch", "--output=out", "job.sh", "--nccl-warmup",
		    "comm" }, 4, SN_NEXT_UNKNOWN, NULL },
		{ { "srun", "--", "--nccl-warmup", "comm" }, 3,
		  SN_NEXT_UNKNOWN, NULL },
		/* Not this option, or with its value. */
		{ { "srun", "--nccl-warmup=comm", "x" }, 2,
		  SN_NEXT_UNKNOWN, NULL },
		{ { "srun", "--nccl-profile", "comm" }, 2, SN_NEXT_UNKNOWN,
		  NULL },
		{ { "srun", "--", "comm" }, 2, SN_NEXT_UNKNOWN, NULL },
		{ { "srun", "--nccl-warmup", "comm" }, 1, SN_NEXT_UNKNOWN,
		  NULL },
		{ { "srun", "--nccl-warmup", "comm" }, 9, SN_NEXT_UNKNOWN,
		  NULL },
	};
	struct sn_cmdline cl;
	const char *word;
	size_t i, n;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (n = 0; cases[i].line[n]; n++)
			;
		assert_int_equal(sn_cmdline_from(&cl, cases[i].line, n), 0);
		assert_int_equal(cl.argc, n);
		word = "unset";
		if (sn_cmdline_word_after(&cl, cases[i].optind,
					  "--nccl-warmup", &word) !=
		    cases[i].want)
			fail_msg("case %zu (%s %s ..., optind %d): wrong answer",
				 i, cases[i].line[0], cases[i].line[1],
				 cases[i].optind);
		if (cases[i].word)
			assert_string_equal(word, cases[i].word);
		else
			assert_null(word);
		sn_cmdline_free(&cl);
	}
}

static void write_bytes(const char *path, const char *bytes, size_t n)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static void test_read(void **state)
{
	char path[] = "/tmp/sn-cmdline-XXXXXX";
	struct sn_cmdline cl;
	char *big;
	size_t i;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	write_bytes(path, "srun\0--nccl-warmup\0\0comm\0", 25);
	assert_int_equal(sn_cmdline_read(path, &cl), 0);
	assert_int_equal(cl.argc, 4);
	assert_string_equal(cl.argv[1], "--nccl-warmup");
	assert_string_equal(cl.argv[2], "");
	assert_string_equal(cl.argv[3], "comm");
	assert_null(cl.argv[4]);
	sn_cmdline_free(&cl);
	/* No final NUL (a process that rewrote its arguments). */
	write_bytes(path, "srun\0x", 6);
	assert_int_equal(sn_cmdline_read(path, &cl), 0);
	assert_int_equal(cl.argc, 2);
	assert_string_equal(cl.argv[1], "x");
	sn_cmdline_free(&cl);
	/* Larger than one read, smaller than the limit. */
	big = malloc(100000);
	assert_non_null(big);
	for (i = 0; i < 100000; i++)
		big[i] = i % 10 == 9 ? '\0' : 'a';
	write_bytes(path, big, 100000);
	assert_int_equal(sn_cmdline_read(path, &cl), 0);
	assert_int_equal(cl.argc, 10000);
	assert_string_equal(cl.argv[9999], "aaaaaaaaa");
	sn_cmdline_free(&cl);
	free(big);
	write_bytes(path, "", 0);
	assert_int_equal(sn_cmdline_read(path, &cl), -1);
	assert_null(cl.argv);
	unlink(path);
	assert_int_equal(sn_cmdline_read(path, &cl), -1);

	/* This process's own, as the plugin reads srun's. */
	assert_int_equal(sn_cmdline_read("/proc/self/cmdline", &cl), 0);
	assert_true(cl.argc >= 1);
	assert_non_null(strstr(cl.argv[0], "test_cmdline"));
	sn_cmdline_free(&cl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_word_after),
		cmocka_unit_test(test_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

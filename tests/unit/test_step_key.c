/* SPDX-License-Identifier: MIT */
/*
 * slurmstepd's derivation of the step key (src/plugin/step_key.c, through
 * the libcrypto this program links, as slurmstepd has it mapped) against
 * nccl-warmup's (fabric_key.c): the same key, byte for byte, for fixed
 * inputs, on the pipe as the helper reads it; both against HKDF-SHA256
 * computed elsewhere (RFC 5869 in Python, and `openssl kdf`).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "fabric_key.h"
#include "pipe_testutil.h"
#include "step_key.h"

#define SITE "spank-nccl test site key, 40 bytes long."
/* HKDF-SHA256(SITE, salt, info of cluster c1, job 42, step 7, uid 4242). */
#define KEY_HEX "e9de2602ff393c4ce481cd50097481b3" \
		"ddf531d1db950e47d0601407d90ffe7c"

static char dir[] = "/tmp/test_step_key.XXXXXX";

static void path_in(const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static void write_site(const char *name, const char *text)
{
	char path[128];
	int fd;

	path_in(name, path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* The plugin's path: site file -> key -> its line on a pipe. */
static void plugin_line(const char *site_path, char *line, size_t len)
{
	struct sn_step_key_lib *lib;
	unsigned char *site = malloc(SN_STEP_KEY_SITE_MAX), key[32];
	char why[256] = "";
	size_t n;
	int p[2];

	assert_non_null(site);
	lib = sn_step_key_open(why, sizeof(why));
	assert_non_null(lib);
	assert_int_equal(sn_step_key_site_read(site_path, site, &n, why,
					       sizeof(why)), 0);
	assert_int_equal(sn_step_key_derive(lib, site, n, "c1", 42, 7, 4242,
					    key, why, sizeof(why)), 0);
	sn_step_key_close(lib);
	free(site);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(sn_step_key_write(p[1], key, why, sizeof(why)), 0);
	close(p[1]);
	pipe_drain(p[0], line, len);
}

/* The helper's path: nccl-warmup --fabric-key-derive, descriptor 3. */
static void helper_line(const char *site_path, char *line, size_t len)
{
	char *argv[] = { "nccl-warmup", SN_HELPER_FABRIC_KEY_DERIVE,
			 (char *)site_path, "c1", "42", "7", "4242", NULL };
	int p[2], status;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (dup2(p[1], 3) != 3)
			_exit(127);
		_exit(fabric_key_derive_main(7, argv));
	}
	close(p[1]);
	pipe_drain(p[0], line, len);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void both_paths_give_one_key(void **state)
{
	char path[128], plugin[256], helper[256];
	unsigned char key[32], known[32];
	struct sn_step_key_lib *lib;
	struct sn_error e;
	char why[256];

	(void)state;
	/* In memory: both derivations, and the known answer. */
	for (size_t i = 0; i < sizeof(known); i++)
		sscanf(KEY_HEX + 2 * i, "%2hhx", &known[i]);
	assert_int_equal(fabric_key_derive((const unsigned char *)SITE,
					   strlen(SITE), "c1", 42, 7, 4242,
					   key, &e), 0);
	assert_memory_equal(key, known, sizeof(key));
	memset(key, 0, sizeof(key));
	lib = sn_step_key_open(why, sizeof(why));
	assert_non_null(lib);
	assert_int_equal(sn_step_key_derive(lib, (const unsigned char *)SITE,
					    strlen(SITE), "c1", 42, 7, 4242,
					    key, why, sizeof(why)), 0);
	sn_step_key_close(lib);
	assert_memory_equal(key, known, sizeof(key));

	/* On the pipe, from the site key's file: the same bytes. */
	write_site("slurm.key", SITE);
	path_in("slurm.key", path, sizeof(path));
	plugin_line(path, plugin, sizeof(plugin));
	helper_line(path, helper, sizeof(helper));
	assert_string_equal(plugin, KEY_HEX "\n");
	assert_string_equal(helper, plugin);
	unlink(path);
}

/* Both read the site key's first SN_STEP_KEY_SITE_MAX bytes alone. */
static void a_long_site_key_counts_alike(void **state)
{
	char *text = malloc(SN_STEP_KEY_SITE_MAX + 101);
	char path[128], plugin[256], helper[256];

	(void)state;
	assert_non_null(text);
	for (size_t i = 0; i < SN_STEP_KEY_SITE_MAX + 100; i++)
		text[i] = (char)('a' + i % 26);
	text[SN_STEP_KEY_SITE_MAX + 100] = '\0';
	write_site("long.key", text);
	free(text);
	path_in("long.key", path, sizeof(path));
	plugin_line(path, plugin, sizeof(plugin));
	helper_line(path, helper, sizeof(helper));
	assert_int_equal(strlen(plugin), 65);
	assert_string_not_equal(plugin, KEY_HEX "\n");
	assert_string_equal(helper, plugin);
	unlink(path);
}

/* Unreadable, short, or a symlink: refused with the reason. */
static void a_bad_site_key_is_refused(void **state)
{
	unsigned char *site = malloc(SN_STEP_KEY_SITE_MAX);
	char path[128], link[128], why[256];
	size_t n = 1;

	(void)state;
	assert_non_null(site);
	path_in("none.key", path, sizeof(path));
	assert_int_equal(sn_step_key_site_read(path, site, &n, why,
					       sizeof(why)), -1);
	assert_int_equal(n, 0);
	assert_non_null(strstr(why, "cannot read the site key "));
	assert_non_null(strstr(why, "No such file"));
	write_site("short.key", "31 bytes, one short of a key..\n");
	path_in("short.key", path, sizeof(path));
	assert_int_equal(sn_step_key_site_read(path, site, &n, why,
					       sizeof(why)), -1);
	assert_non_null(strstr(why, "shorter than 32 bytes"));
	write_site("slurm.key", SITE);
	path_in("slurm.key", path, sizeof(path));
	path_in("link.key", link, sizeof(link));
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(sn_step_key_site_read(link, site, &n, why,
					       sizeof(why)), -1);
	assert_non_null(strstr(why, "cannot read the site key "));
	unlink(link);
	unlink(path);
	path_in("short.key", path, sizeof(path));
	unlink(path);
	free(site);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(both_paths_give_one_key),
		cmocka_unit_test(a_long_site_key_counts_alike),
		cmocka_unit_test(a_bad_site_key_is_refused),
	};
	int rc;

	if (!mkdtemp(dir))
		return 1;
	rc = cmocka_run_group_tests_name("step_key", tests, NULL, NULL);
	rmdir(dir);
	return rc;
}

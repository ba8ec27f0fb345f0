/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the hostile-input tests (hostile_testutil.h).
 */
#include "hostile_testutil.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

bool all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		if (*c++)
			return false;
	return true;
}

void assert_all_contained(const char *msg, const char *const *words)
{
	for (; *words; words++)
		assert_contains(msg, *words);
}

static char tmpdir[] = "/tmp/sn-test-hostile-XXXXXX";

int make_tmpdir(void **state)
{
	if (!mkdtemp(tmpdir))
		return -1;
	/* The "as the user" cases run as nobody, who must reach the files. */
	return chmod(tmpdir, 0755);
}

int remove_tmpdir(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

const char *tmp_dir(void)
{
	return tmpdir;
}

void tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(close(fd), 0);
	assert_int_equal(chmod(path, mode), 0);
}

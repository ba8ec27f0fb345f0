/* SPDX-License-Identifier: MIT */
/*
 * Hostile things at the fleet sinks' paths (record.c, prom.c): root
 * writes them in slurmstepd and the Prolog, so whatever a user could
 * plant in a sink directory left writable must be refused with a message
 * naming the path: a FIFO (without a hang), a symlink, another uid's
 * file, a hard link, a name guessed for the .prom temporary.  Each case
 * also checks that nothing was written where it must not be.
 *
 * A FIFO that blocked open() would hang the test: alarm() turns such a
 * hang into a failure (SIGALRM kills the test binary); nothing waits.
 */
#include "hostile_testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fleet/prom.h"
#include "fleet/record.h"

#define NOBODY 65534
#define HANG_LIMIT_S 10

static struct sn_error err;

/* A fresh directory NAME under the test's directory, in DIR. */
static void sub_dir(char *dir, size_t len, const char *name)
{
	tmp_path(dir, len, name);
	assert_int_equal(mkdir(dir, 0755), 0);
}

static void record_of(struct sn_record *r)
{
	memset(r, 0, sizeof(*r));
	r->source = "spank";
	r->time = 1795389000.25;
	snprintf(r->node, sizeof(r->node), "n1");
	snprintf(r->mode, sizeof(r->mode), "comm");
	r->pass = true;
	r->policy = "fail";
	r->job = 42;
	r->uid = 1000;
}

static int append(const char *dir)
{
	char pattern[512];
	int rc;

	snprintf(pattern, sizeof(pattern), "%s/%%n.jsonl", dir);
	memset(&err, 0, sizeof(err));
	alarm(HANG_LIMIT_S);
	rc = sn_record_append(pattern, "n1", "{}\n", 3, &err);
	alarm(0);
	print_message("  append %s: rc=%d %s\n", dir, rc, err.msg);
	return rc;
}

static int prom_update(const char *dir)
{
	struct sn_record r;
	int rc;

	record_of(&r);
	memset(&err, 0, sizeof(err));
	alarm(HANG_LIMIT_S);
	rc = sn_prom_update(dir, &r, &err);
	alarm(0);
	print_message("  prom %s: rc=%d %s\n", dir, rc, err.msg);
	return rc;
}

static off_t size_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return st.st_size;
}

/* Entries of DIR whose name starts with PREFIX. */
static int count_prefixed(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

/* Controls: a sane sink works, and what it makes is a root-style sink. */
static void test_sane_sinks(void **state)
{
	char dir[512], path[600];
	struct stat st;

	sub_dir(dir, sizeof(dir), "sane");
	assert_int_equal(append(dir), 0);
	assert_int_equal(append(dir), 0);
	snprintf(path, sizeof(path), "%s/n1.jsonl", dir);
	assert_int_equal(size_of(path), 6);
	assert_int_equal(prom_update(dir), 0);
	assert_int_equal(prom_update(dir), 0);
	snprintf(path, sizeof(path), "%s/" SN_PROM_FILE, dir);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_mode & 0777, 0644);
	/* No temporary is left behind. */
	assert_int_equal(count_prefixed(dir, ".spank_nccl.prom."), 0);
}

/* A FIFO at the record path: refused at once, with or without a reader. */
static void test_record_fifo(void **state)
{
	char dir[512], path[600], buf[8];
	int reader;

	sub_dir(dir, sizeof(dir), "record-fifo");
	snprintf(path, sizeof(path), "%s/n1.jsonl", dir);
	assert_int_equal(mkfifo(path, 0666), 0);
	assert_int_equal(append(dir), -1);
	assert_contains(err.msg, path);
	assert_contains(err.msg, "is a FIFO, not a regular file; remove it");
	/* A reader lets open() succeed: fstat() refuses, nothing written. */
	reader = open(path, O_RDONLY | O_NONBLOCK);
	assert_true(reader >= 0);
	assert_int_equal(append(dir), -1);
	assert_contains(err.msg, "is a FIFO, not a regular file");
	assert_true(read(reader, buf, sizeof(buf)) <= 0);
	close(reader);
}

/* A FIFO at the .prom file or at its lock file. */
static void test_prom_fifo(void **state)
{
	char dir[512], path[600];
	struct stat st;

	sub_dir(dir, sizeof(dir), "prom-fifo");
	snprintf(path, sizeof(path), "%s/" SN_PROM_FILE, dir);
	assert_int_equal(mkfifo(path, 0666), 0);
	assert_int_equal(prom_update(dir), -1);
	assert_contains(err.msg, path);
	assert_contains(err.msg, "is a FIFO, not a regular file; remove it");
	/* Still the FIFO: nothing renamed over it, no temporary left. */
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(count_prefixed(dir, ".spank_nccl.prom."), 0);

	sub_dir(dir, sizeof(dir), "lock-fifo");
	snprintf(path, sizeof(path), "%s/" SN_PROM_LOCK, dir);
	assert_int_equal(mkfifo(path, 0666), 0);
	assert_int_equal(prom_update(dir), -1);
	assert_contains(err.msg, path);
	assert_contains(err.msg, "is a FIFO, not a regular file");
	snprintf(path, sizeof(path), "%s/" SN_PROM_FILE, dir);
	assert_int_equal(access(path, F_OK), -1);
}

/* Symlinks at each sink path are never followed. */
static void test_symlinks(void **state)
{
	static const char *const names[] = { "n1.jsonl", SN_PROM_FILE,
					     SN_PROM_LOCK };
	char dir[512], path[600], victim[600];
	struct stat st;

	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "symlink-%zu", i);
		sub_dir(dir, sizeof(dir), path);
		snprintf(victim, sizeof(victim), "%s/victim", dir);
		write_file(victim, "keep\n", 0644);
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		assert_int_equal(symlink(victim, path), 0);
		if (i == 0)
			assert_int_equal(append(dir), -1);
		else
			assert_int_equal(prom_update(dir), -1);
		assert_contains(err.msg, path);
		assert_contains(err.msg, "Too many levels of symbolic links");
		assert_int_equal(size_of(victim), 5);
		assert_int_equal(lstat(path, &st), 0);
		assert_true(S_ISLNK(st.st_mode));
	}
}

/* Another uid's file (root only: only root can give a file away). */
static void test_foreign_owner(void **state)
{
	static const char *const names[] = { "n1.jsonl", SN_PROM_FILE,
					     SN_PROM_LOCK };
	char dir[512], path[600];

	if (geteuid() != 0)
		skip();
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "foreign-%zu", i);
		sub_dir(dir, sizeof(dir), path);
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		write_file(path, "", 0644);
		assert_int_equal(chown(path, NOBODY, NOBODY), 0);
		if (i == 0)
			assert_int_equal(append(dir), -1);
		else
			assert_int_equal(prom_update(dir), -1);
		assert_contains(err.msg, path);
		assert_contains(err.msg, "owned by uid 65534, not root");
		assert_int_equal(size_of(path), 0);
	}
}

/* A second link could make the record file some other root file. */
static void test_hard_link(void **state)
{
	char dir[512], path[600], other[600];

	sub_dir(dir, sizeof(dir), "hard-link");
	snprintf(other, sizeof(other), "%s/elsewhere", dir);
	write_file(other, "keep\n", 0644);
	snprintf(path, sizeof(path), "%s/n1.jsonl", dir);
	assert_int_equal(link(other, path), 0);
	assert_int_equal(append(dir), -1);
	assert_contains(err.msg, path);
	assert_contains(err.msg, "has 2 hard links");
	assert_int_equal(size_of(other), 5);
}

/*
 * The .prom temporary used to be ".spank_nccl.prom.<pid>": what is
 * planted under that name is neither followed nor used, and the .prom
 * file is always a new file of ours.
 */
static void test_precreated_tmp(void **state)
{
	char dir[512], planted[600], victim[600], path[600];
	struct stat before, after;

	sub_dir(dir, sizeof(dir), "precreated-tmp");
	snprintf(planted, sizeof(planted), "%s/.spank_nccl.prom.%ld", dir,
		 (long)getpid());
	snprintf(victim, sizeof(victim), "%s/victim", tmp_dir());
	write_file(victim, "keep\n", 0644);
	assert_int_equal(symlink(victim, planted), 0);
	assert_int_equal(prom_update(dir), 0);
	assert_int_equal(size_of(victim), 5);
	assert_int_equal(lstat(planted, &before), 0);
	assert_true(S_ISLNK(before.st_mode));
	assert_int_equal(unlink(planted), 0);

	/* A regular file there (a user's, when we are root). */
	write_file(planted, "spank_nccl_warmup_passes_total 999999\n", 0666);
	if (geteuid() == 0)
		assert_int_equal(chown(planted, NOBODY, NOBODY), 0);
	assert_int_equal(lstat(planted, &before), 0);
	assert_int_equal(prom_update(dir), 0);
	snprintf(path, sizeof(path), "%s/" SN_PROM_FILE, dir);
	assert_int_equal(lstat(path, &after), 0);
	assert_true(after.st_ino != before.st_ino);
	assert_int_equal(after.st_uid, geteuid());
	assert_int_equal(after.st_nlink, 1);
	assert_int_equal(size_of(planted), 38);
	/* The planted file is the only temporary-looking name left. */
	assert_int_equal(count_prefixed(dir, ".spank_nccl.prom."), 1);
}

/* A write that fails (file size limit) leaves no temporary behind. */
static void test_tmp_removed_on_failure(void **state)
{
	char dir[512], path[600];
	int status;
	pid_t pid;

	sub_dir(dir, sizeof(dir), "tmp-failure");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit lim = { 16, 16 };

		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &lim) < 0)
			_exit(2);
		_exit(prom_update(dir) == -1 &&
		      strstr(err.msg, "cannot write") ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(count_prefixed(dir, ".spank_nccl.prom."), 0);
	snprintf(path, sizeof(path), "%s/" SN_PROM_FILE, dir);
	assert_int_equal(access(path, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sane_sinks),
		cmocka_unit_test(test_record_fifo),
		cmocka_unit_test(test_prom_fifo),
		cmocka_unit_test(test_symlinks),
		cmocka_unit_test(test_foreign_owner),
		cmocka_unit_test(test_hard_link),
		cmocka_unit_test(test_precreated_tmp),
		cmocka_unit_test(test_tmp_removed_on_failure),
	};

	return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}

/* SPDX-License-Identifier: MIT */
/*
 * Hostile values for the profile file on disk: what the path names
 * (missing, directory, FIFO, links, /dev/zero), its mode and owner, and
 * loading it as the user.
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

#include "profiles/profile_file.h"
#include "base/strutil.h"

#define NOBODY 65534

static const char good_text[] =
	"[profile p]\n"
	"description = a good profile\n"
	"set NCCL_DEBUG=WARN\n";

/* ---- the profile file on disk --------------------------------------- */

enum file_setup {
	FS_REGULAR,		/* good_text with MODE */
	FS_MISSING,
	FS_DIRECTORY,
	FS_FIFO,
	FS_LINK_TO_REGULAR,	/* symlink -> regular file with MODE */
	FS_LINK_DANGLING,
	FS_LINK_LOOP,		/* a -> b -> a */
	FS_LINK_TO_DIRECTORY,
	FS_LINK_TO_FIFO,
	FS_LINK_TO_DEVZERO,
	FS_DEVZERO,		/* the path is /dev/zero itself */
	FS_IN_PRIVATE_DIR,	/* 0644 file in a 0700 directory */
};

struct file_case {
	const char *name;
	enum file_setup setup;
	mode_t mode;
	bool as_user;		/* load as an unprivileged user (srun's view) */
	int rc;			/* 0: must load; -1: must be refused */
	const char *words[4];	/* in the message, besides the path */
};

static const struct file_case file_cases[] = {
	/* Controls: a sane file loads, directly and through a symlink. */
	{ "regular-0644", FS_REGULAR, 0644, false, 0, { NULL } },
	{ "regular-0644-as-user", FS_REGULAR, 0644, true, 0, { NULL } },
	{ "link-to-regular", FS_LINK_TO_REGULAR, 0644, false, 0, { NULL } },
	{ "regular-0444", FS_REGULAR, 0444, false, 0, { NULL } },

	{ "missing", FS_MISSING, 0, false, -1,
	  { "cannot open profile file", "No such file or directory",
	    "profiles=", NULL } },
	{ "dangling-symlink", FS_LINK_DANGLING, 0, false, -1,
	  { "cannot open profile file", "No such file or directory", NULL } },
	{ "symlink-loop", FS_LINK_LOOP, 0, false, -1,
	  { "cannot open profile file", "Too many levels of symbolic links",
	    "profiles=", NULL } },
	{ "directory", FS_DIRECTORY, 0, false, -1,
	  { "is a directory", "not a regular file", "profiles=", NULL } },
	{ "symlink-to-directory", FS_LINK_TO_DIRECTORY, 0, false, -1,
	  { "is a directory", "not a regular file", NULL } },
	{ "fifo", FS_FIFO, 0, false, -1,
	  { "is a special file", "not a regular file", NULL } },
	{ "symlink-to-fifo", FS_LINK_TO_FIFO, 0, false, -1,
	  { "is a special file", "not a regular file", NULL } },
	{ "symlink-to-dev-zero", FS_LINK_TO_DEVZERO, 0, false, -1,
	  { "is a special file", "not a regular file", NULL } },
	{ "dev-zero", FS_DEVZERO, 0, false, -1,
	  { "is a special file", NULL } },
	/* Writable by others: refused as sudo refuses such a sudoers. */
	{ "group-writable", FS_REGULAR, 0664, false, -1,
	  { "writable by group/others", "chmod go-w", NULL } },
	{ "world-writable", FS_REGULAR, 0646, false, -1,
	  { "writable by group/others", "chmod go-w", NULL } },
	{ "mode-0777", FS_REGULAR, 0777, false, -1,
	  { "writable by group/others", NULL } },
	{ "group-writable-read-only-owner", FS_REGULAR, 0474, false, -1,
	  { "writable by group/others", NULL } },
	/* The link's own mode means nothing; its target's is checked. */
	{ "symlink-to-group-writable", FS_LINK_TO_REGULAR, 0664, false, -1,
	  { "writable by group/others", NULL } },
	{ "symlink-to-world-writable", FS_LINK_TO_REGULAR, 0666, false, -1,
	  { "writable by group/others", NULL } },
	/*
	 * Unreadable.  Root reads any file, so "unreadable" is what srun
	 * meets: the file read as the job user.  Root's own 0600 file is
	 * fine for root (slurmstepd) and refused for the user, with the fix.
	 */
	{ "root-only-0600-as-root", FS_REGULAR, 0600, false, 0, { NULL } },
	{ "unreadable-0600-as-user", FS_REGULAR, 0600, true, -1,
	  { "Permission denied", "chmod a+r", NULL } },
	{ "unreadable-0000-as-user", FS_REGULAR, 0000, true, -1,
	  { "Permission denied", "chmod a+r", NULL } },
	{ "in-private-directory-as-user", FS_IN_PRIVATE_DIR, 0644, true, -1,
	  { "Permission denied", NULL } },
};

/* Creates what CASE describes; returns the path to load in PATH. */
static void file_setup(const struct file_case *c, char *path, size_t len)
{
	char target[256], other[256];

	snprintf(target, sizeof(target), "%s/%s.target", tmp_dir(), c->name);
	tmp_path(path, len, c->name);
	switch (c->setup) {
	case FS_REGULAR:
		write_file(path, good_text, c->mode);
		break;
	case FS_MISSING:
		break;
	case FS_DIRECTORY:
		assert_int_equal(mkdir(path, 0755), 0);
		break;
	case FS_FIFO:
		assert_int_equal(mkfifo(path, 0644), 0);
		break;
	case FS_LINK_TO_REGULAR:
		write_file(target, good_text, c->mode);
		assert_int_equal(symlink(target, path), 0);
		break;
	case FS_LINK_DANGLING:
		assert_int_equal(symlink(target, path), 0);
		break;
	case FS_LINK_LOOP:
		snprintf(other, sizeof(other), "%s/%s.other", tmp_dir(), c->name);
		assert_int_equal(symlink(other, path), 0);
		assert_int_equal(symlink(path, other), 0);
		break;
	case FS_LINK_TO_DIRECTORY:
		assert_int_equal(mkdir(target, 0755), 0);
		assert_int_equal(symlink(target, path), 0);
		break;
	case FS_LINK_TO_FIFO:
		assert_int_equal(mkfifo(target, 0644), 0);
		assert_int_equal(symlink(target, path), 0);
		break;
	case FS_LINK_TO_DEVZERO:
		assert_int_equal(symlink("/dev/zero", path), 0);
		break;
	case FS_DEVZERO:
		snprintf(path, len, "/dev/zero");
		break;
	case FS_IN_PRIVATE_DIR:
		assert_int_equal(mkdir(target, 0700), 0);
		snprintf(path, len, "%s/nccl-profiles.conf", target);
		write_file(path, good_text, c->mode);
		break;
	}
}

struct load_outcome {
	int rc;
	bool set_zeroed;	/* after a refusal: nothing kept */
	size_t n_profiles;
	char msg[SN_ERROR_MAX];
};

static void load_here(const char *path, struct load_outcome *out)
{
	struct sn_profile_set set;
	struct sn_error err = { "" };

	memset(out, 0, sizeof(*out));
	out->rc = sn_profile_set_load(&set, path, &err);
	out->set_zeroed = all_zero(&set, sizeof(set));
	out->n_profiles = set.n_profiles;
	memcpy(out->msg, err.msg, sizeof(out->msg));
	if (out->rc == 0)
		sn_profile_set_free(&set);
}

/*
 * Loads as the job user would (srun runs as the user).  As root the load
 * runs in a child that drops to nobody for good; as a user, here.
 */
static void load_as_user(const char *path, struct load_outcome *out)
{
	int fds[2], status;
	pid_t pid;

	if (geteuid() != 0) {
		load_here(path, out);
		return;
	}
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct load_outcome child;
		ssize_t n;

		close(fds[0]);
		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(2);
		load_here(path, &child);
		n = write(fds[1], &child, sizeof(child));
		_exit(n == (ssize_t)sizeof(child) ? 0 : 3);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], out, sizeof(*out)), (ssize_t)sizeof(*out));
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_profile_file_on_disk(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(file_cases) / sizeof(file_cases[0]); i++) {
		const struct file_case *c = &file_cases[i];
		struct load_outcome out;
		char path[512];

		/* A user owns what it creates, so "unreadable to the user"
		 * needs root to create the file (CI runs as root). */
		if (c->as_user && c->rc && c->mode != 0000 && geteuid() != 0) {
			print_message("  %-32s not testable as non-root\n",
				      c->name);
			continue;
		}
		file_setup(c, path, sizeof(path));
		if (c->as_user)
			load_as_user(path, &out);
		else
			load_here(path, &out);
		print_message("  %-32s rc=%d %s\n", c->name, out.rc, out.msg);
		if (out.rc != c->rc)
			fail_msg("%s: rc %d, expected %d (%s)", c->name, out.rc,
				 c->rc, out.msg);
		if (c->rc == 0) {
			assert_int_equal(out.n_profiles, 1);
			continue;
		}
		/* Refused: nothing kept, the message names the path. */
		assert_true(out.set_zeroed);
		assert_contains(out.msg, path);
		assert_all_contained(out.msg, c->words);
	}
}

/* The file's owner: only root (and, for tests, the caller) may own it. */
static void test_profile_file_foreign_owner(void **state)
{
	struct load_outcome out;
	char path[512], link[512];

	if (geteuid() != 0)
		skip();		/* only root can give a file away */
	tmp_path(path, sizeof(path), "owned-by-user.conf");
	write_file(path, good_text, 0644);
	assert_int_equal(chown(path, NOBODY, NOBODY), 0);
	load_here(path, &out);
	assert_int_equal(out.rc, -1);
	assert_true(out.set_zeroed);
	assert_contains(out.msg, "owned by uid 65534, not root");
	assert_contains(out.msg, "chown root");
	/* Through a root-owned symlink: the target's owner counts. */
	tmp_path(link, sizeof(link), "link-to-user-file.conf");
	assert_int_equal(symlink(path, link), 0);
	load_here(link, &out);
	assert_int_equal(out.rc, -1);
	assert_contains(out.msg, "owned by uid 65534");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile_file_on_disk),
		cmocka_unit_test(test_profile_file_foreign_owner),
	};

	return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}

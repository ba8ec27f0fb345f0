/* SPDX-License-Identifier: MIT */
/*
 * Hostile values, table by table, for every input spank-nccl reads: the
 * profile file (on disk and as text), --nccl-profile/--nccl-warmup,
 * plugstack.conf arguments, SPANK_NCCL_APPLIED and the helper's JSON.
 * Each case checks two things: the message says what was wrong (key words
 * asserted), and nothing was half-kept (the output structure is zeroed or
 * untouched, the environment is as it was).
 */
#include "core_testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "applied.h"
#include "config.h"
#include "env_apply.h"
#include "options.h"
#include "profile_file.h"
#include "resolve.h"
#include "strutil.h"
#include "warmup_result.h"

#define NOBODY 65534

static const char good_text[] =
	"[profile p]\n"
	"description = a good profile\n"
	"set NCCL_DEBUG=WARN\n";

/* True if every byte of the N-byte object at P is zero. */
static bool all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		if (*c++)
			return false;
	return true;
}

static void assert_all_contained(const char *msg, const char *const *words)
{
	for (; *words; words++)
		assert_contains(msg, *words);
}

/* ---- the profile file on disk --------------------------------------- */

static char tmpdir[] = "/tmp/sn-test-hostile-XXXXXX";

static int make_tmpdir(void **state)
{
	if (!mkdtemp(tmpdir))
		return -1;
	/* The "as the user" cases run as nobody, who must reach the files. */
	return chmod(tmpdir, 0755);
}

static int remove_tmpdir(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(close(fd), 0);
	assert_int_equal(chmod(path, mode), 0);
}

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

	snprintf(target, sizeof(target), "%s/%s.target", tmpdir, c->name);
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
		snprintf(other, sizeof(other), "%s/%s.other", tmpdir, c->name);
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
		cmocka_unit_test(test_profile_file_on_disk),
		cmocka_unit_test(test_profile_file_foreign_owner),
		cmocka_unit_test(test_profile_file_text),
		cmocka_unit_test(test_odd_values_applied_exactly),
		cmocka_unit_test(test_thousands_of_profiles),
		cmocka_unit_test(test_million_lines),
		cmocka_unit_test(test_option_values),
		cmocka_unit_test(test_config_arguments),
		cmocka_unit_test(test_applied_record),
		cmocka_unit_test(test_helper_result),
		cmocka_unit_test(test_apply_rollback_every_step),
	};

	return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}

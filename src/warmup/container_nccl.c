/* SPDX-License-Identifier: MIT */
/*
 * The NCCL inside a running container (--container-pid PID): the library
 * the container's tasks would load, found in the container's own root as
 * its programs would find it, and loaded from the host side through
 * /proc/PID/root, so nothing of the image runs but that library.  enroot
 * (pyxis) starts containers without a PID namespace, so PID is the host's
 * number of a process in the container; the helper, running as the same
 * user, may read its root and environment.  Order (nccl-warmup(8)):
 *   1. LD_LIBRARY_PATH of the container's environment,
 *   2. the directories of its /etc/ld.so.conf (and the files it
 *      includes), then its standard library directories,
 *   3. the nvidia-nccl-cu* wheel of its Python (site/dist-packages).
 * The container's NCCL_* variables (the image's ENV, which pyxis imports
 * into every task over the job's) replace the helper's own.
 *
 * --container-root-fd FD (spank_nccl.so): the root is FD, the task's
 * /proc/PID/root opened by the root agent (the task is not dumpable, so
 * the job user could not), reached as /proc/self/fd/FD; the NCCL_* are
 * then already the helper's own and /proc/PID/environ is not read.
 */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container_nccl.h"
#include "protocol/helper_protocol.h"

#define WU_LIBNCCL "libnccl.so.2"

/* ROOT/DIR/libnccl.so.2 into OUT (DIR absolute); true when it exists. */
static bool try_dir(const char *root, const char *dir, size_t n, char *out,
		    size_t len)
{
	snprintf(out, len, "%s%.*s/" WU_LIBNCCL, root, (int)n, dir);
	return access(out, F_OK) == 0;
}

/* 1. The container's LD_LIBRARY_PATH. */
static bool find_ldpath(const char *root, const char *list, char *out,
			size_t len)
{
	const char *p = list;

	while (p && *p) {
		size_t n = strcspn(p, ":;");

		if (n && p[0] == '/' && try_dir(root, p, n, out, len))
			return true;
		p += n;
		if (*p)
			p++;
	}
	return false;
}

static bool find_conf(const char *root, const char *conf, int depth,
		      char *out, size_t len);

/* An "include PATTERN" line of ld.so.conf, PATTERN inside ROOT. */
static bool find_include(const char *root, const char *pattern, int depth,
			 char *out, size_t len)
{
	char pat[PATH_MAX];
	glob_t g;
	bool found = false;

	snprintf(pat, sizeof(pat), "%s%s", root, pattern);
	if (glob(pat, 0, NULL, &g) != 0)
		return false;
	for (size_t i = 0; i < g.gl_pathc && !found; i++)
		found = find_conf(root, g.gl_pathv[i] + strlen(root),
				  depth + 1, out, len);
	globfree(&g);
	return found;
}

/* 2. The directories ld.so.conf CONF (a path inside ROOT) names. */
static bool find_conf(const char *root, const char *conf, int depth,
		      char *out, size_t len)
{
	char path[PATH_MAX], line[PATH_MAX];
	bool found = false;
	FILE *f;

	if (depth > 4)
		return false;
	snprintf(path, sizeof(path), "%s%s", root, conf);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *s = line + strspn(line, " \t");
		size_t n;

		s[strcspn(s, "#\n")] = '\0';
		n = strcspn(s, " \t");
		if (strncmp(s, "include", 7) == 0 && (s[7] == ' ' || s[7] == '\t')) {
			s += 7 + strspn(s + 7, " \t");
			s[strcspn(s, " \t")] = '\0';
			found = s[0] == '/' &&
				find_include(root, s, depth, out, len);
		} else if (n && s[0] == '/') {
			found = try_dir(root, s, n, out, len);
		}
	}
	fclose(f);
	return found;
}

static bool find_standard(const char *root, char *out, size_t len)
{
	static const char *const dirs[] = {
		"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
		"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
		"/lib64", "/usr/lib64", "/lib", "/usr/lib",
	};

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (try_dir(root, dirs[i], strlen(dirs[i]), out, len))
			return true;
	return false;
}

/* 3. PyTorch's NCCL: the nvidia-nccl-cu* wheel in the image's Python. */
static bool find_wheel(const char *root, char *out, size_t len)
{
	static const char *const pythons[] = {
		"/usr/local/lib/python3*", "/usr/lib/python3*",
		"/opt/*/lib/python3*", "/opt/*/*/lib/python3*",
		"/opt/*/.venv/lib/python3*", "/root/.local/lib/python3*",
	};
	char pat[PATH_MAX];
	bool found = false;
	glob_t g;

	for (size_t i = 0; i < sizeof(pythons) / sizeof(pythons[0]) && !found;
	     i++) {
		snprintf(pat, sizeof(pat),
			 "%s%s/*-packages/nvidia/nccl/lib/" WU_LIBNCCL, root,
			 pythons[i]);
		if (glob(pat, 0, NULL, &g) != 0)
			continue;
		if (g.gl_pathc) {
			snprintf(out, len, "%s", g.gl_pathv[0]);
			found = true;
		}
		globfree(&g);
	}
	return found;
}

/* Reads /proc/PID/environ: sets NCCL_* here, copies LD_LIBRARY_PATH. */
static int read_environ(pid_t pid, char *ldpath, size_t len)
{
	char path[64], *buf = NULL;
	size_t cap = 0, n;
	FILE *f;

	ldpath[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = getdelim(&buf, &cap, '\0', f);
	while (n != (size_t)-1) {
		char *eq = strchr(buf, '=');

		if (eq && strncmp(buf, "NCCL_", 5) == 0) {
			*eq = '\0';
			setenv(buf, eq + 1, 1);
		} else if (eq && strncmp(buf, "LD_LIBRARY_PATH=", 16) == 0) {
			snprintf(ldpath, len, "%s", eq + 1);
		}
		n = getdelim(&buf, &cap, '\0', f);
	}
	free(buf);
	fclose(f);
	return 0;
}

/* The container's root as a path prefix: the descriptor's, or PID's. */
static size_t container_root(const struct wu_options *opt, char *root,
			     size_t len)
{
	if (opt->container_root_fd > 0)
		return (size_t)snprintf(root, len, "/proc/self/fd/%d",
					opt->container_root_fd);
	return (size_t)snprintf(root, len, "/proc/%d/root",
				(int)opt->container_pid);
}

/* The root the plugin handed over: an open directory descriptor. */
static bool root_fd_usable(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}

int wu_container_find_nccl(struct wu_run *run, char *file, size_t len)
{
	const struct wu_options *opt = &run->opt;
	const char *given = getenv(SN_HELPER_ENV_CONTAINER_LDPATH);
	char root[64], ldpath[4096] = "";
	bool readable;

	container_root(opt, root, sizeof(root));
	if (opt->container_root_fd > 0)
		readable = root_fd_usable(opt->container_root_fd);
	else
		readable = read_environ(opt->container_pid, ldpath,
					sizeof(ldpath)) == 0;
	if (!readable || access(root, X_OK) != 0)
		return wu_fail(run, SN_WARMUP_NCCL_ERROR,
			       "cannot read the container of process %d (container image %s): it is gone, or runs as another user",
			       (int)opt->container_pid, wu_container_image(run));
	if (given)
		snprintf(ldpath, sizeof(ldpath), "%s", given);
	if (find_ldpath(root, ldpath, file, len) ||
	    find_conf(root, "/etc/ld.so.conf", 0, file, len) ||
	    find_standard(root, file, len) || find_wheel(root, file, len))
		return SN_WARMUP_OK;
	file[0] = '\0';
	if (opt->mode == SN_WARMUP_MODE_CHECK) {
		wu_note(run, "no NCCL in the container image %s",
			wu_container_image(run));
		return SN_WARMUP_OK;
	}
	return wu_fail(run, SN_WARMUP_CONTAINER_NCCL,
		       "no NCCL in the container image %s: looked in its LD_LIBRARY_PATH (%s), the directories of its /etc/ld.so.conf, its library directories and its Python's nvidia-nccl-cu* wheel; install NCCL in the image",
		       wu_container_image(run), ldpath[0] ? ldpath : "unset");
}

const char *wu_container_image(const struct wu_run *run)
{
	return run->opt.container_image[0] ? run->opt.container_image :
	       "(unnamed)";
}

/* ROOT/usr/lib/... -> /usr/lib/..., the path the tasks see. */
void wu_container_path(const struct wu_run *run, char *path)
{
	char root[64];
	size_t n = container_root(&run->opt, root, sizeof(root));

	if (strncmp(path, root, n) == 0 && path[n] == '/')
		memmove(path, path + n, strlen(path + n) + 1);
}

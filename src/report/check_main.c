/* SPDX-License-Identifier: MIT */
/*
 * spank-nccl-check [--plugstack FILE] [--profiles FILE] [--prolog FILE]
 *                  [--prolog-conf FILE]
 * What an admin edits, read by the code that uses it: the spank_nccl.so
 * line of plugstack.conf (and its includes) by the plugin's parser
 * (sn_config_parse), the profile file it names by the profile parser
 * (sn_profile_set_load) with default_profiles= resolved against it
 * (sn_resolve), and the Prolog's settings by the Prolog itself
 * (nccl-warmup-prolog --check).  Each problem is one line on stdout,
 * "FILE:LINE: what is wrong; how to fix"; exit 1.  None: one OK line,
 * exit 0.  Usage error: exit 2.
 */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/config.h"
#include "profiles/profile_file.h"
#include "profiles/resolve.h"
#include "base/strutil.h"

#define PLUGIN_NAME "spank_nccl.so"
#define MAX_ARGS 64
#define MAX_INCLUDE_DEPTH 8

struct check {
	unsigned int problems;
	/* The (first) spank_nccl.so line and what it says. */
	char line_file[PATH_MAX];
	unsigned int line_no;
	unsigned int n_lines;
	int n_args;
	struct sn_config cfg;
};

static void problem(struct check *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void problem(struct check *c, const char *fmt, ...)
{
	va_list ap;

	c->problems++;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: spank-nccl-check [--plugstack FILE] [--profiles FILE] [--prolog FILE]\n"
		"                        [--prolog-conf FILE]\n"
		"  Checks spank-nccl's configuration as the plugin and the Prolog read it:\n"
		"  one \"FILE:LINE: problem; fix\" line each and exit 1; none: one OK line.\n"
		"  --plugstack FILE    plugstack.conf with the spank_nccl.so line (\"-\": stdin;\n"
		"                      default " SYSCONFDIR "/plugstack.conf)\n"
		"  --profiles FILE     the profile file (default: profiles= of that line)\n"
		"  --prolog FILE       the Prolog (default " LIBEXECDIR "/nccl-warmup-prolog)\n"
		"  --prolog-conf FILE  the Prolog's settings (default: the Prolog's own)\n");
}

/*
 * The plugin's arguments, as slurm_spank_init() gets them: each one alone
 * first (every bad one is a problem), then all together (a key given
 * twice).
 */
static void check_args(struct check *c, const char *file, unsigned int line,
		       int argc, char *argv[])
{
	struct sn_config whole;
	struct sn_error err;
	unsigned int before = c->problems;
	int i;

	for (i = 0; i < argc; i++)
		if (sn_config_parse(&c->cfg, 1, &argv[i], &err) < 0)
			problem(c, "%s:%u: %s", file, line, err.msg);
	sn_config_defaults(&whole);
	if (c->problems == before && sn_config_parse(&whole, argc, argv, &err) < 0)
		problem(c, "%s:%u: %s", file, line, err.msg);
}

static bool is_plugin(const char *path)
{
	const char *base = strrchr(path, '/');

	return strcmp(base ? base + 1 : path, PLUGIN_NAME) == 0;
}

static void scan_file(struct check *c, const char *path, int depth);

static void scan_include(struct check *c, const char *file, unsigned int line,
			 const char *pattern, int depth)
{
	glob_t g;
	size_t i;

	if (depth >= MAX_INCLUDE_DEPTH) {
		problem(c, "%s:%u: include nested more than %d deep; include the files directly",
			file, line, MAX_INCLUDE_DEPTH);
		return;
	}
	if (glob(pattern, 0, NULL, &g) != 0)
		return;		/* Slurm skips a pattern that matches nothing. */
	for (i = 0; i < g.gl_pathc; i++)
		scan_file(c, g.gl_pathv[i], depth + 1);
	globfree(&g);
}

/* One plugstack.conf line: "required|optional PATH ARGS..." or "include". */
static void scan_line(struct check *c, const char *file, unsigned int line,
		      char *text, int depth)
{
	char *argv[MAX_ARGS + 2], *save = NULL, *tok;
	int argc = 0;

	text[strcspn(text, "#")] = '\0';
	for (tok = strtok_r(text, " \t\r\n", &save); tok;
	     tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (argc == MAX_ARGS + 2) {
			problem(c, "%s:%u: more than %d arguments; remove some",
				file, line, MAX_ARGS);
			return;
		}
		argv[argc++] = tok;
	}
	if (argc >= 2 && strcmp(argv[0], "include") == 0) {
		scan_include(c, file, line, argv[1], depth);
		return;
	}
	if (argc < 2 || !is_plugin(argv[1]))
		return;
	if (strcmp(argv[0], "required") != 0 && strcmp(argv[0], "optional") != 0)
		problem(c, "%s:%u: \"%s\": a plugin line starts with required or optional",
			file, line, argv[0]);
	if (++c->n_lines > 1) {
		problem(c, "%s:%u: %s loaded a second time (first at %s:%u): every srun would fail with 'option \"nccl-profile\" provided by both'; keep one line",
			file, line, PLUGIN_NAME, c->line_file, c->line_no);
		return;
	}
	sn_strlcpy(c->line_file, file, sizeof(c->line_file));
	c->line_no = line;
	c->n_args = argc - 2;
	check_args(c, file, line, argc - 2, argv + 2);
}

static void scan_file(struct check *c, const char *path, int depth)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	const char *name = f == stdin ? "<stdin>" : path;
	char *text = NULL;
	size_t cap = 0;
	unsigned int line = 0;

	if (!f) {
		problem(c, "%s:0: cannot read it: %s; give the plugstack.conf in use with --plugstack",
			path, strerror(errno));
		return;
	}
	while (getline(&text, &cap, f) >= 0)
		scan_line(c, name, ++line, text, depth);
	free(text);
	if (f != stdin)
		fclose(f);
}

/*
 * A problem of the profile file: "PATH:LINE: ..." as the parser says it;
 * one of the whole file ("PATH: cannot open ...") at the profiles=
 * argument that names it, or at line 0 of a file given by --profiles.
 */
static void profile_problem(struct check *c, const char *path, bool given,
			    const char *msg)
{
	size_t n = strlen(path);
	bool whole = strncmp(msg, path, n) == 0 && msg[n] == ':' &&
		     msg[n + 1] == ' ';

	if (!whole)
		problem(c, "%s", msg);
	else if (given || !c->line_no)
		problem(c, "%s:0:%s", path, msg + n + 1);
	else
		problem(c, "%s:%u: profiles=%s", c->line_file, c->line_no, msg);
}

/* The profile file, and default_profiles= resolved against it. */
static void check_profiles(struct check *c, const char *path, bool given,
			   char *summary, size_t len)
{
	struct sn_profile_request none = { 0 };
	struct sn_profile_set set = { 0 };
	struct sn_plan plan = { 0 };
	struct sn_error err;

	if (sn_profile_set_load(&set, path, &err) < 0) {
		profile_problem(c, path, given, err.msg);
		return;
	}
	if (sn_resolve(&set, &c->cfg.default_profiles, &none, &plan, &err) < 0)
		problem(c, "%s:%u: %s", c->line_file, c->line_no, err.msg);
	else
		sn_plan_free(&plan);
	snprintf(summary, len, "%s: %zu profiles, %zu rules", path,
		 set.n_profiles, set.n_rules);
	sn_profile_set_free(&set);
}

/* nccl-warmup-prolog --check: its problems, or its OK line. */
static void check_prolog(struct check *c, const char *prolog,
			 const char *conf, char *summary, size_t len)
{
	char buf[4096];
	int fds[2], status;
	FILE *out;
	pid_t pid;

	snprintf(summary, len, "no %s here", prolog);
	if (access(prolog, X_OK) != 0)
		return;
	if (pipe(fds) < 0 || (pid = fork()) < 0) {
		problem(c, "%s:0: cannot run it: %s", prolog, strerror(errno));
		return;
	}
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		if (conf)
			setenv("NCCL_WARMUP_PROLOG_CONF", conf, 1);
		execl(prolog, prolog, "--check", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	out = fdopen(fds[0], "r");
	while (out && fgets(buf, sizeof(buf), out)) {
		buf[strcspn(buf, "\n")] = '\0';
		if (strncmp(buf, "spank-nccl: ", 12) == 0)
			snprintf(summary, len, "%s", buf + 12);
		else
			problem(c, "%s", buf);
	}
	if (out)
		fclose(out);
	else
		close(fds[0]);
	if (waitpid(pid, &status, 0) < 0 ||
	    (WIFEXITED(status) && WEXITSTATUS(status) > 1) ||
	    !WIFEXITED(status))
		problem(c, "%s:0: --check did not run to the end; run %s --check",
			prolog, prolog);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "plugstack", required_argument, NULL, 'p' },
		{ "profiles", required_argument, NULL, 'f' },
		{ "prolog", required_argument, NULL, 'P' },
		{ "prolog-conf", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *plugstack = SYSCONFDIR "/plugstack.conf";
	const char *prolog = LIBEXECDIR "/nccl-warmup-prolog";
	const char *profiles = NULL, *prolog_conf = NULL;
	char prof_summary[PATH_MAX + 64] = "", prolog_summary[PATH_MAX + 256];
	struct check c = { 0 };
	int opt;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p': plugstack = optarg; break;
		case 'f': profiles = optarg; break;
		case 'P': prolog = optarg; break;
		case 'c': prolog_conf = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	sn_config_defaults(&c.cfg);
	scan_file(&c, plugstack, 0);
	if (c.n_lines == 0 && c.problems == 0)
		problem(&c, "%s:0: no %s line, here or in its includes; add \"required %s\" (see spank-nccl(8))",
			plugstack, PLUGIN_NAME, PLUGIN_NAME);
	check_profiles(&c, profiles ? profiles : c.cfg.profiles_path,
		       profiles != NULL, prof_summary, sizeof(prof_summary));
	check_prolog(&c, prolog, prolog_conf, prolog_summary, sizeof(prolog_summary));
	if (c.problems) {
		fprintf(stderr, "spank-nccl: check: %u problem%s\n", c.problems,
			c.problems == 1 ? "" : "s");
		return 1;
	}
	printf("spank-nccl: check OK: %s:%u, %d arguments; %s; %s\n",
	       c.line_file, c.line_no, c.n_args, prof_summary, prolog_summary);
	return 0;
}

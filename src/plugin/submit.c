/* SPDX-License-Identifier: MIT */
/*
 * srun, sbatch and salloc: everything that can be refused is refused here,
 * at submit time, while nothing is queued yet (an option callback failure
 * makes srun/sbatch/salloc exit 255; an init_post_opt failure exits 1).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/cmdline.h"
#include "profiles/env_apply.h"
#include "base/envlist.h"
#include "plugin.h"
#include "base/strutil.h"
#include "spank_wrap.h"

extern char **environ;

static bool site_default(const struct sn_profile_request *defaults,
			 const char *name)
{
	for (size_t i = 0; !defaults->none && i < defaults->count; i++)
		if (strcmp(defaults->names[i], name) == 0)
			return true;
	return false;
}

/* Each profile: its name (" *" for a site default), description and what
 * it sets, in the file's words. */
static void print_profile_list(const struct sn_profile_set *set,
			       const struct sn_profile_request *defaults)
{
	char ops[1024], name[40];
	bool any_default = false;
	size_t i;

	printf("spank-nccl: profiles in %s:\n", set->path);
	for (i = 0; i < set->n_profiles; i++) {
		const struct sn_profile *prof = &set->profiles[i];
		bool site = site_default(defaults, prof->name);

		any_default = any_default || site;
		snprintf(name, sizeof(name), "%s%s", prof->name,
			 site ? " *" : "");
		sn_profile_ops_format(prof, ops, sizeof(ops));
		printf("  %-24s %s\n  %-24s %s\n", name,
		       prof->description ? prof->description : "", "", ops);
	}
	if (set->n_profiles == 0)
		printf("  (none)\n");
	if (any_default)
		printf("  * a site default: applied to every step (default_profiles=) unless --nccl-profile=none\n");
	fflush(stdout);
}

/*
 * Error rules are checked against what the tasks would see if the step
 * started from this environment: the submitting shell's variables with
 * the plan applied.  slurmstepd checks again on the real job environment.
 */
static int check_error_rules(struct sn_plugin *p, const char *source)
{
	struct sn_apply_report report = { 0 };
	struct sn_envlist list;
	struct sn_env env;
	struct sn_error err;
	int rc;

	if (sn_envlist_init_from(&list, environ) < 0) {
		sn_log_error("%s: out of memory", source);
		return -1;
	}
	sn_envlist_bind(&list, &env);
	if (sn_plan_apply(&p->plan, &env, &report, &err) < 0) {
		sn_log_error("%s: %s", source, err.msg);
		rc = -1;
		goto out;
	}
	rc = sn_rules_report(p, &env, source, true);
out:
	sn_apply_report_free(&report);
	sn_envlist_free(&list);
	return rc;
}

int sn_submit_check_profiles(struct sn_plugin *p, const char *source)
{
	struct sn_error err;
	int rc;

	if (p->profile_req.list) {
		if (sn_profiles_load(p, &err) < 0) {
			sn_log_error("%s=list: %s", source, err.msg);
			return -1;
		}
		print_profile_list(&p->profiles, &p->cfg.default_profiles);
		exit(0);
	}
	if (!sn_plan_needed(p))
		return 0;
	rc = sn_plan_prepare(p, &err);
	if (rc > 0) {
		sn_log_user("warning: site default profiles not applied: %s",
			     err.msg);
		return 0;
	}
	if (rc < 0) {
		sn_log_error("%s: %s", source, err.msg);
		return -1;
	}
	return check_error_rules(p, source);
}

int sn_submit_post_opt(struct sn_plugin *p)
{
	struct sn_error err;
	const char *value;

	if (!p->profile_req.given) {
		value = getenv(SN_ENV_PROFILE);
		if (value) {
			if (sn_profile_option_parse(value, &p->profile_req,
						    &err) < 0) {
				sn_log_error("%s=%s: %s", SN_ENV_PROFILE, value,
					     err.msg);
				return -1;
			}
			if (sn_submit_check_profiles(p, SN_ENV_PROFILE) < 0)
				return -1;
		} else if (sn_submit_check_profiles(p, "default_profiles") < 0) {
			return -1;
		}
	}
	if (!p->warmup_req.given) {
		value = getenv(SN_ENV_WARMUP);
		if (value && sn_warmup_option_parse(value, &p->warmup_req,
						    &err) < 0) {
			sn_log_error("%s=%s: %s", SN_ENV_WARMUP, value, err.msg);
			return -1;
		}
	}
	return 0;
}

/*
 * The trap of an optional value.  --nccl-warmup's value is optional
 * (has_arg=2), and getopt_long takes an optional value only after '=':
 * in "srun --nccl-warmup comm f1 f2" the option is bare and srun runs
 * coreutils' comm after a warmup in the site's mode; "--nccl-warmup
 * check hostname" fails with "execve(): check".  A word right after a
 * bare --nccl-warmup that the option would take as its value (a mode,
 * "verbose", "comm,fresh", "nccl=/x") is refused: it is far more often
 * a forgotten '=' than a program's name.  Only the exact words are
 * refused; "comm.sh" or "./comm" run as typed,
 * which is the way to run such a program on purpose.
 * (--nccl-profile has no such trap: its value is required (has_arg=1),
 * so "--nccl-profile list" takes the next word as the value.)
 */
static bool is_warmup_value(const char *word)
{
	struct sn_warmup_request req;
	struct sn_error err;

	return !sn_option_value_absent(word) &&
	       sn_warmup_option_parse(word, &req, &err) == 0;
}

/* The program WORD names on this host's PATH, into BUF; false if none. */
static bool find_program(const char *word, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	const char *dir, *end;
	int n;

	if (!path || strchr(word, '/'))
		return false;
	for (dir = path; *dir; dir = *end ? end + 1 : end) {
		end = strchrnul(dir, ':');
		if (end == dir)
			continue;
		n = snprintf(buf, len, "%.*s/%s", (int)(end - dir), dir, word);
		if (n > 0 && (size_t)n < len && access(buf, X_OK) == 0)
			return true;
	}
	return false;
}

static void refuse_mode_as_program(const char *word)
{
	char shown[64];
	char path[PATH_MAX];
	char program[PATH_MAX];

	sn_str_printable(shown, sizeof(shown), word);
	sn_log_error("\"--nccl-warmup %s\" runs the program \"%s\"; write --nccl-warmup=%s",
		     shown, shown, shown);
	/* "comm,verbose" or "nccl=/x" is no program's name: no second line. */
	if (strpbrk(word, ",="))
		return;
	if (find_program(word, path, sizeof(path)))
		sn_str_printable(program, sizeof(program), path);
	else
		snprintf(program, sizeof(program), "./%s", shown);
	sn_log_error("to run a program named %s with the site's default warmup, give its path: --nccl-warmup %s",
		     shown, program);
}

int sn_submit_bare_warmup(struct sn_plugin *p)
{
	struct sn_cmdline cl;
	enum sn_next_word where;
	const char *word;
	int rc = 0;

	if (sn_launcher_cmdline(&cl) < 0) {
		p->warmup_unplaced = true;
		return 0;
	}
	where = sn_cmdline_word_after(&cl, sn_launcher_optind(),
				      "--nccl-warmup", &word);
	if (where == SN_NEXT_UNKNOWN) {
		/* An #SBATCH line, or a command line Slurm split otherwise. */
		p->warmup_unplaced = true;
	} else if (where == SN_NEXT_WORD && is_warmup_value(word)) {
		refuse_mode_as_program(word);
		rc = -1;
	}
	sn_cmdline_free(&cl);
	return rc;
}

/*
 * srun only, when the option could not be placed on the command line:
 * S_JOB_ARGV, the command srun is about to launch.  Slurm answers it in
 * srun only from local_user_init: _check_spank_item_validity() (called
 * by spank_get_item(), src/common/plugstack.c in 22.05, spank.c since
 * 23.02) makes S_JOB_ARGV valid in local context but ESPANK_NOT_AVAIL
 * while spank->job is NULL, i.e. in init, the option callbacks and
 * init_post_opt, and ESPANK_BAD_ARG in sbatch/salloc; the same in 22.05,
 * 24.11 and 26.05.  local_user_init runs after the allocation and the
 * step were created; a failure there makes srun abort the step before
 * any task starts and exit 1 ("Failure in local plugin stack",
 * pre_launch_srun_job() in srun_job.c), so the command-line check above,
 * which runs before anything is queued, comes first.  Here the word can only be
 * compared, not placed: it is refused whatever came between.
 */
int sn_submit_local_user_init(struct sn_plugin *p, spank_t sp)
{
	char **argv = NULL;
	int argc = 0;

	if (!p->warmup_unplaced)
		return 0;
	if (sn_spank_job_argv(sp, &argc, &argv) < 0 || argc < 1 || !argv ||
	    !argv[0] || !is_warmup_value(argv[0]))
		return 0;
	refuse_mode_as_program(argv[0]);
	return -1;
}

/* SPDX-License-Identifier: MIT */
/*
 * The plugin's hook logic, driven through the mock SPANK layer: what
 * srun/sbatch refuse at submit time, and what slurmstepd applies and
 * prints.  Warmup steps: test_plugin_warmup.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin_testutil.h"

/* ---- submit side (srun/sbatch/salloc) -------------------------------- */

static void submit_accepts_known_profiles(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(init_with(fx, S_CTX_LOCAL, NULL, NULL), 0);
	assert_int_equal(sn_option_profile(&fx->p, "cumem,segs", 0), 0);
	assert_int_equal(sn_submit_post_opt(&fx->p), 0);
	assert_int_equal(mock_spank()->n_errors, 0);
}

static void submit_refuses_unknown_profile(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(init_with(fx, S_CTX_LOCAL, NULL, NULL), 0);
	assert_int_equal(sn_option_profile(&fx->p, "nope", 0), -1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"nope"));
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"cumem"));	/* lists known ones */
}

static void submit_refuses_conflicting_profiles(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(init_with(fx, S_CTX_ALLOCATOR, NULL, NULL), 0);
	assert_int_equal(sn_option_profile(&fx->p, "tree,ring", 0), -1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"tree"));
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"ring"));
}

static void submit_refuses_malformed_value(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(init_with(fx, S_CTX_LOCAL, NULL, NULL), 0);
	assert_int_equal(sn_option_profile(&fx->p, "a b", 0), -1);
	assert_int_equal(sn_option_warmup(&fx->p, "bogus", 0), -1);
	assert_int_equal(mock_spank()->n_errors, 2);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"--nccl-warmup"));
}

static void submit_refuses_error_rule(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(init_with(fx, S_CTX_LOCAL, NULL, NULL), 0);
	assert_int_equal(sn_option_profile(&fx->p, "segs,register", 0), -1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"rule \"ub\""));
}

static void submit_env_var_form_and_cli_wins(void **state)
{
	struct fixture *fx = *state;

	setenv(SN_ENV_PROFILE, "nope", 1);
	assert_int_equal(init_with(fx, S_CTX_LOCAL, NULL, NULL), 0);
	assert_int_equal(sn_submit_post_opt(&fx->p), -1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				SN_ENV_PROFILE));
	sn_plugin_fini(&fx->p);

	/* The command line wins: the bad env var is never looked at. */
	assert_int_equal(init_with(fx, S_CTX_LOCAL, NULL, NULL), 0);
	assert_int_equal(sn_option_profile(&fx->p, "cumem", 0), 0);
	assert_int_equal(sn_submit_post_opt(&fx->p), 0);
	unsetenv(SN_ENV_PROFILE);
}

static void submit_config_error_refuses(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(init_with(fx, S_CTX_LOCAL, NULL, "warmup_timeout=x"),
			 -1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"warmup_timeout"));
}

/* ---- a mode typed after a bare --nccl-warmup (issue 25) -------------- */

/*
 * Runs the callback as srun/sbatch/salloc do for a bare --nccl-warmup on
 * LINE, with getopt's optind at OPTIND; the callback's result.
 */
static int bare_warmup_on(struct fixture *fx, spank_context_t ctx,
			  const char *const *line, size_t n, int optind)
{
	assert_int_equal(init_with(fx, ctx, NULL, NULL), 0);
	mock_spank()->cmdline = line;
	mock_spank()->cmdline_n = n;
	mock_spank()->optind = optind;
	return sn_option_warmup(&fx->p, NULL, 0);
}

#define LINE(...) (const char *const[]){ __VA_ARGS__ }, \
	sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(const char *)

static void submit_refuses_mode_run_as_program(void **state)
{
	struct fixture *fx = *state;
	char *old_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	char comm[160], want[256];

	/* A comm on PATH: the second line names it. */
	snprintf(comm, sizeof(comm), "%s/comm", fx->dir);
	write_file(comm, "#!/bin/sh\n", 0755);
	setenv("PATH", fx->dir, 1);
	assert_int_equal(bare_warmup_on(fx, S_CTX_LOCAL,
			 LINE("srun", "--nccl-warmup", "comm", "f1", "f2"), 2),
			 -1);
	assert_int_equal(mock_spank()->n_errors, 2);
	assert_string_equal(mock_spank()->errors[0],
			    "\"--nccl-warmup comm\" runs the program \"comm\"; write --nccl-warmup=comm");
	snprintf(want, sizeof(want), "to run a program named comm with the site's default warmup, give its path: --nccl-warmup %s",
		 comm);
	assert_string_equal(mock_spank()->errors[1], want);
	unlink(comm);
	if (old_path)
		setenv("PATH", old_path, 1);
	free(old_path);

	/* Not on PATH: ./WORD. sbatch and salloc alike. */
	sn_plugin_fini(&fx->p);
	assert_int_equal(bare_warmup_on(fx, S_CTX_ALLOCATOR,
			 LINE("sbatch", "-N", "1", "--nccl-w", "check"), 4), -1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"\"--nccl-warmup check\" runs the program \"check\"; write --nccl-warmup=check"));
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"give its path: --nccl-warmup ./check"));
}

static void submit_refuses_every_value_word(void **state)
{
	static const char *const words[] = {
		"off", "check", "comm", "bandwidth", "fabric", "verbose",
		"fresh", "comm,verbose", "fabric,fresh,verbose", "CHECK",
		"nccl=/opt/nccl/lib", "check,nccl=/x",
	};
	struct fixture *fx = *state;
	size_t i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (bare_warmup_on(fx, S_CTX_LOCAL,
				   LINE("srun", "--nccl-warmup", words[i],
					"x"), 2) != -1)
			fail_msg("\"srun --nccl-warmup %s x\" was not refused",
				 words[i]);
		/* The path hint only for a word that can name a program. */
		assert_int_equal(mock_spank()->n_errors,
				 strpbrk(words[i], ",=") ? 1 : 2);
		sn_plugin_fini(&fx->p);
	}
}

static void submit_keeps_programs_and_options(void **state)
{
	static const char *const words[] = {
		"comm.sh", "./comm", "/usr/bin/comm", "python", "check2",
		"comm,", "nccl=rel", "-", "(null)",
	};
	struct fixture *fx = *state;
	size_t i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (bare_warmup_on(fx, S_CTX_LOCAL,
				   LINE("srun", "--nccl-warmup", words[i]), 2)
		    != 0)
			fail_msg("\"srun --nccl-warmup %s\" was refused",
				 words[i]);
		assert_int_equal(mock_spank()->n_errors, 0);
		assert_false(fx->p.warmup_unplaced);
		sn_plugin_fini(&fx->p);
	}
	/* Another option in between: the user ended the option. */
	assert_int_equal(bare_warmup_on(fx, S_CTX_LOCAL,
			 LINE("srun", "--nccl-warmup", "-N1", "comm"), 2), 0);
	assert_false(fx->p.warmup_unplaced);
	/* ... and srun's local_user_init does not second-guess it. */
	mock_spank()->job_argv = (char *[]){ "comm", NULL };
	mock_spank()->job_argc = 1;
	assert_int_equal(sn_submit_local_user_init(&fx->p, mock_spank_handle()),
			 0);
	sn_plugin_fini(&fx->p);
	/* The batch script's name may start like a mode. */
	assert_int_equal(bare_warmup_on(fx, S_CTX_ALLOCATOR,
			 LINE("sbatch", "--nccl-warmup", "comm.sh"), 2), 0);
	assert_int_equal(fx->p.warmup_req.mode, SN_WARMUP_MODE_UNSET);
}

static void submit_inherited_bare_option_is_not_checked(void **state)
{
	struct fixture *fx = *state;

	/* "(null)": from #SBATCH --nccl-warmup through the environment. */
	assert_int_equal(init_with(fx, S_CTX_LOCAL, NULL, NULL), 0);
	mock_spank()->cmdline = (const char *const[]){ "srun", "check" };
	mock_spank()->cmdline_n = 2;
	mock_spank()->optind = 2;
	assert_int_equal(sn_option_warmup(&fx->p, "(null)", 0), 0);
	assert_false(fx->p.warmup_unplaced);
	/* slurmstepd: "". */
	assert_int_equal(sn_option_warmup(&fx->p, "", 1), 0);
	assert_int_equal(mock_spank()->n_errors, 0);
}

static void submit_unplaced_option_checks_job_argv(void **state)
{
	struct fixture *fx = *state;
	spank_t sp = mock_spank_handle();

	/* An #SBATCH line: its own argv, not the command line. */
	assert_int_equal(bare_warmup_on(fx, S_CTX_ALLOCATOR,
			 LINE("sbatch", "job.sh"), 2), 0);
	assert_true(fx->p.warmup_unplaced);
	assert_int_equal(mock_spank()->n_errors, 0);
	/* A later value replaces the bare option: nothing left to check. */
	assert_int_equal(sn_option_warmup(&fx->p, "check", 0), 0);
	assert_false(fx->p.warmup_unplaced);
	sn_plugin_fini(&fx->p);

	/* srun, command line unreadable: S_JOB_ARGV decides. */
	assert_int_equal(init_with(fx, S_CTX_LOCAL, NULL, NULL), 0);
	assert_int_equal(sn_option_warmup(&fx->p, NULL, 0), 0);
	assert_true(fx->p.warmup_unplaced);
	assert_int_equal(sn_submit_local_user_init(&fx->p, sp), 0); /* no item */
	mock_spank()->job_argv = (char *[]){ "hostname", NULL };
	mock_spank()->job_argc = 1;
	assert_int_equal(sn_submit_local_user_init(&fx->p, sp), 0);
	mock_spank()->job_argv = (char *[]){ "fabric", "x", NULL };
	mock_spank()->job_argc = 2;
	assert_int_equal(sn_submit_local_user_init(&fx->p, sp), -1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"\"--nccl-warmup fabric\" runs the program \"fabric\"; write --nccl-warmup=fabric"));
}

/* ---- slurmstepd ------------------------------------------------------ */

static void step_applies_profiles_to_job_env(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128", NULL };
	spank_t sp = mock_spank_handle();

	assert_int_equal(init_with(fx, S_CTX_REMOTE, env, NULL), 0);
	/* slurmstepd calls the callback twice: must be harmless. */
	assert_int_equal(sn_option_profile(&fx->p, "cumem,segs", 1), 0);
	assert_int_equal(sn_option_profile(&fx->p, "cumem,segs", 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	assert_int_equal(sn_step_task_init(&fx->p, sp), 0);
	assert_string_equal(job_env("NCCL_CUMEM_ENABLE"), "0");
	assert_string_equal(job_env("PYTORCH_CUDA_ALLOC_CONF"),
			    "max_split_size_mb:128,expandable_segments:True");
	assert_int_equal(mock_spank()->n_errors, 0);
}

static void step_last_option_value_wins(void **state)
{
	struct fixture *fx = *state;
	spank_t sp = mock_spank_handle();

	/* #SBATCH --nccl-profile=tree inherited, then srun --nccl-profile=ring */
	assert_int_equal(init_with(fx, S_CTX_REMOTE, NULL, NULL), 0);
	assert_int_equal(sn_option_profile(&fx->p, "tree", 1), 0);
	assert_int_equal(sn_option_profile(&fx->p, "ring", 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	assert_string_equal(job_env("NCCL_ALGO"), "Ring");
}

static void step_user_value_wins_and_is_reported_once(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "NCCL_ALGO=Ring", NULL };
	spank_t sp = mock_spank_handle();

	assert_int_equal(init_with(fx, S_CTX_REMOTE, env, NULL), 0);
	assert_int_equal(sn_option_profile(&fx->p, "tree", 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	assert_string_equal(job_env("NCCL_ALGO"), "Ring");
	assert_true(mock_logged(mock_spank()->user, mock_spank()->n_user,
				"NCCL_ALGO"));
	sn_plugin_fini(&fx->p);

	/* Node 1 of the same step applies the same but prints nothing. */
	assert_int_equal(init_with(fx, S_CTX_REMOTE, env, NULL), 0);
	mock_spank()->ids.node_id = 1;
	assert_int_equal(sn_option_profile(&fx->p, "tree", 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	assert_int_equal(mock_spank()->n_user, 0);
}

static void step_own_profile_replaces_inherited_one(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "NCCL_CUMEM_ENABLE=0", NULL };
	spank_t sp = mock_spank_handle();
	char *batch_env[64];
	size_t i;

	/* The batch step (#SBATCH --nccl-profile=cumem) applies and records. */
	assert_int_equal(init_with(fx, S_CTX_REMOTE, NULL, NULL), 0);
	assert_int_equal(sn_option_profile(&fx->p, "cumem", 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	assert_string_equal(job_env("NCCL_CUMEM_ENABLE"), "0");
	assert_non_null(job_env("SPANK_NCCL_APPLIED"));
	for (i = 0; i < mock_spank()->env.n && i < 63; i++)
		batch_env[i] = strdup(mock_spank()->env.vars[i]);
	batch_env[i] = NULL;
	sn_plugin_fini(&fx->p);

	/* srun --nccl-profile=tree inside the script inherits that env. */
	assert_int_equal(init_with(fx, S_CTX_REMOTE, batch_env, NULL), 0);
	assert_int_equal(sn_option_profile(&fx->p, "cumem", 1), 0);
	assert_int_equal(sn_option_profile(&fx->p, "tree", 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	assert_null(job_env("NCCL_CUMEM_ENABLE"));
	assert_string_equal(job_env("NCCL_ALGO"), "Tree");
	assert_int_equal(mock_spank()->n_user, 0);	/* nothing "kept" */
	for (i = 0; batch_env[i]; i++)
		free(batch_env[i]);
	sn_plugin_fini(&fx->p);

	/* A value the user set themselves is never taken away. */
	assert_int_equal(init_with(fx, S_CTX_REMOTE, env, NULL), 0);
	assert_int_equal(sn_option_profile(&fx->p, "tree", 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	assert_string_equal(job_env("NCCL_CUMEM_ENABLE"), "0");
}

static void step_profile_none_drops_inherited_values(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "NCCL_ALGO=Tree",
			"SPANK_NCCL_APPLIED=NCCL_ALGO=-:54726565", NULL };
	spank_t sp = mock_spank_handle();

	assert_int_equal(init_with(fx, S_CTX_REMOTE, env, NULL), 0);
	assert_int_equal(sn_option_profile(&fx->p, "none", 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	assert_null(job_env("NCCL_ALGO"));
	assert_null(job_env("SPANK_NCCL_APPLIED"));
}

static void step_env_var_form(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { SN_ENV_PROFILE "=cumem", NULL };
	spank_t sp = mock_spank_handle();

	assert_int_equal(init_with(fx, S_CTX_REMOTE, env, NULL), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	assert_string_equal(job_env("NCCL_CUMEM_ENABLE"), "0");
}

static void step_warning_rule_printed_on_first_node(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "NCCL_DEBUG=info", NULL };
	spank_t sp = mock_spank_handle();

	assert_int_equal(init_with(fx, S_CTX_REMOTE, env, NULL), 0);
	assert_int_equal(sn_option_profile(&fx->p, "cumem", 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	assert_int_equal(sn_step_task_init(&fx->p, sp), 0);
	assert_int_equal(mock_spank()->n_user, 1);
	assert_true(mock_logged(mock_spank()->user, mock_spank()->n_user,
				"debug-info"));
}

static void step_error_rule_fails_tasks(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK=1",
			NULL };
	spank_t sp = mock_spank_handle();

	assert_int_equal(init_with(fx, S_CTX_REMOTE, env, NULL), 0);
	assert_int_equal(sn_option_profile(&fx->p, "segs", 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	assert_int_equal(sn_step_task_init(&fx->p, sp), -1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"rule \"ub\""));
}

static void step_setenv_failure_fails_tasks(void **state)
{
	struct fixture *fx = *state;
	spank_t sp = mock_spank_handle();

	assert_int_equal(init_with(fx, S_CTX_REMOTE, NULL, NULL), 0);
	mock_spank()->setenv_fail_after = 2;
	assert_int_equal(sn_option_profile(&fx->p, "cumem,tree", 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	assert_int_equal(sn_step_task_init(&fx->p, sp), -1);
	/* Nothing half-applied. */
	assert_null(job_env("NCCL_CUMEM_ENABLE"));
	assert_null(job_env("NCCL_ALGO"));
}

static void step_broken_config_never_fails_init(void **state)
{
	struct fixture *fx = *state;
	spank_t sp = mock_spank_handle();

	assert_int_equal(init_with(fx, S_CTX_REMOTE, NULL, "bogus=1"), 0);
	/* Unused: the step runs. */
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	assert_int_equal(sn_step_task_init(&fx->p, sp), 0);
	sn_plugin_fini(&fx->p);

	/* Used: the step fails with the reason. */
	assert_int_equal(init_with(fx, S_CTX_REMOTE, NULL, "bogus=1"), 0);
	assert_int_equal(sn_option_profile(&fx->p, "cumem", 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	assert_int_equal(sn_step_task_init(&fx->p, sp), -1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"plugstack.conf"));
}

static void step_broken_profile_file_names_file_and_line(void **state)
{
	struct fixture *fx = *state;
	spank_t sp = mock_spank_handle();

	write_file(fx->profiles, "[profile x]\nset NOPE\n", 0644);
	assert_int_equal(init_with(fx, S_CTX_REMOTE, NULL, NULL), 0);
	assert_int_equal(sn_option_profile(&fx->p, "x", 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	assert_int_equal(sn_step_task_init(&fx->p, sp), -1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"profiles.conf:2"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(submit_accepts_known_profiles),
		T(submit_refuses_unknown_profile),
		T(submit_refuses_conflicting_profiles),
		T(submit_refuses_malformed_value),
		T(submit_refuses_error_rule),
		T(submit_env_var_form_and_cli_wins),
		T(submit_config_error_refuses),
		T(submit_refuses_mode_run_as_program),
		T(submit_refuses_every_value_word),
		T(submit_keeps_programs_and_options),
		T(submit_inherited_bare_option_is_not_checked),
		T(submit_unplaced_option_checks_job_argv),
		T(step_applies_profiles_to_job_env),
		T(step_last_option_value_wins),
		T(step_user_value_wins_and_is_reported_once),
		T(step_own_profile_replaces_inherited_one),
		T(step_profile_none_drops_inherited_values),
		T(step_env_var_form),
		T(step_warning_rule_printed_on_first_node),
		T(step_error_rule_fails_tasks),
		T(step_setenv_failure_fails_tasks),
		T(step_broken_config_never_fails_init),
		T(step_broken_profile_file_names_file_and_line),
#undef T
	};

	return cmocka_run_group_tests_name("plugin", tests, NULL, NULL);
}

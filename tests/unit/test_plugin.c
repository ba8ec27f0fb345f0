/* SPDX-License-Identifier: MIT */
/*
 * The plugin's hook logic, driven through the mock SPANK layer: what
 * srun/sbatch refuse at submit time, what slurmstepd applies and prints,
 * and how warmup failures turn into task_init failures.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "mock_spank.h"
#include "plugin.h"

static const char profiles_text[] =
	"[profile cumem]\n"
	"description = cuMem off\n"
	"set NCCL_CUMEM_ENABLE=0\n"
	"[profile tree]\n"
	"description = tree\n"
	"set NCCL_ALGO=Tree\n"
	"[profile ring]\n"
	"description = ring\n"
	"set NCCL_ALGO=Ring\n"
	"[profile segs]\n"
	"description = expandable segments\n"
	"merge PYTORCH_CUDA_ALLOC_CONF expandable_segments:True\n"
	"[profile register]\n"
	"description = registers allocator with NCCL\n"
	"set TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK=1\n"
	"[rule debug-info]\n"
	"level = warning\n"
	"message = NCCL_DEBUG=INFO slows weight sync\n"
	"when NCCL_DEBUG = INFO|TRACE\n"
	"[rule ub]\n"
	"level = error\n"
	"message = expandable segments break NCCL buffer registration\n"
	"when PYTORCH_CUDA_ALLOC_CONF has expandable_segments:True\n"
	"when TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK = 1\n";

struct fixture {
	char dir[64];
	char profiles[128];
	char helper[128];
	char arg_profiles[160];
	char arg_helper[160];
	char arg_reuse[160];
	struct sn_plugin p;
};

/* Removes DIR/SUB/<job dir>/<record> and the directories (two levels). */
static void remove_tree(const char *dir, const char *sub)
{
	char path[512], inner[1024], leaf[1536];
	struct dirent *a, *b;
	DIR *da, *db;

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	da = opendir(path);
	while (da && (a = readdir(da))) {
		if (a->d_name[0] == '.')
			continue;
		snprintf(inner, sizeof(inner), "%s/%s", path, a->d_name);
		db = opendir(inner);
		while (db && (b = readdir(db))) {
			snprintf(leaf, sizeof(leaf), "%s/%s", inner, b->d_name);
			if (strcmp(b->d_name, ".") && strcmp(b->d_name, ".."))
				unlink(leaf);
		}
		if (db)
			closedir(db);
		rmdir(inner);
	}
	if (da)
		closedir(da);
	rmdir(path);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	snprintf(fx->dir, sizeof(fx->dir), "/tmp/sn-plugin-XXXXXX");
	if (!fx || !mkdtemp(fx->dir))
		return -1;
	chmod(fx->dir, 0755);
	snprintf(fx->profiles, sizeof(fx->profiles), "%s/profiles.conf",
		 fx->dir);
	snprintf(fx->helper, sizeof(fx->helper), "%s/helper", fx->dir);
	write_file(fx->profiles, profiles_text, 0644);
	snprintf(fx->arg_profiles, sizeof(fx->arg_profiles), "profiles=%s",
		 fx->profiles);
	snprintf(fx->arg_helper, sizeof(fx->arg_helper), "warmup_helper=%s",
		 fx->helper);
	/* Warmup records in the fixture, never in the host's /run. */
	snprintf(fx->arg_reuse, sizeof(fx->arg_reuse),
		 "warmup_reuse_dir=%s/reuse", fx->dir);
	unsetenv(SN_ENV_PROFILE);
	unsetenv(SN_ENV_WARMUP);
	unsetenv("NCCL_DEBUG");
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	sn_plugin_fini(&fx->p);
	unlink(fx->profiles);
	unlink(fx->helper);
	remove_tree(fx->dir, "reuse");
	rmdir(fx->dir);
	free(fx);
	return 0;
}

static int init_with(struct fixture *fx, spank_context_t ctx,
		     char *const *env, const char *extra_arg)
{
	char *av[5] = { fx->arg_profiles, fx->arg_helper, fx->arg_reuse, NULL,
			 NULL };
	int ac = 3;

	if (extra_arg)
		av[ac++] = (char *)extra_arg;
	mock_spank_reset(ctx, env);
	return sn_plugin_init(&fx->p, mock_spank_handle(), ac, av);
}

static const char *job_env(const char *name)
{
	return sn_envlist_get(&mock_spank()->env, name);
}

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

/* ---- warmup ---------------------------------------------------------- */

static void write_helper(struct fixture *fx, const char *body)
{
	char script[4096];

	snprintf(script, sizeof(script), "#!/bin/sh\n%s\n", body);
	write_file(fx->helper, script, 0755);
}

static int run_warmup_step(struct fixture *fx, char *const *env,
			   const char *value, const char *extra_arg)
{
	spank_t sp = mock_spank_handle();

	assert_int_equal(init_with(fx, S_CTX_REMOTE, env, extra_arg), 0);
	/* Unprivileged test runs cannot switch users: run as ourselves. */
	mock_spank()->ids.uid = getuid();
	mock_spank()->ids.gid = getgid();
	assert_int_equal(sn_option_warmup(&fx->p, value, 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	return sn_step_task_init(&fx->p, sp);
}

static void warmup_skips_step_without_gpus(void **state)
{
	struct fixture *fx = *state;

	write_helper(fx, "exit 5");
	assert_int_equal(run_warmup_step(fx, NULL, NULL, NULL), 0);
	assert_true(mock_logged(mock_spank()->info, mock_spank()->n_info,
				"no GPUs"));
}

static void warmup_success_is_quiet(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "CUDA_VISIBLE_DEVICES=0,1", "SLURMD_NODENAME=n7", NULL };

	write_helper(fx, "echo '{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
			 "\"summary\":\"warmup ok on n7: 2 GPUs\"}'; exit 0");
	assert_int_equal(run_warmup_step(fx, env, "comm", NULL), 0);
	assert_int_equal(mock_spank()->n_user, 0);
	assert_int_equal(mock_spank()->n_errors, 0);
	assert_true(mock_logged(mock_spank()->info, mock_spank()->n_info,
				"passed"));
	sn_plugin_fini(&fx->p);

	/* fresh: the same job's pass above is not reused. */
	assert_int_equal(run_warmup_step(fx, env, "comm,verbose,fresh", NULL), 0);
	assert_true(mock_logged(mock_spank()->user, mock_spank()->n_user,
				"warmup ok on n7"));
}

/* Lines in the helper's run log: how many times it ran. */
static int helper_runs(struct fixture *fx)
{
	char path[192], line[64];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/runs", fx->dir);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		n++;
	if (f)
		fclose(f);
	return n;
}

static void warmup_reuse_within_a_job(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=2,3", NULL };
	char *env_other_gpus[] = { "CUDA_VISIBLE_DEVICES=0,1",
				   "SLURM_STEP_GPUS=0,1", NULL };
	char *env_nccl[] = { "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=2,3",
			     "NCCL_ALGO=Ring", NULL };
	char body[512], path[192], host[256];
	bool root = geteuid() == 0;
	struct stat st;
	int expect;

	snprintf(body, sizeof(body),
		 "echo run >> %s/runs; [ -e %s/fail ] && exit 5; "
		 "echo '{\"version\":1,\"status\":\"ok\",\"exit_code\":0}'; exit 0",
		 fx->dir, fx->dir);
	write_helper(fx, body);
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	assert_int_equal(run_warmup_step(fx, env, "comm", NULL), 0);
	assert_int_equal(helper_runs(fx), 1);
	sn_plugin_fini(&fx->p);

	/* Same job, node, GPUs, env: reused (only root can keep records). */
	assert_int_equal(run_warmup_step(fx, env, "check,verbose", NULL), 0);
	expect = root ? 1 : 2;
	assert_int_equal(helper_runs(fx), expect);
	if (root) {
		assert_true(mock_logged(mock_spank()->user, mock_spank()->n_user,
					"reused the comm-mode pass"));
		assert_true(mock_logged(mock_spank()->info, mock_spank()->n_info,
					"nccl-warmup reused"));
		snprintf(path, sizeof(path), "%s/reuse/job-42", fx->dir);
		assert_int_equal(lstat(path, &st), 0);
		assert_int_equal(st.st_uid, 0);
		assert_int_equal(st.st_mode & 0777, 0700);
	}
	sn_plugin_fini(&fx->p);

	/* A more thorough mode, other GPUs, other NCCL_*: warm again. */
	assert_int_equal(run_warmup_step(fx, env, "bandwidth", NULL), 0);
	assert_int_equal(helper_runs(fx), ++expect);
	sn_plugin_fini(&fx->p);
	assert_int_equal(run_warmup_step(fx, env_other_gpus, "comm", NULL), 0);
	assert_int_equal(helper_runs(fx), ++expect);
	sn_plugin_fini(&fx->p);
	assert_int_equal(run_warmup_step(fx, env_nccl, "comm", NULL), 0);
	assert_int_equal(helper_runs(fx), ++expect);
	sn_plugin_fini(&fx->p);

	/* A failure removes the pass: the next step warms up again. */
	snprintf(path, sizeof(path), "%s/fail", fx->dir);
	write_file(path, "", 0644);
	assert_int_equal(run_warmup_step(fx, env, "comm,fresh", NULL), -1);
	assert_int_equal(helper_runs(fx), ++expect);
	sn_plugin_fini(&fx->p);
	unlink(path);
	assert_int_equal(run_warmup_step(fx, env, "comm", NULL), 0);
	assert_int_equal(helper_runs(fx), ++expect);
	sn_plugin_fini(&fx->p);

	/* warmup_reuse=no: every step runs the helper. */
	assert_int_equal(run_warmup_step(fx, env, "comm", "warmup_reuse=no"), 0);
	assert_int_equal(helper_runs(fx), ++expect);
	sn_plugin_fini(&fx->p);

	/* Another job never sees this job's records. */
	{
		spank_t sp = mock_spank_handle();

		assert_int_equal(init_with(fx, S_CTX_REMOTE, env, NULL), 0);
		mock_spank()->ids.job_id = 43;
		mock_spank()->ids.uid = getuid();
		mock_spank()->ids.gid = getgid();
		assert_int_equal(sn_option_warmup(&fx->p, "comm", 1), 0);
		assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
		assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
		assert_int_equal(sn_step_task_init(&fx->p, sp), 0);
	}
	assert_int_equal(helper_runs(fx), ++expect);
	sn_plugin_fini(&fx->p);
	/* ... and its step removed job 42's: no slurmstepd of 42 runs here. */
	snprintf(path, sizeof(path), "%s/reuse/job-42", fx->dir);
	assert_int_equal(lstat(path, &st), -1);

	snprintf(path, sizeof(path), "%s/runs", fx->dir);
	unlink(path);
}

static void warmup_failure_fails_tasks_with_one_message(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "CUDA_VISIBLE_DEVICES=0,1", "SLURMD_NODENAME=n7", NULL };
	char host[256], node[300];

	write_helper(fx, "echo '{\"version\":1,\"status\":\"duplicate_busid\","
			 "\"exit_code\":3,\"message\":\"GPU 0 and GPU 1 both "
			 "report PCI bus ID 0000:01:00.0\"}'; exit 3");

	/* The node is named from slurmstepd's host name: the job's own
	 * SLURMD_NODENAME is the user's to set and must not be believed. */
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	snprintf(node, sizeof(node), "node %s ", host);
	assert_int_equal(run_warmup_step(fx, env, NULL, NULL), -1);
	assert_int_equal(mock_spank()->n_errors, 1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				node));
	assert_false(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				 "n7"));
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"0000:01:00.0"));
}

static void warmup_policy_warn_lets_step_run(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "CUDA_VISIBLE_DEVICES=0", NULL };

	write_helper(fx, "exit 5");
	assert_int_equal(run_warmup_step(fx, env, NULL, "warmup_policy=warn"),
			 0);
	assert_int_equal(mock_spank()->n_errors, 1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"warmup_policy=warn"));
}

static void warmup_timeout_kills_helper(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "CUDA_VISIBLE_DEVICES=0", NULL };

	write_helper(fx, "trap '' TERM; sleep 30");
	assert_int_equal(run_warmup_step(fx, env, NULL, "warmup_timeout=1"),
			 -1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"did not finish within 1 s"));
}

static void warmup_crash_is_reported(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "CUDA_VISIBLE_DEVICES=0", NULL };

	write_helper(fx, "echo 'about to crash' >&2; kill -SEGV $$");
	assert_int_equal(run_warmup_step(fx, env, NULL, NULL), -1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"signal 11"));
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"about to crash"));
}

static void warmup_missing_helper_is_reported(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "CUDA_VISIBLE_DEVICES=0", NULL };

	unlink(fx->helper);
	assert_int_equal(run_warmup_step(fx, env, NULL, NULL), -1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"could not execute"));
}

static void warmup_off_runs_nothing(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "CUDA_VISIBLE_DEVICES=0", NULL };

	write_helper(fx, "exit 5");
	assert_int_equal(run_warmup_step(fx, env, "off", NULL), 0);
	assert_int_equal(mock_spank()->n_errors, 0);
}

#define assert_contains(hay, needle) assert_non_null(strstr((hay), (needle)))
#define assert_not_contains(hay, needle) assert_null(strstr((hay), (needle)))

/* A step of NNODES nodes on node NODE_ID: run_warmup_step's fabric form. */
static int run_fabric_step(struct fixture *fx, char *const *env,
			   const char *value, const char *extra_arg,
			   uint32_t step_id, uint32_t node_id, uint32_t nnodes)
{
	spank_t sp = mock_spank_handle();

	assert_int_equal(init_with(fx, S_CTX_REMOTE, env, extra_arg), 0);
	mock_spank()->ids.uid = getuid();
	mock_spank()->ids.gid = getgid();
	mock_spank()->ids.step_id = step_id;
	mock_spank()->ids.node_id = node_id;
	mock_spank()->ids.nnodes = nnodes;
	assert_int_equal(sn_option_warmup(&fx->p, value, 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	return sn_step_task_init(&fx->p, sp);
}

/* The helper's last command line, one space after each argument. */
static void read_args(struct fixture *fx, char *args, size_t len)
{
	char path[192];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/args", fx->dir);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(args, 1, len - 1, f);
	args[n] = '\0';
	fclose(f);
	for (size_t i = 0; i < n; i++)
		if (args[i] == '\n')
			args[i] = ' ';
}

/* Runs a passing step 7 (run_fabric_step); its helper's argv in ARGS. */
static void fabric_args(struct fixture *fx, char *const *env,
			const char *value, const char *extra_arg,
			uint32_t node_id, uint32_t nnodes, char *args, size_t len)
{
	assert_int_equal(run_fabric_step(fx, env, value, extra_arg, 7, node_id,
					 nnodes), 0);
	sn_plugin_fini(&fx->p);
	read_args(fx, args, len);
}

static void warmup_fabric_passes_the_step(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "CUDA_VISIBLE_DEVICES=0,1",
			"SLURM_STEP_NODELIST=n[1-3]", NULL };
	char *env_no_list[] = { "CUDA_VISIBLE_DEVICES=0,1", NULL };
	char body[512], args[2048], path[512], host[256], argsfile[192];
	bool root = geteuid() == 0;
	int runs;

	assert_int_equal(gethostname(host, sizeof(host)), 0);
	snprintf(body, sizeof(body),
		 "echo run >> %s/runs; printf '%%s\\n' \"$@\" > %s/args; "
		 "echo '{\"version\":1,\"status\":\"ok\",\"exit_code\":0}'; exit 0",
		 fx->dir, fx->dir);
	write_helper(fx, body);
	fabric_args(fx, env, "fabric", "fabric_ports=31000-31009", 1, 3, args,
		    sizeof(args));
	assert_contains(args, "--mode fabric ");
	assert_contains(args, " --job-id 42 --step-id 7 --node-index 1 --nodes 3 --nodelist n[1-3] --fabric-ports 31000-31009 --fabric-transport any ");

	/* The site's transport policy; the default port range. */
	fabric_args(fx, env, "fabric", "fabric_transport=no-socket", 0, 3, args,
		    sizeof(args));
	assert_contains(args, " --node-index 0 --nodes 3 ");
	assert_contains(args, " --fabric-ports 29400-29499 --fabric-transport no-socket ");
	assert_not_contains(args, "--min-busbw");

	/* The inter-node floor, timed with warmup_bytes; never the
	 * bandwidth mode's warmup_min_busbw. */
	fabric_args(fx, env, "fabric", "fabric_min_busbw=12.5", 0, 3, args,
		    sizeof(args));
	assert_contains(args, " --bytes 67108864 --min-busbw 12.5 ");
	fabric_args(fx, env, "fabric", "warmup_min_busbw=300", 0, 3, args,
		    sizeof(args));
	assert_not_contains(args, "--min-busbw");
	/* Plain decimal, as the helper's parser wants it (no exponent). */
	fabric_args(fx, env, "fabric", "fabric_min_busbw=0.00001", 0, 3, args,
		    sizeof(args));
	assert_contains(args, " --min-busbw 0.00001 ");
	fabric_args(fx, env, "fabric", "fabric_min_busbw=100000", 0, 3, args,
		    sizeof(args));
	assert_contains(args, " --min-busbw 100000 ");

	/* Never reused: a fabric pass, nor a comm pass for a fabric step
	 * (even as root, where records are kept); the fabric pass leaves
	 * the comm pass usable (root). */
	runs = helper_runs(fx);
	fabric_args(fx, env, "comm", NULL, 0, 3, args, sizeof(args));
	assert_not_contains(args, "--nodelist");
	assert_not_contains(args, "--fabric-ports");
	fabric_args(fx, env, "fabric", NULL, 0, 3, args, sizeof(args));
	assert_int_equal(helper_runs(fx), runs + 2);
	fabric_args(fx, env, "check", NULL, 0, 3, args, sizeof(args));
	assert_int_equal(helper_runs(fx), runs + (root ? 2 : 3));
	fabric_args(fx, env, "fabric", NULL, 0, 3, args, sizeof(args));
	assert_int_equal(helper_runs(fx), runs + (root ? 3 : 4));

	/* The site default mode applies to a bare --nccl-warmup. */
	fabric_args(fx, env, NULL, "warmup_mode=fabric", 2, 3, args,
		    sizeof(args));
	assert_contains(args, "--mode fabric ");
	assert_contains(args, " --node-index 2 --nodes 3 ");

	/* A one-node step, and the batch step (no step node list): the
	 * node by itself. */
	snprintf(path, sizeof(path), " --node-index 0 --nodes 1 --nodelist %s ",
		 host);
	fabric_args(fx, env_no_list, "fabric", NULL, 0, 1, args, sizeof(args));
	assert_contains(args, path);
	snprintf(argsfile, sizeof(argsfile), "%s/args", fx->dir);
	unlink(argsfile);	/* the batch step's own run writes it again */
	assert_int_equal(run_fabric_step(fx, env_no_list, "fabric", NULL,
					 SLURM_BATCH_SCRIPT, 0, 3), 0);
	sn_plugin_fini(&fx->p);
	read_args(fx, args, sizeof(args));
	assert_contains(args, path);

	/* Below the inter-node floor: the network's hint, not NVLink's. */
	write_helper(fx, "echo '{\"version\":1,\"status\":\"low_bandwidth\","
			 "\"exit_code\":7,\"message\":\"inter-node all-reduce "
			 "bus bandwidth 7.1 GB/s is below the floor of 10 GB/s\"}'; exit 7");
	assert_int_equal(run_fabric_step(fx, env, "fabric", NULL, 7, 0, 3), -1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"7.1 GB/s is below the floor of 10 GB/s. the network between the step's nodes"));
	assert_false(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				 "NVLink"));
	sn_plugin_fini(&fx->p);
	write_helper(fx, body);

	/* No node list in a step of several nodes: the step fails, saying
	 * what is missing, and the helper does not run. */
	runs = helper_runs(fx);
	assert_int_equal(run_fabric_step(fx, env_no_list, "fabric", NULL, 7, 0,
					 3), -1);
	assert_int_equal(helper_runs(fx), runs);
	assert_int_equal(mock_spank()->n_errors, 1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"the job environment has no SLURM_STEP_NODELIST"));
	snprintf(path, sizeof(path), "%s/runs", fx->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/args", fx->dir);
	unlink(path);
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
		T(warmup_skips_step_without_gpus),
		T(warmup_success_is_quiet),
		T(warmup_reuse_within_a_job),
		T(warmup_failure_fails_tasks_with_one_message),
		T(warmup_policy_warn_lets_step_run),
		T(warmup_timeout_kills_helper),
		T(warmup_crash_is_reported),
		T(warmup_missing_helper_is_reported),
		T(warmup_off_runs_nothing),
		T(warmup_fabric_passes_the_step),
#undef T
	};

	return cmocka_run_group_tests_name("plugin", tests, NULL, NULL);
}

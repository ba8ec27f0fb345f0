/* SPDX-License-Identifier: MIT */
/*
 * The fixture shared by the plugin's hook tests (test_plugin.c,
 * test_plugin_warmup.c): a temporary directory with a profile file and a
 * helper script, the plugin initialised through the mock SPANK layer, and
 * the runs of a warmup step.
 */
#include "plugin_testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

int setup(void **state)
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

int teardown(void **state)
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

int init_with(struct fixture *fx, spank_context_t ctx,
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

const char *job_env(const char *name)
{
	return sn_envlist_get(&mock_spank()->env, name);
}

void write_helper(struct fixture *fx, const char *body)
{
	char script[4096];

	/* result JSON: on --result-fd, as nccl-warmup writes it. */
	snprintf(script, sizeof(script),
		 "#!/bin/sh\n"
		 "r=1; p=; for a in \"$@\"; do "
		 "[ \"$p\" = --result-fd ] && r=$a; p=$a; done\n"
		 "result() { printf '%%s\\n' \"$1\" >&\"$r\"; }\n"
		 "%s\n", body);
	write_file(fx->helper, script, 0755);
}

/* init_with in slurmstepd, as ourselves: unprivileged test runs cannot
 * switch users. */
static void start_step(struct fixture *fx, char *const *env,
		       const char *extra_arg)
{
	assert_int_equal(init_with(fx, S_CTX_REMOTE, env, extra_arg), 0);
	mock_spank()->ids.uid = getuid();
	mock_spank()->ids.gid = getgid();
}

/* --nccl-warmup=VALUE through the step's hooks; task_init's result. */
static int finish_step(struct fixture *fx, const char *value)
{
	spank_t sp = mock_spank_handle();

	assert_int_equal(sn_option_warmup(&fx->p, value, 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	return sn_step_task_init(&fx->p, sp);
}

int run_warmup_step(struct fixture *fx, char *const *env,
		    const char *value, const char *extra_arg)
{
	start_step(fx, env, extra_arg);
	return finish_step(fx, value);
}

/* Lines in the helper's run log: how many times it ran. */
int helper_runs(struct fixture *fx)
{
	char path[192];
	int n = 0, c;
	FILE *f;

	snprintf(path, sizeof(path), "%s/runs", fx->dir);
	f = fopen(path, "r");
	while (f && (c = getc(f)) != EOF)	/* lines of any length */
		n += c == '\n';
	if (f)
		fclose(f);
	return n;
}

/* A step of NNODES nodes on node NODE_ID: run_warmup_step's fabric form. */
int run_fabric_step(struct fixture *fx, char *const *env,
		    const char *value, const char *extra_arg,
		    uint32_t step_id, uint32_t node_id, uint32_t nnodes)
{
	start_step(fx, env, extra_arg);
	mock_spank()->ids.step_id = step_id;
	mock_spank()->ids.node_id = node_id;
	mock_spank()->ids.nnodes = nnodes;
	return finish_step(fx, value);
}

/* The helper's last command line, one space after each argument. */
void read_args(struct fixture *fx, char *args, size_t len)
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
void fabric_args(struct fixture *fx, char *const *env,
		 const char *value, const char *extra_arg,
		 uint32_t node_id, uint32_t nnodes, char *args, size_t len)
{
	assert_int_equal(run_fabric_step(fx, env, value, extra_arg, 7, node_id,
					 nnodes), 0);
	sn_plugin_fini(&fx->p);
	read_args(fx, args, len);
}

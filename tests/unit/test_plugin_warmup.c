/* SPDX-License-Identifier: MIT */
/*
 * The plugin's warmup, driven through the mock SPANK layer: how warmup
 * results, failures, reuse and fabric (multi-node) steps turn into
 * task_init results and messages, and the helper's arguments.  Root's
 * part (its I/O, the confirmation, a container step): test_plugin_root.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin_testutil.h"

/* ---- warmup ---------------------------------------------------------- */

static void warmup_skips_step_without_gpus(void **state)
{
	struct fixture *fx = *state;

	char *env[] = { "CUDA_VISIBLE_DEVICES=NoDevFiles", NULL };

	write_helper(fx, "exit 5");
	assert_int_equal(run_warmup_step(fx, NULL, NULL, NULL), 0);
	assert_true(mock_logged(mock_spank()->info, mock_spank()->n_info,
				"no GPUs"));
	assert_int_equal(mock_spank()->n_user, 0);
	sn_plugin_fini(&fx->p);
	/* verbose: one line says so and why, the step runs. */
	assert_int_equal(run_warmup_step(fx, env, "check,verbose", NULL), 0);
	assert_int_equal(mock_spank()->n_user, 1);
	assert_int_equal(mock_spank()->n_errors, 0);
	assert_true(mock_logged(mock_spank()->user, mock_spank()->n_user,
				"warmup skipped on node "));
	assert_true(mock_logged(mock_spank()->user, mock_spank()->n_user,
				": the step has no GPUs there (none requested with --gres=gpu:N or --gpus)"));
}

static void warmup_success_is_quiet(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "CUDA_VISIBLE_DEVICES=0,1", "SLURMD_NODENAME=n7", NULL };

	write_helper(fx, "result '{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
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

/*
 * NCCL_DEBUG=INFO without NCCL_DEBUG_FILE: NCCL logs on the helper's
 * stdout, and an LD_PRELOAD may print anything, a fake JSON included, on
 * stdout and stderr.  The result comes on its own descriptor all the
 * same; the log's last lines reach the user under verbose or on a
 * failure, never with NCCL_DEBUG_FILE (the user's file has it).
 */
static void warmup_result_apart_from_nccl_log(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "CUDA_VISIBLE_DEVICES=0,1", "NCCL_DEBUG=INFO", NULL };
	char *env_file[] = { "CUDA_VISIBLE_DEVICES=0,1", "NCCL_DEBUG=INFO",
			     "NCCL_DEBUG_FILE=/tmp/nccl.%h.%p", NULL };
	char *env_quiet[] = { "CUDA_VISIBLE_DEVICES=0,1", NULL };
	static const char junk[] =
		"i=1; while [ $i -le 30 ]; do "
		"echo \"n7:1:1 [0] NCCL INFO line $i\"; i=$((i + 1)); done; "
		"echo '{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		"\"summary\":\"FAKE-OUT\"}'; "
		"echo '{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		"\"summary\":\"FAKE-ERR\"}' >&2; ";
	char body[2048];
	struct mock_spank *m;

	snprintf(body, sizeof(body),
		 "%s result '{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		 "\"summary\":\"warmup ok on n7: 2 GPUs\"}'", junk);
	write_helper(fx, body);
	assert_int_equal(run_warmup_step(fx, env, "comm,verbose", NULL), 0);
	m = mock_spank();
	/* The summary, the log's header, its last 20 lines. */
	assert_int_equal(m->n_user, 22);
	assert_string_equal(m->user[0], "warmup ok on n7: 2 GPUs");
	assert_true(mock_logged(m->user, m->n_user,
				"NCCL's log of the warmup on node "));
	assert_true(mock_logged(m->user, m->n_user,
				"(NCCL_DEBUG=INFO, its stdout), the last 20 lines:"));
	/* All that stdout had, the preload's fake JSON too, marked "| ". */
	assert_string_equal(m->user[2], "| n7:1:1 [0] NCCL INFO line 12");
	assert_string_equal(m->user[20], "| n7:1:1 [0] NCCL INFO line 30");
	assert_string_equal(m->user[21], "| {\"version\":1,\"status\":\"ok\","
			    "\"exit_code\":0,\"summary\":\"FAKE-OUT\"}");
	assert_false(mock_logged(m->user, m->n_user, "FAKE-ERR"));
	/* slurmd's log has the result, not "(no result)". */
	assert_true(mock_logged(m->info, m->n_info,
				"passed in"));
	assert_true(mock_logged(m->info, m->n_info, "warmup ok on n7: 2 GPUs"));
	assert_false(mock_logged(m->info, m->n_info, "(no result)"));
	assert_false(mock_logged(m->info, m->n_info, "FAKE"));
	sn_plugin_fini(&fx->p);

	/* Passed, not verbose: nothing; NCCL_DEBUG_FILE: the user's file. */
	assert_int_equal(run_warmup_step(fx, env, "comm,fresh", NULL), 0);
	assert_int_equal(mock_spank()->n_user, 0);
	sn_plugin_fini(&fx->p);
	assert_int_equal(run_warmup_step(fx, env_file, "comm,verbose,fresh",
					 NULL), 0);
	assert_int_equal(mock_spank()->n_user, 1);
	sn_plugin_fini(&fx->p);

	/* A failure shows the log's end under its message; the helper's
	 * own words come from the result, not the junk. */
	snprintf(body, sizeof(body),
		 "%s result '{\"version\":1,\"status\":\"nccl_error\","
		 "\"exit_code\":5,\"message\":\"ncclCommInitAll failed: REAL\"}'; "
		 "exit 5", junk);
	write_helper(fx, body);
	assert_int_equal(run_warmup_step(fx, env, "comm,fresh", NULL), -1);
	m = mock_spank();
	assert_int_equal(m->n_errors, FAILURE_LINES);
	assert_true(mock_logged(m->errors, m->n_errors,
				"ncclCommInitAll failed: REAL"));
	assert_false(mock_logged(m->errors, m->n_errors, "FAKE"));
	assert_int_equal(m->n_user, 21);
	assert_string_equal(m->user[19], "| n7:1:1 [0] NCCL INFO line 30");
	sn_plugin_fini(&fx->p);
	/* Without NCCL_DEBUG, what stdout had is not the user's log. */
	assert_int_equal(run_warmup_step(fx, env_quiet, "comm,fresh", NULL), -1);
	assert_int_equal(mock_spank()->n_user, 0);
	assert_int_equal(mock_spank()->n_errors, FAILURE_LINES);
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
		 "result '{\"version\":1,\"status\":\"ok\",\"exit_code\":0}'; exit 0",
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
	/* The failed run and its root confirmation (step_confirm.c). */
	expect += 2;
	assert_int_equal(helper_runs(fx), expect);
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

	write_helper(fx, "result '{\"version\":1,\"status\":\"duplicate_busid\","
			 "\"exit_code\":3,\"message\":\"GPU 0 and GPU 1 both "
			 "report PCI bus ID 0000:01:00.0\"}'; exit 3");

	/* The node is named from slurmstepd's host name: the job's own
	 * SLURMD_NODENAME is the user's to set and must not be believed. */
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	snprintf(node, sizeof(node), "node %s ", host);
	assert_int_equal(run_warmup_step(fx, env, NULL, NULL), -1);
	assert_int_equal(mock_spank()->n_errors, FAILURE_LINES);
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
	assert_int_equal(mock_spank()->n_errors, FAILURE_LINES);
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
	/* The helper's last words are detail: shown under verbose only. */
	assert_false(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				 "about to crash"));
	sn_plugin_fini(&fx->p);
	assert_int_equal(run_warmup_step(fx, env, "comm,verbose", NULL), -1);
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
		 "result '{\"version\":1,\"status\":\"ok\",\"exit_code\":0}'; exit 0",
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
	write_helper(fx, "result '{\"version\":1,\"status\":\"low_bandwidth\","
			 "\"exit_code\":7,\"message\":\"inter-node all-reduce "
			 "bus bandwidth 7.1 GB/s is below the floor of 10 GB/s\"}'; exit 7");
	assert_int_equal(run_fabric_step(fx, env, "fabric", NULL, 7, 0, 3), -1);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"7.1 GB/s is below the floor of 10 GB/s"));
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"the network between the nodes is below fabric_min_busbw="));
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
		T(warmup_skips_step_without_gpus),
		T(warmup_success_is_quiet),
		T(warmup_result_apart_from_nccl_log),
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

	return cmocka_run_group_tests_name("plugin_warmup", tests, NULL, NULL);
}

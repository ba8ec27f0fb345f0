/* SPDX-License-Identifier: MIT */
/*
 * The plugin's warmup where slurmstepd's root takes part, driven through
 * the mock SPANK layer: the root I/O and the return to the user's ids,
 * the root confirmation that decides whom a failure blames, and a
 * container step, warmed once per node from its first task.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin_testutil.h"

/* A failure's what, as long as real ones get (NCCL_ALGO=Tree's: 97). */
#define FORGED_WHAT "all-reduce returned wrong data on GPU 1: element 4096 is 3.0, expected 2.0 (forged by the job)"

/* ARG (192 bytes): record_file= in the fixture's directory; RECORD (512
 * bytes): the file it names on this host. */
static void record_file_arg(struct fixture *fx, char *arg, char *record)
{
	char host[256];

	snprintf(arg, 192, "record_file=%s/%%n.jsonl", fx->dir);
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	snprintf(record, 512, "%s/%s.jsonl", fx->dir, host);
}

/* user_init as --nccl-warmup=comm with slurmstepd's ids scripted:
 * real uid 0, the job user's euid/egid (as_root.c). */
static int step_as_user_init(struct fixture *fx, char *const *env,
			     const char *extra_arg, bool no_return)
{
	spank_t sp = mock_spank_handle();
	struct mock_spank *m = mock_spank();

	assert_int_equal(init_with(fx, S_CTX_REMOTE, env, extra_arg), 0);
	m->ids.uid = getuid();
	m->ids.gid = getgid();
	m->proc = (struct sn_proc_ids){ .ruid = 0, .euid = 1000,
					.rgid = 0, .egid = 1000 };
	m->proc_no_return = no_return;
	assert_int_equal(sn_option_warmup(&fx->p, "comm", 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	return sn_step_task_init(&fx->p, sp);
}

/*
 * The root I/O (reuse records, the fleet record) runs as root and the
 * user's ids come back after it; when they cannot, the step's tasks are
 * refused, saying so, and nothing more runs.
 */
static void warmup_root_io_returns_or_refuses(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "CUDA_VISIBLE_DEVICES=0", NULL };
	char body[512], arg[192], record[512], runs[192];
	struct mock_spank *m = mock_spank();
	struct stat st;

	snprintf(body, sizeof(body),
		 "echo run >> %s/runs; "
		 "result '{\"version\":1,\"status\":\"ok\",\"exit_code\":0}'",
		 fx->dir);
	write_helper(fx, body);
	record_file_arg(fx, arg, record);
	snprintf(runs, sizeof(runs), "%s/runs", fx->dir);

	/* Returns: the record is written, the step runs as the user. */
	assert_int_equal(step_as_user_init(fx, env, arg, false), 0);
	assert_int_equal(helper_runs(fx), 1);
	assert_int_equal(lstat(record, &st), 0);
	assert_true(m->proc_set_calls > 0);
	assert_int_equal(m->proc.euid, 1000);
	assert_int_equal(m->proc.egid, 1000);
	assert_int_equal(m->n_errors, 0);
	sn_plugin_fini(&fx->p);
	unlink(record);

	/* The reuse lookup cannot return: no helper, tasks refused. */
	assert_int_equal(step_as_user_init(fx, env, arg, true), -1);
	assert_int_equal(helper_runs(fx), 1);
	assert_true(mock_logged(m->errors, m->n_errors,
				"cannot return to uid 1000 gid 1000 after warmup reuse"));
	sn_plugin_fini(&fx->p);

	/* No reuse: the record's section cannot return, after a pass. */
	snprintf(fx->arg_reuse, sizeof(fx->arg_reuse), "warmup_reuse=no");
	assert_int_equal(step_as_user_init(fx, env, arg, true), -1);
	assert_int_equal(helper_runs(fx), 2);
	assert_int_equal(lstat(record, &st), 0);
	assert_true(mock_logged(m->errors, m->n_errors,
				"cannot return to uid 1000 gid 1000 after the warmup record"));
	assert_true(mock_logged(m->errors, m->n_errors,
				"refusing to start the step's tasks"));
	unlink(record);
	unlink(runs);
}

/*
 * A pyxis step (--container-image set): user_init runs no helper, the
 * first task_init has the agent run it once, the node's next task gets
 * the same verdict without a second run or message.  Here the task is
 * still in user_init's mount namespace, as with spank-nccl listed before
 * pyxis: the wrong order is said once and the host's NCCL warmed.
 */
static void container_step(struct fixture *fx, const char *value,
			   int runs_before)
{
	char *env[] = { "CUDA_VISIBLE_DEVICES=0,1", NULL };
	spank_t sp = mock_spank_handle();

	assert_int_equal(init_with(fx, S_CTX_REMOTE, env, NULL), 0);
	mock_spank()->ids.uid = getuid();
	mock_spank()->ids.gid = getgid();
	mock_spank()->option_name = "container-image";
	mock_spank()->option_value = "./img.sqsh";
	assert_int_equal(sn_option_warmup(&fx->p, value, 1), 0);
	assert_int_equal(sn_step_post_opt(&fx->p, sp), 0);
	assert_int_equal(sn_step_user_init(&fx->p, sp), 0);
	assert_int_equal(helper_runs(fx), runs_before);
}

/* Slurps PATH (a record file) into BUF. */
static void read_text(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/*
 * Issue 30: the job's helper forges wrong data and "fault":"node" (exit
 * 6); the root confirmation, which sees none of the job's environment,
 * passes: the record's fault is the job's.  A node fault the clean check
 * finds (confirm_env= sets the node's fake duplicate bus IDs) is the
 * node's, whatever the job's helper said.
 */
static void warmup_blame_needs_a_failed_confirmation(void **state)
{
	struct fixture *fx = *state;
	char *env[] = { "CUDA_VISIBLE_DEVICES=0,1", "FORGE=1", NULL };
	char body[1024], arg[192], record[512], path[192];
	static char text[65536];

	snprintf(body, sizeof(body),
		 "echo \"forge=$FORGE node_bad=$NODE_BAD uid=$(id -u)\" >> %s/runs; "
		 "if [ -n \"$FORGE\" ]; then result '{\"version\":1,\"status\":\"wrong_result\","
		 "\"exit_code\":6,\"fault\":\"node\",\"message\":\"" FORGED_WHAT "\"}'; exit 6; fi; "
		 "if [ -n \"$NODE_BAD\" ]; then result '{\"version\":1,\"status\":\"duplicate_busid\","
		 "\"exit_code\":3,\"fault\":\"node\",\"message\":\"GPU 0 and GPU 1 both report PCI bus ID 0000:01:00.0\"}'; exit 3; fi; "
		 "result '{\"version\":1,\"status\":\"ok\",\"exit_code\":0}'",
		 fx->dir);
	write_helper(fx, body);
	record_file_arg(fx, arg, record);

	assert_int_equal(run_warmup_step(fx, env, "comm,fresh", arg), -1);
	assert_int_equal(helper_runs(fx), 2);
	/* The confirmation got none of the job's environment. */
	read_text(record, text, sizeof(text));
	assert_contains(text, "\"class\":\"wrong_result\"");
	assert_contains(text, "\"fault\":\"job\"");
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"this node passed a clean check"));
	/* The clean check's advice leaves line 1 its room: what failed,
	 * whole (a long hint once cut it to "NCCL broadcast failed: NC..."). */
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				FORGED_WHAT));
	sn_plugin_fini(&fx->p);
	snprintf(path, sizeof(path), "%s/runs", fx->dir);
	read_text(path, text, sizeof(text));
	assert_contains(text, "forge=1 node_bad=");
	assert_contains(text, "\nforge= node_bad=");
	if (geteuid() != 0)
		return;	/* confirm_env= must be root's */

	/* A node fault the clean check finds: the node's. */
	unlink(record);
	snprintf(path, sizeof(path), "%s/confirm.env", fx->dir);
	write_file(path, "# the node's fake GPUs\nNODE_BAD=1\n", 0644);
	snprintf(fx->arg_reuse, sizeof(fx->arg_reuse), "confirm_env=%s", path);
	assert_int_equal(run_warmup_step(fx, env, "comm,fresh", arg), -1);
	assert_int_equal(helper_runs(fx), 4);
	read_text(record, text, sizeof(text));
	assert_contains(text, "\"fault\":\"node\"");
	sn_plugin_fini(&fx->p);

	/* A confirm_env= others may write is refused: no node is blamed. */
	unlink(record);
	chmod(path, 0666);
	assert_int_equal(run_warmup_step(fx, env, "comm,fresh", arg), -1);
	assert_int_equal(helper_runs(fx), 5);
	read_text(record, text, sizeof(text));
	assert_contains(text, "\"fault\":\"job\"");
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"not writable by group or others"));
}

static void warmup_container_once_per_node(void **state)
{
	struct fixture *fx = *state;
	spank_t sp = mock_spank_handle();
	char body[1024];

	snprintf(body, sizeof(body),
		 "echo \"$*\" >> %s/runs; [ -e %s/fail ] && { result '{\"version\":1,"
		 "\"status\":\"container_nccl\",\"exit_code\":15,\"fault\":\"job\","
		 "\"message\":\"no NCCL in the container image ./img.sqsh\"}'; exit 15; }; "
		 "result '{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		 "\"summary\":\"warmup ok on n1: 2 GPUs\"}'",
		 fx->dir, fx->dir);
	write_helper(fx, body);

	container_step(fx, "comm,verbose", 0);
	assert_int_equal(sn_step_task_init(&fx->p, sp), 0);
	assert_int_equal(sn_step_task_init(&fx->p, sp), 0);
	assert_int_equal(helper_runs(fx), 1);
	assert_int_equal(mock_spank()->n_errors, 0);
	assert_int_equal(mock_spank()->n_user, 2);
	assert_true(mock_logged(mock_spank()->user, mock_spank()->n_user,
				"image ./img.sqsh did not exist yet when spank-nccl's task_init ran: spank-nccl is listed before pyxis"));
	assert_true(mock_logged(mock_spank()->user, mock_spank()->n_user,
				"warmup ok on n1: 2 GPUs"));
	/* slurmd's log gets the agent's result line, from the task. */
	assert_true(mock_logged(mock_spank()->info, mock_spank()->n_info,
				"nccl-warmup passed in"));
	sn_plugin_fini(&fx->p);

	/* A failure (fresh: the host-side pass above would be reused):
	 * every task fails, one message for the node. */
	snprintf(body, sizeof(body), "%s/fail", fx->dir);
	write_file(body, "", 0644);
	container_step(fx, "comm,fresh", 1);
	assert_int_equal(sn_step_task_init(&fx->p, sp), -1);
	assert_int_equal(sn_step_task_init(&fx->p, sp), -1);
	assert_int_equal(sn_step_task_init(&fx->p, sp), -1);
	/* The job's run, then the root confirmation of its failure (a
	 * host-side warmup here: no container pid), which says nothing of
	 * the node (container_nccl): the helper's "job" stands. */
	assert_int_equal(helper_runs(fx), 3);
	assert_int_equal(mock_spank()->n_errors, FAILURE_LINES);
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"no NCCL in the container image ./img.sqsh"));
	assert_true(mock_logged(mock_spank()->errors, mock_spank()->n_errors,
				"the image's fault"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(warmup_root_io_returns_or_refuses),
		T(warmup_container_once_per_node),
		T(warmup_blame_needs_a_failed_confirmation),
#undef T
	};

	return cmocka_run_group_tests_name("plugin_root", tests, NULL, NULL);
}

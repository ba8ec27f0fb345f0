/* SPDX-License-Identifier: MIT */
/*
 * sn_helper_run(): the child's environment (stdio, descriptors, signals,
 * identity) and the parent's deadline, kill and reap.  Identity tests
 * need root; under CI=true (root) they must run.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "helper_args.h"
#include "helper_exec.h"
#include "root_testutil.h"

static struct sn_helper_outcome out;

static int run_sh_grace(const char *script, unsigned int timeout_ms,
			unsigned int kill_grace_ms)
{
	char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", "MARKER=from-job", NULL };
	struct sn_helper_spec spec = {
		.path = "/bin/sh",
		.argv = argv,
		.envp = envp,
		.drop_privileges = false,
		.timeout_ms = timeout_ms,
		.kill_grace_ms = kill_grace_ms,
	};

	return sn_helper_run(&spec, &out);
}

static int run_sh(const char *script, unsigned int timeout_ms)
{
	return run_sh_grace(script, timeout_ms, 200);
}

static bool pid_alive(pid_t pid)
{
	char path[64], state = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (fscanf(f, "%*d %*s %c", &state) != 1)
		state = 0;
	fclose(f);
	return state != 0 && state != 'Z' && state != 'X';
}

static void captures_stdout_stderr_and_env(void **state)
{
	assert_int_equal(run_sh("echo out:$MARKER; echo err >&2; exit 0",
				5000), 0);
	assert_true(out.exited);
	assert_int_equal(out.exit_code, 0);
	assert_string_equal(out.out, "out:from-job\n");
	assert_string_equal(out.err, "err\n");
	assert_false(out.timed_out);
}

static void passes_exit_code(void **state)
{
	assert_int_equal(run_sh("exit 3", 5000), 0);
	assert_true(out.exited);
	assert_int_equal(out.exit_code, 3);
}

static void stdin_is_dev_null(void **state)
{
	assert_int_equal(run_sh("cat; readlink /proc/self/fd/0", 5000), 0);
	assert_string_equal(out.out, "/dev/null\n");
}

static void other_descriptors_are_closed(void **state)
{
	int leak = open("/dev/null", O_RDONLY);	/* no O_CLOEXEC on purpose */

	assert_true(leak > 2);
	/* ls opens its own directory fd: only 0, 1, 2 and that one remain. */
	assert_int_equal(run_sh("ls /proc/self/fd | wc -l", 5000), 0);
	close(leak);
	assert_string_equal(out.out, "4\n");
}

/*
 * pass_fd (a pyxis step: the container's root, opened O_PATH and
 * close-on-exec by the root agent; a fabric step: the step key's pipe)
 * reach the helper, at their numbers, and are the only descriptors
 * besides stdio that do; a result pipe at the number of either is
 * refused before anything runs.
 */
static void pass_fd_is_the_only_other_descriptor(void **state)
{
	char dir[] = "/tmp/test_helper_exec.XXXXXX", path[64], script[256];
	char *argv[] = { "/bin/sh", "-c", script, NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct sn_helper_spec spec = {
		.path = "/bin/sh",
		.argv = argv,
		.envp = envp,
		.timeout_ms = 5000,
		.kill_grace_ms = 200,
	};
	int leak = open("/dev/null", O_RDONLY);	/* no O_CLOEXEC on purpose */
	int key[2];
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/marker", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("inside\n", f);
	fclose(f);
	spec.pass_fd[0] = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(spec.pass_fd[0] > 2 && leak > 2);
	/* ls opens its own directory fd: 0, 1, 2, pass_fd and that one. */
	snprintf(script, sizeof(script),
		 "ls /proc/self/fd | wc -l; cat /proc/self/fd/%d/marker",
		 spec.pass_fd[0]);
	assert_int_equal(sn_helper_run(&spec, &out), 0);
	assert_string_equal(out.out, "5\ninside\n");
	/* Beside it, a pipe (the step key's): both reach the helper. */
	assert_int_equal(pipe2(key, O_CLOEXEC), 0);
	assert_int_equal(write(key[1], "key\n", 4), 4);
	close(key[1]);
	spec.pass_fd[1] = key[0];
	snprintf(script, sizeof(script),
		 "ls /proc/self/fd | wc -l; cat /proc/self/fd/%d/marker /proc/self/fd/%d",
		 spec.pass_fd[0], spec.pass_fd[1]);
	assert_int_equal(sn_helper_run(&spec, &out), 0);
	assert_string_equal(out.out, "6\ninside\nkey\n");
	spec.result_fd = key[0];
	assert_int_equal(sn_helper_run(&spec, &out), -1);
	assert_int_equal(out.failed_errno, EINVAL);
	close(key[0]);
	close(spec.pass_fd[0]);
	close(leak);
	unlink(path);
	rmdir(dir);
}

/* /bin/sh -c SCRIPT with the result pipe at RESULT_FD (and PASS_FD). */
static int run_sh_result(const char *script, int result_fd, int pass_fd)
{
	char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct sn_helper_spec spec = {
		.path = "/bin/sh", .argv = argv, .envp = envp,
		.timeout_ms = 5000, .kill_grace_ms = 200,
		.pass_fd = { pass_fd }, .result_fd = result_fd,
	};

	return sn_helper_run(&spec, &out);
}

/*
 * The result on its own descriptor: what the helper writes there is
 * apart from stdout and stderr (NCCL's log, an LD_PRELOAD's junk, even
 * a fake JSON), and that descriptor is the only other one it has.
 */
static void result_fd_is_its_own_channel(void **state)
{
	assert_int_equal(run_sh_result("echo '{\"fake\":1}'; echo junk >&2; "
				       "echo '{\"real\":1}' >&3; "
				       "ls /proc/self/fd | wc -l; exit 3", 3, 0),
			 0);
	assert_true(out.exited);
	assert_int_equal(out.exit_code, 3);
	assert_string_equal(out.result, "{\"real\":1}\n");
	assert_int_equal(out.result_len, 11);
	/* 0, 1, 2, 3 and ls's own directory descriptor. */
	assert_string_equal(out.out, "{\"fake\":1}\n5\n");
	assert_string_equal(out.err, "junk\n");

	/* Without result_fd: no pipe, nothing read, fd 3 is closed. */
	assert_int_equal(run_sh("echo x >&3 || echo closed", 5000), 0);
	assert_string_equal(out.out, "closed\n");
	assert_int_equal(out.result_len, 0);
}

/*
 * The number asked for may be the one the child's report pipe or the
 * result pipe itself has after fork (the lowest free ones in order:
 * stdout, stderr, report, result, two each): both are handled, the
 * helper's exit status still comes back; the same number as pass_fd is
 * refused before anything runs.
 */
static void result_fd_at_any_number(void **state)
{
	int lowest = open("/dev/null", O_RDONLY | O_CLOEXEC), dir, n;
	char script[128];

	assert_true(lowest > 2);
	close(lowest);
	/* lowest + 5: the report pipe's write end; + 7: the result's. */
	for (n = 0; n < 3; n++) {
		int fd = n == 0 ? lowest + 5 : n == 1 ? lowest + 7 : 9;

		/* dash redirects single-digit descriptors only */
		snprintf(script, sizeof(script),
			 "echo result-%d >/proc/self/fd/%d; ls /proc/self/fd | wc -l; exit 4",
			 fd, fd);
		assert_int_equal(run_sh_result(script, fd, 0), 0);
		assert_true(out.exited);
		assert_int_equal(out.exit_code, 4);
		snprintf(script, sizeof(script), "result-%d\n", fd);
		assert_string_equal(out.result, script);
		assert_string_equal(out.out, "5\n");
	}
	dir = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(dir > 2);
	assert_int_equal(run_sh_result("echo x >&3", dir, dir), -1);
	assert_int_equal(out.failed_stage, SN_HELPER_STAGE_SETUP);
	assert_int_equal(out.failed_errno, EINVAL);
	/* Beside pass_fd: both reach the helper, nothing else. */
	snprintf(script, sizeof(script),
		 "echo r >/proc/self/fd/%d; ls /proc/self/fd | wc -l; [ -d /proc/self/fd/%d ]",
		 dir + 1, dir);
	assert_int_equal(run_sh_result(script, dir + 1, dir), 0);
	close(dir);
	assert_int_equal(out.exit_code, 0);
	assert_string_equal(out.result, "r\n");
	assert_string_equal(out.out, "6\n");
}

/* A grandchild that keeps the result pipe open does not hold us. */
static void result_fd_held_by_grandchild_does_not_block(void **state)
{
	assert_int_equal(run_sh_result("echo '{}' >&3; sleep 30 & exit 0", 3,
				       0), 0);
	assert_true(out.exited);
	assert_string_equal(out.result, "{}\n");
	assert_true(out.elapsed_ms < 15000);	/* not sleep's 30 s */
}

static void signals_are_unblocked(void **state)
{
	sigset_t block, old;
	const char *ign;

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	signal(SIGINT, SIG_IGN);
	assert_int_equal(run_sh("grep -E '^Sig(Blk|Ign)' /proc/self/status",
				5000), 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
	signal(SIGINT, SIG_DFL);
	ign = strstr(out.out, "SigIgn:\t");
	assert_non_null(strstr(out.out, "SigBlk:\t0000000000000000"));
	assert_non_null(ign);
	/* Standard signals 1-31 only: glibc reserves 32 and 33 for itself
	 * and refuses to touch them (make, for one, leaves them ignored). */
	assert_int_equal(strtoull(ign + 8, NULL, 16) & 0x7fffffffULL, 0);
}

static void crash_is_reported_as_signal(void **state)
{
	assert_int_equal(run_sh("kill -SEGV $$", 5000), 0);
	assert_true(out.signaled);
	assert_int_equal(out.signal, SIGSEGV);
	assert_false(out.exited);
}

static void timeout_escalates_to_sigkill_and_reaps(void **state)
{
	pid_t pid;

	assert_int_equal(run_sh("trap '' TERM; echo $$; exec sleep 30", 300),
			 0);
	assert_true(out.timed_out);
	assert_true(out.signaled);
	assert_int_equal(out.signal, SIGKILL);
	/* deadline 300 ms + grace 200 ms: far from sleep's 30 s, whatever
	 * the machine's load (valgrind on 2 busy cores: seconds) */
	assert_true(out.elapsed_ms < 15000);
	pid = (pid_t)atoi(out.out);
	assert_true(pid > 0);
	assert_false(pid_alive(pid));
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);	/* no zombie */
	assert_int_equal(errno, ECHILD);
}

static void timeout_sigterm_suffices_for_polite_helper(void **state)
{
	/* A grace no machine needs (valgrind on 2 busy cores took over
	 * 200 ms to deliver SIGTERM): SIGKILL here means SIGTERM was not
	 * sent, or not first. */
	assert_int_equal(run_sh_grace("exec sleep 30", 200, 20000), 0);
	assert_true(out.timed_out);
	assert_true(out.signaled);
	assert_int_equal(out.signal, SIGTERM);
}

static void grandchild_does_not_survive(void **state)
{
	pid_t grandchild;

	assert_int_equal(run_sh("sleep 30 >/dev/null 2>&1 & echo $!; exit 0",
				5000), 0);
	assert_true(out.exited);
	grandchild = (pid_t)atoi(out.out);
	assert_true(grandchild > 0);
	usleep(50000);	/* reparented to init, which reaps it */
	assert_false(pid_alive(grandchild));
}

static void grandchild_holding_stdout_does_not_block(void **state)
{
	/* The grandchild keeps the pipe open; the child's exit must end it. */
	assert_int_equal(run_sh("sleep 30 & exit 0", 5000), 0);
	assert_true(out.exited);
	assert_false(out.timed_out);
	assert_true(out.elapsed_ms < 15000);	/* not sleep's 30 s */
}

/* Reads the pid the script printed on its first line. */
static pid_t first_pid(void)
{
	pid_t pid = (pid_t)atoi(out.out);

	assert_true(pid > 0);
	return pid;
}

static void setsid_grandchild_does_not_survive(void **state)
{
	pid_t pid;

	/* Own session and group, no descriptor of ours: killpg() misses it. */
	assert_int_equal(run_sh("setsid sh -c 'echo $$; exec sleep 30' "
				"</dev/null 2>/dev/null & sleep 0.2; exit 0",
				5000), 0);
	assert_true(out.exited);
	assert_int_equal(out.exit_code, 0);
	pid = first_pid();
	/* Killed and reaped by the supervisor before sn_helper_run returned:
	 * not even a zombie is left. */
	assert_false(pid_alive(pid));
	assert_true(out.elapsed_ms < 15000);	/* not sleep's 30 s */
}

static void daemon_grandchild_does_not_survive(void **state)
{
	pid_t pid;

	/* Double fork and setsid, the classic daemon(3). */
	assert_int_equal(run_sh("setsid -f sh -c 'sh -c \"echo \\$\\$; "
				"exec sleep 30\" & exit 0' </dev/null "
				"2>/dev/null; sleep 0.2; exit 0", 5000), 0);
	assert_true(out.exited);
	pid = first_pid();
	assert_false(pid_alive(pid));
}

static void helper_status_is_reported_through_supervisor(void **state)
{
	/* The supervisor relays the helper's own status, not its own. */
	assert_int_equal(run_sh("sleep 30 & kill -s SEGV $$", 5000), 0);
	assert_true(out.signaled);
	assert_int_equal(out.signal, SIGSEGV);
	assert_false(out.exited);
	assert_int_equal(run_sh("setsid sleep 30 & exit 7", 5000), 0);
	assert_true(out.exited);
	assert_int_equal(out.exit_code, 7);
}

static void timeout_kills_setsid_grandchild(void **state)
{
	pid_t pid;

	assert_int_equal(run_sh("setsid sh -c 'echo $$; exec sleep 30' "
				"</dev/null 2>/dev/null & exec sleep 30", 300),
			 0);
	assert_true(out.timed_out);
	pid = first_pid();
	assert_false(pid_alive(pid));
	assert_true(out.elapsed_ms < 15000);	/* not sleep's 30 s */
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);	/* no zombie */
	assert_int_equal(errno, ECHILD);
}

static void missing_executable_reports_exec_stage(void **state)
{
	char *argv[] = { "/nonexistent/nccl-warmup", NULL };
	char *envp[] = { NULL };
	struct sn_helper_spec spec = {
		.path = argv[0], .argv = argv, .envp = envp,
		.timeout_ms = 2000, .kill_grace_ms = 100,
	};

	assert_int_equal(sn_helper_run(&spec, &out), -1);
	assert_int_equal(out.failed_stage, SN_HELPER_STAGE_EXEC);
	assert_int_equal(out.failed_errno, ENOENT);
}

static void large_output_is_bounded(void **state)
{
	assert_int_equal(run_sh("head -c 200000 /dev/zero | tr '\\0' x; "
				"echo; echo the-last-line", 5000), 0);
	assert_true(out.exited);
	assert_true(out.out_len <= SN_HELPER_OUT_MAX);
	assert_true(out.out_len >= SN_HELPER_OUT_MAX / 2);
	/* stdout's end is kept (NCCL's last log lines), its start let go. */
	assert_int_equal(out.out_dropped + out.out_len, 200000 + 15);
	assert_non_null(strstr(out.out, "x\nthe-last-line\n"));
	assert_int_equal(strlen(out.out), out.out_len);
}

/* Root only: the full switch to the job user. */
static void drops_to_job_user_completely(void **state)
{
	gid_t groups[] = { 65534, 4242 };
	char *argv[] = { "/bin/sh", "-c",
			 "grep -E '^(Uid|Gid|Groups):' /proc/self/status; "
			 "cat /proc/self/oom_score_adj", NULL };
	char *envp[] = { NULL };
	struct sn_helper_spec spec = {
		.path = "/bin/sh", .argv = argv, .envp = envp,
		.drop_privileges = true, .uid = 65534, .gid = 65534,
		.groups = groups, .n_groups = 2,
		.timeout_ms = 5000, .kill_grace_ms = 100,
	};
	uid_t saved_euid = geteuid();
	int fd;

	if (!need_root("the identity tests")) {
		skip();
		return;
	}
	/* As in slurmstepd's user_init: real uid 0, effective uid the user,
	 * and an oom_score_adj the child must not inherit (slurmstepd's is
	 * -1000; some sandboxes refuse negative values, so use 300). */
	fd = open("/proc/self/oom_score_adj", O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "300", 3), 3);
	close(fd);
	assert_int_equal(seteuid(65534), 0);
	assert_int_equal(sn_helper_run(&spec, &out), 0);
	assert_int_equal(seteuid(saved_euid), 0);
	fd = open("/proc/self/oom_score_adj", O_WRONLY);
	assert_int_equal(write(fd, "0", 1), 1);
	close(fd);

	assert_true(out.exited);
	assert_int_equal(out.exit_code, 0);
	assert_non_null(strstr(out.out, "Uid:\t65534\t65534\t65534\t65534"));
	assert_non_null(strstr(out.out, "Gid:\t65534\t65534\t65534\t65534"));
	assert_non_null(strstr(out.out, "Groups:\t4242 65534"));
	assert_non_null(strstr(out.out, "\n0\n"));
}

/* The bounded argv: full refuses every later word, stays NULL-ended. */
static void argv_refuses_overflow(void **state)
{
	static struct sn_argv a;
	static char big[SN_ARGV_TEXT_MAX + 1];	/* one over, with its NUL */
	int i;

	(void)state;
	sn_argv_init(&a);
	sn_argv_opt(&a, "--mode", "comm");
	sn_argv_addf(&a, "%d", 42);
	assert_false(a.full);
	assert_int_equal(a.argc, 3);
	assert_string_equal(a.argv[2], "42");
	assert_null(a.argv[3]);
	for (i = a.argc; i < SN_ARGV_MAX; i++)
		sn_argv_add(&a, "w");
	assert_false(a.full);
	sn_argv_add(&a, "one-too-many");
	assert_true(a.full);
	assert_int_equal(a.argc, SN_ARGV_MAX);
	assert_null(a.argv[SN_ARGV_MAX]);

	/* an option and its value: both or neither */
	sn_argv_init(&a);
	for (i = 0; i < SN_ARGV_MAX - 1; i++)
		sn_argv_add(&a, "w");
	sn_argv_opt(&a, "--node", "n1");
	assert_true(a.full);
	assert_int_equal(a.argc, SN_ARGV_MAX - 1);

	/* the formatted words' text */
	sn_argv_init(&a);
	memset(big, 'x', sizeof(big) - 1);
	sn_argv_addf(&a, "%s", big);
	assert_true(a.full);
	assert_int_equal(a.argc, 0);
	assert_null(a.argv[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(argv_refuses_overflow),
		cmocka_unit_test(captures_stdout_stderr_and_env),
		cmocka_unit_test(passes_exit_code),
		cmocka_unit_test(stdin_is_dev_null),
		cmocka_unit_test(other_descriptors_are_closed),
		cmocka_unit_test(pass_fd_is_the_only_other_descriptor),
		cmocka_unit_test(result_fd_is_its_own_channel),
		cmocka_unit_test(result_fd_at_any_number),
		cmocka_unit_test(result_fd_held_by_grandchild_does_not_block),
		cmocka_unit_test(signals_are_unblocked),
		cmocka_unit_test(crash_is_reported_as_signal),
		cmocka_unit_test(timeout_escalates_to_sigkill_and_reaps),
		cmocka_unit_test(timeout_sigterm_suffices_for_polite_helper),
		cmocka_unit_test(grandchild_does_not_survive),
		cmocka_unit_test(grandchild_holding_stdout_does_not_block),
		cmocka_unit_test(setsid_grandchild_does_not_survive),
		cmocka_unit_test(daemon_grandchild_does_not_survive),
		cmocka_unit_test(helper_status_is_reported_through_supervisor),
		cmocka_unit_test(timeout_kills_setsid_grandchild),
		cmocka_unit_test(missing_executable_reports_exec_stage),
		cmocka_unit_test(large_output_is_bounded),
		cmocka_unit_test(drops_to_job_user_completely),
	};

	return cmocka_run_group_tests_name("helper_exec", tests, NULL, NULL);
}

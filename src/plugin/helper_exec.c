/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helper_exec.h"

#define SN_POLL_SLICE_MS 20
#define SN_REAP_LIMIT_MS 2000

struct child_failure {
	int stage;
	int error;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

const char *sn_helper_stage_name(enum sn_helper_stage stage)
{
	switch (stage) {
	case SN_HELPER_STAGE_FORK:
		return "fork";
	case SN_HELPER_STAGE_SETUP:
		return "set up its stdio and descriptors";
	case SN_HELPER_STAGE_PRIVILEGES:
		return "switch to the job user";
	case SN_HELPER_STAGE_EXEC:
		return "execute";
	default:
		return "start";
	}
}

/* Only async-signal-safe calls from here on: the parent has threads. */
static void __attribute__((noreturn))
child_fail(int report_fd, enum sn_helper_stage stage)
{
	struct child_failure f = { .stage = stage, .error = errno };
	ssize_t rc;

	rc = write(report_fd, &f, sizeof(f));
	(void)rc;
	_exit(127);
}

static void child_reset_signals(void)
{
	sigset_t none;
	int sig;

	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);	/* fails harmlessly for KILL/STOP */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static int child_reset_oom_score(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	ssize_t rc;

	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	rc = write(fd, "0", 1);
	close(fd);
	return rc == 1 ? 0 : -1;
}

static int child_drop_privileges(const struct sn_helper_spec *spec)
{
	uid_t ruid, euid, suid;
	gid_t rgid, egid, sgid;

	/* Already exactly the job user, with nothing to give up. */
	if (getresuid(&ruid, &euid, &suid) == 0 &&
	    getresgid(&rgid, &egid, &sgid) == 0 && spec->uid != 0 &&
	    ruid == spec->uid && euid == spec->uid && suid == spec->uid &&
	    rgid == spec->gid && egid == spec->gid && sgid == spec->gid) {
		child_reset_oom_score();	/* raising is all we may do */
		return 0;
	}
	/* Real uid is 0 in user_init: regain the effective root we need
	 * (also to lower oom_score_adj, which needs CAP_SYS_RESOURCE). */
	if (geteuid() != 0 && seteuid(0) < 0)
		return -1;
	if (child_reset_oom_score() < 0)
		return -1;
	if (setgroups((size_t)spec->n_groups, spec->groups) < 0 ||
	    setresgid(spec->gid, spec->gid, spec->gid) < 0 ||
	    setresuid(spec->uid, spec->uid, spec->uid) < 0)
		return -1;
	if (getresuid(&ruid, &euid, &suid) < 0 ||
	    getresgid(&rgid, &egid, &sgid) < 0)
		return -1;
	if (ruid != spec->uid || euid != spec->uid || suid != spec->uid ||
	    rgid != spec->gid || egid != spec->gid || sgid != spec->gid) {
		errno = EPERM;
		return -1;
	}
	/* Paranoia: a non-root job user must not be able to come back. */
	if (spec->uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

static int child_close_fds(int keep_fd)
{
	/* close_range(2) since Linux 5.9 / glibc 2.34. */
	if (keep_fd > 3 && close_range(3, (unsigned int)keep_fd - 1, 0) < 0)
		return -1;
	if (close_range((unsigned int)keep_fd + 1, ~0U, 0) < 0)
		return -1;
	return 0;
}

static void __attribute__((noreturn))
child_run(const struct sn_helper_spec *spec, int out_fd, int err_fd,
	  int report_fd)
{
	int null_fd;

	setpgid(0, 0);
	child_reset_signals();

	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 ||
	    dup2(out_fd, STDOUT_FILENO) < 0 || dup2(err_fd, STDERR_FILENO) < 0)
		child_fail(report_fd, SN_HELPER_STAGE_SETUP);
	if (spec->drop_privileges) {
		if (child_drop_privileges(spec) < 0)
			child_fail(report_fd, SN_HELPER_STAGE_PRIVILEGES);
	} else if (child_reset_oom_score() < 0) {
		child_fail(report_fd, SN_HELPER_STAGE_SETUP);
	}
	if (child_close_fds(report_fd) < 0)
		child_fail(report_fd, SN_HELPER_STAGE_SETUP);

	execve(spec->path, spec->argv, spec->envp);
	child_fail(report_fd, SN_HELPER_STAGE_EXEC);
}

static void drain(int *fd, char *buf, size_t cap, size_t *len)
{
	char scratch[4096];
	ssize_t n;

	if (*fd < 0)
		return;
	for (;;) {
		size_t room = cap - *len;
		char *dst = room ? buf + *len : scratch;
		size_t want = room ? room : sizeof(scratch);

		n = read(*fd, dst, want);
		if (n > 0) {
			if (room)
				*len += (size_t)n;	/* beyond cap: discarded */
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		close(*fd);	/* EOF or error */
		*fd = -1;
		return;
	}
}

static bool child_has_exited(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return errno == ECHILD;
	return si.si_pid == pid;
}

static bool wait_for_exit(pid_t pid, double until)
{
	while (!child_has_exited(pid)) {
		if (now_ms() >= until)
			return false;
		usleep(2000);
	}
	return true;
}

/* Kill what is left of the group while the zombie still pins its id. */
static void reap(pid_t pid, struct sn_helper_outcome *out)
{
	double until = now_ms() + SN_REAP_LIMIT_MS;
	int status = 0;
	pid_t rc;

	killpg(pid, SIGKILL);
	do {
		rc = waitpid(pid, &status, WNOHANG);
		if (rc == 0)
			usleep(2000);
	} while ((rc == 0 || (rc < 0 && errno == EINTR)) && now_ms() < until);
	if (rc != pid)
		return;
	if (WIFEXITED(status)) {
		out->exited = true;
		out->exit_code = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		out->signaled = true;
		out->signal = WTERMSIG(status);
	}
}

static int make_pipe(int fds[2], bool parent_nonblocking)
{
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	if (parent_nonblocking &&
	    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK) < 0)
		return -1;
	return 0;
}

static void close_pair(int fds[2])
{
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	fds[0] = fds[1] = -1;
}

static void read_child_failure(int fd, struct sn_helper_outcome *out)
{
	struct child_failure f;
	ssize_t n;

	do
		n = read(fd, &f, sizeof(f));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(f)) {
		out->failed_stage = (enum sn_helper_stage)f.stage;
		out->failed_errno = f.error;
	}
}

int sn_helper_run(const struct sn_helper_spec *spec,
		  struct sn_helper_outcome *out)
{
	int out_pipe[2] = { -1, -1 }, err_pipe[2] = { -1, -1 };
	int report_pipe[2] = { -1, -1 };
	double start, deadline;
	pid_t pid;

	memset(out, 0, sizeof(*out));
	start = now_ms();
	if (make_pipe(out_pipe, true) < 0 || make_pipe(err_pipe, true) < 0 ||
	    make_pipe(report_pipe, false) < 0) {
		out->failed_stage = SN_HELPER_STAGE_FORK;
		out->failed_errno = errno;
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		out->failed_stage = SN_HELPER_STAGE_FORK;
		out->failed_errno = errno;
		goto fail;
	}
	if (pid == 0)
		child_run(spec, out_pipe[1], err_pipe[1], report_pipe[1]);

	setpgid(pid, pid);	/* both sides: no race with killpg below */
	close(out_pipe[1]);
	close(err_pipe[1]);
	close(report_pipe[1]);
	out_pipe[1] = err_pipe[1] = report_pipe[1] = -1;

	deadline = start + spec->timeout_ms;
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = out_pipe[0], .events = POLLIN },
			{ .fd = err_pipe[0], .events = POLLIN },
		};
		double left = deadline - now_ms();
		int slice;

		if (left <= 0) {
			out->timed_out = true;
			break;
		}
		/* Pipes closed (or held by a stray grandchild): poll the pid. */
		slice = (out_pipe[0] < 0 && err_pipe[0] < 0) ? 2 :
			SN_POLL_SLICE_MS;
		if (left < slice)
			slice = (int)left + 1;
		if (poll(pfd, 2, slice) < 0 && errno != EINTR)
			break;
		drain(&out_pipe[0], out->out, SN_HELPER_OUT_MAX, &out->out_len);
		drain(&err_pipe[0], out->err, SN_HELPER_ERR_MAX, &out->err_len);
		if (child_has_exited(pid))
			break;
	}
	if (out->timed_out) {
		killpg(pid, SIGTERM);
		wait_for_exit(pid, now_ms() + spec->kill_grace_ms);
	}
	drain(&out_pipe[0], out->out, SN_HELPER_OUT_MAX, &out->out_len);
	drain(&err_pipe[0], out->err, SN_HELPER_ERR_MAX, &out->err_len);
	reap(pid, out);
	read_child_failure(report_pipe[0], out);
	out->elapsed_ms = now_ms() - start;
	out->out[out->out_len] = '\0';
	out->err[out->err_len] = '\0';
	close_pair(out_pipe);
	close_pair(err_pipe);
	close_pair(report_pipe);
	return out->failed_stage == SN_HELPER_STAGE_NONE ? 0 : -1;
fail:
	close_pair(out_pipe);
	close_pair(err_pipe);
	close_pair(report_pipe);
	out->elapsed_ms = now_ms() - start;
	return -1;
}

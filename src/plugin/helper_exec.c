/* SPDX-License-Identifier: MIT */
/*
 * The parent side of sn_helper_run(): pipes, fork, reading the output
 * while waiting, the deadline (SIGTERM, then SIGKILL to the group) and the
 * reap.  The child side is helper_child.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "helper_child.h"

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

/*
 * Reads what FD has into BUF (CAP bytes).  Beyond CAP: discarded, or with
 * DROPPED the older half let go (counted there), so the last bytes stay.
 */
static void drain(int *fd, char *buf, size_t cap, size_t *len,
		  size_t *dropped)
{
	char scratch[4096];
	ssize_t n;

	if (*fd < 0)
		return;
	for (;;) {
		size_t room = cap - *len;
		char *dst;
		size_t want;

		if (!room && dropped) {
			memmove(buf, buf + cap / 2, cap - cap / 2);
			*len = cap - cap / 2;
			*dropped += cap / 2;
			room = cap - *len;
		}
		dst = room ? buf + *len : scratch;
		want = room ? room : sizeof(scratch);
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

static void drain_all(struct sn_helper_outcome *out, int out_pipe[2],
		      int err_pipe[2], int result_pipe[2])
{
	drain(&out_pipe[0], out->out, SN_HELPER_OUT_MAX, &out->out_len,
	      &out->out_dropped);
	drain(&err_pipe[0], out->err, SN_HELPER_ERR_MAX, &out->err_len, NULL);
	drain(&result_pipe[0], out->result, SN_HELPER_OUT_MAX,
	      &out->result_len, NULL);
}

static bool child_has_exited(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return errno == ECHILD;
	return si.si_pid == pid;
}

static bool wait_for_exit(pid_t pid, struct sn_deadline until)
{
	while (!child_has_exited(pid)) {
		if (sn_deadline_expired(until))
			return false;
		usleep(2000);
	}
	return true;
}

/* Kill what is left of the group while the zombie still pins its id. */
static void reap(pid_t pid, struct sn_helper_outcome *out)
{
	struct sn_deadline until = sn_deadline_in(SN_REAP_LIMIT_MS);
	int status = 0;
	pid_t rc;

	killpg(pid, SIGKILL);
	do {
		rc = waitpid(pid, &status, WNOHANG);
		if (rc == 0)
			usleep(2000);
	} while ((rc == 0 || (rc < 0 && errno == EINTR)) &&
		 !sn_deadline_expired(until));
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

/*
 * At most two reports: the helper's start failure, then the supervisor's
 * record of the helper's wait status (which replaces the supervisor's
 * own).  Every writer has exited or executed (O_CLOEXEC) by now.
 */
static void read_child_reports(int fd, struct sn_helper_outcome *out)
{
	struct child_report r;
	int i;

	for (i = 0; i < 2; i++) {
		ssize_t n;

		do
			n = read(fd, &r, sizeof(r));
		while (n < 0 && errno == EINTR);
		if (n != (ssize_t)sizeof(r))
			return;
		if (r.kind == REPORT_FAILURE &&
		    out->failed_stage == SN_HELPER_STAGE_NONE) {
			out->failed_stage = (enum sn_helper_stage)r.stage;
			out->failed_errno = r.error;
		} else if (r.kind == REPORT_STATUS) {
			out->exited = WIFEXITED(r.status);
			out->exit_code = out->exited ?
					 WEXITSTATUS(r.status) : 0;
			out->signaled = WIFSIGNALED(r.status);
			out->signal = out->signaled ? WTERMSIG(r.status) : 0;
		}
	}
}

int sn_helper_run(const struct sn_helper_spec *spec,
		  struct sn_helper_outcome *out)
{
	int out_pipe[2] = { -1, -1 }, err_pipe[2] = { -1, -1 };
	int report_pipe[2] = { -1, -1 }, result_pipe[2] = { -1, -1 };
	struct sn_deadline deadline;
	double start;
	pid_t pid, parent = getpid();

	memset(out, 0, sizeof(*out));
	start = sn_clock_ms();
	deadline = sn_deadline_after(start, spec->timeout_ms);
	if (spec->result_fd &&
	    (spec->result_fd < 3 || spec->result_fd == spec->pass_fd[0] ||
	     spec->result_fd == spec->pass_fd[1])) {
		out->failed_stage = SN_HELPER_STAGE_SETUP;
		out->failed_errno = EINVAL;
		goto fail;
	}
	if (make_pipe(out_pipe, true) < 0 || make_pipe(err_pipe, true) < 0 ||
	    make_pipe(report_pipe, false) < 0 ||
	    (spec->result_fd && make_pipe(result_pipe, true) < 0)) {
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
	if (pid == 0) {
		int fds[4] = { out_pipe[1], err_pipe[1], report_pipe[1],
			       result_pipe[1] };

		sn_helper_child_run(spec, parent, fds);
	}

	setpgid(pid, pid);	/* both sides: no race with killpg below */
	close(out_pipe[1]);
	close(err_pipe[1]);
	close(report_pipe[1]);
	if (result_pipe[1] >= 0)
		close(result_pipe[1]);
	out_pipe[1] = err_pipe[1] = report_pipe[1] = result_pipe[1] = -1;

	for (;;) {
		struct pollfd pfd[3] = {
			{ .fd = out_pipe[0], .events = POLLIN },
			{ .fd = err_pipe[0], .events = POLLIN },
			{ .fd = result_pipe[0], .events = POLLIN },
		};
		int slice;

		if (sn_deadline_expired(deadline)) {
			out->timed_out = true;
			break;
		}
		/* Pipes closed (or held by a stray grandchild): poll the pid. */
		slice = sn_deadline_poll_ms(deadline,
					    (out_pipe[0] < 0 && err_pipe[0] < 0 &&
					     result_pipe[0] < 0) ?
					    2 : SN_POLL_SLICE_MS);
		if (poll(pfd, 3, slice) < 0 && errno != EINTR)
			break;
		drain_all(out, out_pipe, err_pipe, result_pipe);
		if (child_has_exited(pid))
			break;
	}
	if (out->timed_out) {
		/*
		 * The supervisor escalates to SIGKILL itself and reaps what it
		 * killed: give it the grace period and its kill of the
		 * descendants before the last-resort SIGKILL, or a helper
		 * wedged in the GPU driver is orphaned, still dying, when
		 * user_init returns.
		 */
		killpg(pid, SIGTERM);
		wait_for_exit(pid, sn_deadline_in((int64_t)spec->kill_grace_ms +
						  SN_DESCENDANTS_LIMIT_MS));
	}
	drain_all(out, out_pipe, err_pipe, result_pipe);
	reap(pid, out);
	read_child_reports(report_pipe[0], out);
	out->elapsed_ms = sn_clock_ms() - start;
	out->out[out->out_len] = '\0';
	out->err[out->err_len] = '\0';
	out->result[out->result_len] = '\0';
	close_pair(out_pipe);
	close_pair(err_pipe);
	close_pair(report_pipe);
	close_pair(result_pipe);
	return out->failed_stage == SN_HELPER_STAGE_NONE ? 0 : -1;
fail:
	close_pair(out_pipe);
	close_pair(err_pipe);
	close_pair(report_pipe);
	close_pair(result_pipe);
	out->elapsed_ms = sn_clock_ms() - start;
	return -1;
}

/* SPDX-License-Identifier: MIT */
/*
 * The child side of sn_helper_run() (helper_exec.h): from fork to exec,
 * and the supervisor that stays behind to reap everything the helper
 * started.  The parent side (poll, deadline, reap) is helper_exec.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "helper_child.h"

/* Only async-signal-safe calls from here on: the parent has threads. */
static void write_report(int report_fd, const struct child_report *r)
{
	ssize_t rc;

	rc = write(report_fd, r, sizeof(*r));	/* atomic: < PIPE_BUF */
	(void)rc;
}

static void __attribute__((noreturn))
child_fail(int report_fd, enum sn_helper_stage stage)
{
	struct child_report r = {
		.kind = REPORT_FAILURE, .stage = stage, .error = errno,
	};

	write_report(report_fd, &r);
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

/* The effective root back (the real uid is 0 in user_init). */
static int regain_euid_root(void)
{
	return geteuid() != 0 && seteuid(0) < 0 ? -1 : 0;
}

int sn_switch_ids_for_good(uid_t uid, gid_t gid, const gid_t *groups,
			   int n_groups)
{
	uid_t ruid, euid, suid;
	gid_t rgid, egid, sgid;

	if (regain_euid_root() < 0)
		return -1;
	if (setgroups((size_t)n_groups, groups) < 0 ||
	    setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return -1;
	if (getresuid(&ruid, &euid, &suid) < 0 ||
	    getresgid(&rgid, &egid, &sgid) < 0)
		return -1;
	if (ruid != uid || euid != uid || suid != uid ||
	    rgid != gid || egid != gid || sgid != gid) {
		errno = EPERM;
		return -1;
	}
	/* Paranoia: a non-root user must not be able to come back. */
	if (uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

void sn_exec_as_root(char *const argv[])
{
	static char *const no_env[] = { NULL };

	if (sn_switch_ids_for_good(0, 0, NULL, 0) == 0)
		execve(argv[0], argv, no_env);
	_exit(127);
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
	/* Lowering oom_score_adj needs CAP_SYS_RESOURCE: as root first. */
	if (regain_euid_root() < 0 || child_reset_oom_score() < 0)
		return -1;
	return sn_switch_ids_for_good(spec->uid, spec->gid, spec->groups,
				      spec->n_groups);
}

/* Closes every descriptor from 3 up but the N in KEEP (below 3 ignored). */
static int close_all_except(int *keep, int n)
{
	unsigned int next = 3;

	for (int i = 1; i < n; i++) {	/* n <= 4: insertion sort */
		for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	}
	/* close_range(2) since Linux 5.9 / glibc 2.34. */
	for (int i = 0; i < n; i++) {
		if (keep[i] < 3 || (unsigned int)keep[i] < next)
			continue;	/* stdio, or a duplicate */
		if ((unsigned int)keep[i] > next &&
		    close_range(next, (unsigned int)keep[i] - 1, 0) < 0)
			return -1;
		next = (unsigned int)keep[i] + 1;
	}
	return close_range(next, ~0U, 0);
}

int sn_close_all_but(int a, int b)
{
	int keep[2] = { a, b };

	return close_all_except(keep, 2);
}

/*
 * The result pipe's write end RESULT_WR at spec->result_fd, inherited by
 * the helper; *REPORT_FD is moved first if it holds that number.
 */
static int place_result_fd(const struct sn_helper_spec *spec, int result_wr,
			   int *report_fd)
{
	int target = spec->result_fd;

	if (*report_fd == target) {
		int moved = fcntl(*report_fd, F_DUPFD_CLOEXEC, 3);

		if (moved < 0)
			return -1;
		*report_fd = moved;	/* the old number is dup2'ed over */
	}
	if (result_wr == target)
		return fcntl(target, F_SETFD, 0);
	return dup2(result_wr, target) == target ? 0 : -1;	/* no CLOEXEC */
}

/*
 * The supervisor.  killpg() alone cannot clean up after a helper whose
 * descendant called setsid() or setpgid() (a daemonizing library, or the
 * job's LD_PRELOAD): it leaves the group and, once the helper exits, is
 * reparented to init, where slurmstepd's proctrack/linuxproc no longer
 * sees it.  So the forked child stays as a supervisor: a child subreaper
 * (prctl(2)), it inherits every orphaned descendant of the helper whatever
 * its session or group, and kills and reaps them all when the helper has
 * exited or must stop.  It runs as the job user (it only signals the
 * user's own processes), is not dumpable (its memory is a copy of
 * slurmstepd's), never executes anything, and reports the helper's wait
 * status to the parent on the report pipe.
 */

static pid_t parent_pid_of(const char *stat, size_t len)
{
	const char *p = NULL;
	size_t i;
	long v = 0;

	for (i = len; i > 0; i--) {
		if (stat[i - 1] == ')') {
			p = stat + i;
			break;
		}
	}
	/* ") S PPID ..." */
	if (!p || (size_t)(stat + len - p) < 5 || p[0] != ' ' || p[2] != ' ')
		return -1;
	for (p += 3; p < stat + len && *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (*p - '0');
	return (pid_t)v;
}

/*
 * SIGKILL to every child of this process, found in /proc (PPID field;
 * /proc/PID/task/TID/children needs CONFIG_PROC_CHILDREN, not universal).
 * No allocation: the parent of this process has threads.
 */
static void kill_children(pid_t self)
{
	char buf[4096], path[64], stat[512];
	long n;
	int dir;

	dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return;
	while ((n = getdents64(dir, buf, sizeof(buf))) > 0) {
		long off = 0;

		while (off < n) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			const char *c;
			ssize_t len;
			long pid = 0;
			int fd;

			off += d->d_reclen;
			for (c = d->d_name; *c >= '0' && *c <= '9'; c++)
				pid = pid * 10 + (*c - '0');
			if (*c || c == d->d_name || pid == self)
				continue;
			memcpy(path, "/proc/", 6);
			memcpy(path + 6, d->d_name, (size_t)(c - d->d_name));
			memcpy(path + 6 + (c - d->d_name), "/stat", 6);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			len = read(fd, stat, sizeof(stat));
			close(fd);
			/* A child stays ours until we reap it: no pid reuse. */
			if (len > 0 && parent_pid_of(stat, (size_t)len) == self)
				kill((pid_t)pid, SIGKILL);
		}
	}
	close(dir);
}

/* Kills and reaps every descendant; records the helper's status if it is
 * among them.  No child left means no descendant left: a subreaper
 * inherits the children of each descendant that dies. */
static void kill_descendants(pid_t self, pid_t helper, int *helper_status,
		  bool *helper_reaped)
{
	struct sn_deadline until = sn_deadline_in(SN_DESCENDANTS_LIMIT_MS);
	int status;
	pid_t rc;

	for (;;) {
		rc = waitpid(-1, &status, WNOHANG);
		if (rc > 0) {
			if (rc == helper) {
				*helper_status = status;
				*helper_reaped = true;
			}
			continue;
		}
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0 || sn_deadline_expired(until))
			return;		/* ECHILD: nothing left */
		kill_children(self);
		usleep(1000);
	}
}

static void __attribute__((noreturn))
supervise(const struct sn_helper_spec *spec, pid_t helper, pid_t parent,
	  int report_fd)
{
	struct child_report r = { .kind = REPORT_STATUS };
	struct sn_deadline deadline = sn_deadline_in((int64_t)spec->timeout_ms +
						     spec->kill_grace_ms);
	struct sn_deadline kill_at = deadline;
	bool killing = false, reaped = false;
	pid_t self = getpid();
	sigset_t wake;
	int status = 0;

	sigemptyset(&wake);
	sigaddset(&wake, SIGCHLD);
	sigaddset(&wake, SIGTERM);
	sigaddset(&wake, SIGINT);
	sigaddset(&wake, SIGHUP);
	/* slurmstepd gone (PR_SET_PDEATHSIG set before the fork): stop. */
	if (getppid() != parent)
		kill(self, SIGTERM);
	while (!reaped) {
		struct timespec ts = { 0, 0 };
		pid_t rc;
		int sig;

		if (killing && sn_deadline_expired(kill_at))
			break;
		if (!killing && sn_deadline_expired(deadline)) {
			/* Our own deadline, should the parent not act. */
			killpg(self, SIGTERM);
			kill_at = sn_deadline_in(spec->kill_grace_ms / 2);
			killing = true;
		}
		/* Up to the next deadline, at most a slice; never 0 (a poll). */
		ts.tv_nsec = (long)sn_deadline_poll_ms(kill_at,
						       SN_POLL_SLICE_MS) *
			     1000000 + 1;
		sig = sigtimedwait(&wake, NULL, &ts);
		if (sig > 0 && sig != SIGCHLD && !killing) {
			/* The parent's deadline (it signalled our group) or
			 * its death: the helper has half the grace period. */
			killpg(self, SIGTERM);
			kill_at = sn_deadline_in(spec->kill_grace_ms / 2);
			killing = true;
		}
		while ((rc = waitpid(-1, &status, WNOHANG)) > 0) {
			if (rc == helper) {
				r.status = status;
				reaped = true;
			}
		}
	}
	kill_descendants(self, helper, &r.status, &reaped);
	if (reaped)
		write_report(report_fd, &r);
	_exit(reaped ? 0 : 126);
}

void sn_helper_child_run(const struct sn_helper_spec *spec, pid_t parent,
			 const int fds[4])
{
	int report_fd = fds[SN_CHILD_REPORT], keep[4];
	sigset_t wake;
	pid_t helper;
	int null_fd;

	setpgid(0, 0);
	child_reset_signals();

	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 ||
	    dup2(fds[SN_CHILD_OUT], STDOUT_FILENO) < 0 ||
	    dup2(fds[SN_CHILD_ERR], STDERR_FILENO) < 0)
		child_fail(report_fd, SN_HELPER_STAGE_SETUP);
	if (fds[SN_CHILD_RESULT] >= 0 &&
	    place_result_fd(spec, fds[SN_CHILD_RESULT], &report_fd) < 0)
		child_fail(report_fd, SN_HELPER_STAGE_SETUP);
	if (spec->drop_privileges) {
		if (child_drop_privileges(spec) < 0)
			child_fail(report_fd, SN_HELPER_STAGE_PRIVILEGES);
	} else if (child_reset_oom_score() < 0) {
		child_fail(report_fd, SN_HELPER_STAGE_SETUP);
	}
	keep[0] = report_fd;
	keep[1] = spec->pass_fd[0];
	keep[2] = spec->pass_fd[1];
	keep[3] = fds[SN_CHILD_RESULT] >= 0 ? spec->result_fd : -1;
	if (close_all_except(keep, 4) < 0)
		child_fail(report_fd, SN_HELPER_STAGE_SETUP);

	/* After the switch to the job user, which clears the parent-death
	 * signal.  It follows the forking thread: slurmstepd calls user_init
	 * from its main thread. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 ||
	    prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
		child_fail(report_fd, SN_HELPER_STAGE_SETUP);
	prctl(PR_SET_DUMPABLE, 0);
	sigemptyset(&wake);
	sigaddset(&wake, SIGCHLD);
	sigaddset(&wake, SIGTERM);
	sigaddset(&wake, SIGINT);
	sigaddset(&wake, SIGHUP);
	sigprocmask(SIG_BLOCK, &wake, NULL);

	helper = fork();
	if (helper < 0)
		child_fail(report_fd, SN_HELPER_STAGE_FORK);
	if (helper == 0) {
		child_reset_signals();
		/* The descriptors the helper keeps besides the result's (the
		 * supervisor has them close-on-exec, as they were opened). */
		for (int i = 0; i < 2; i++)
			if (spec->pass_fd[i] > 2 &&
			    fcntl(spec->pass_fd[i], F_SETFD, 0) < 0)
				child_fail(report_fd, SN_HELPER_STAGE_SETUP);
		execve(spec->path, spec->argv, spec->envp);
		child_fail(report_fd, SN_HELPER_STAGE_EXEC);
	}
	/* The helper's alone: its end closes when the helper's family is. */
	if (fds[SN_CHILD_RESULT] >= 0)
		close(spec->result_fd);
	supervise(spec, helper, parent, report_fd);
}

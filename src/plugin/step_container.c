/* SPDX-License-Identifier: MIT */
/*
 * slurmstepd, a step in a pyxis container (srun --container-image=...):
 * the NCCL the tasks load is the image's, and the image exists only once
 * pyxis's task_init has created and started the container (pyxis 0.24:
 * the first local task does, under its lock; the others wait).  A task
 * past pyxis's task_init lives in the container's mount namespace, where
 * neither nccl-warmup nor the admin's record sinks are, and it is no
 * longer root-capable.  So:
 *
 *  - user_init (slurmstepd, before any task is forked) maps a gate shared
 *    by the node's tasks (a process-shared robust mutex, the verdict and
 *    the line for the user) and forks an agent: a copy of slurmstepd in
 *    the host's namespaces, holding none of its descriptors, that waits
 *    on a pipe for a task's pid;
 *  - in task_init, the first task to take the lock writes its own pid
 *    (enroot has no PID namespace: a host pid, whose /proc/PID/root is
 *    the container's root); the agent, still root, checks that PID is a
 *    task of this step (slurmstepd's child, the job user's), opens its
 *    /proc/PID/root and runs the usual warmup (the helper as the job
 *    user under the usual deadline, the reuse and the record) with
 *    --container-pid PID --container-image IMAGE --container-root-fd FD
 *    (that root, inherited: the task is never made dumpable), stores
 *    the verdict and its line in the gate, and says so on a second
 *    pipe; that task prints the line.  Every other task waits on the
 *    lock (bounded by the warmup's deadline) and passes or fails the
 *    same way, silently: one message per node.
 *
 * Listed after pyxis is required: listed before, our task_init runs in
 * slurmstepd's own mount namespace (no container yet).  That is detected
 * (the task's mount namespace is still user_init's), said, and the
 * host-side warmup runs instead, through the same agent: a step is never
 * failed for the site's plugstack order (docs/admin-guide.md).
 *
 * The agent ends when its warmup is done, or when no one can write to
 * it any more (every task exec'd or ended, slurmstepd's exit closed its
 * end): it never outlives the step.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "helper_exec.h"
#include "protocol/helper_protocol.h"
#include "plugin.h"
#include "as_root.h"
#include "spank_wrap.h"
#include "step_tell.h"

/* pyxis's option naming the image (pyxis 0.24 args.c). */
#define SN_PYXIS_IMAGE_OPTION "container-image"

/* "mnt:[4026531840]": which mount namespace the process is in. */
static int mount_ns(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/ns/mnt", buf, len - 1);

	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static struct sn_container_gate *gate_map(void)
{
	struct sn_container_gate *g;
	pthread_mutexattr_t attr;
	int rc;

	g = mmap(NULL, sizeof(*g), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g == MAP_FAILED)
		return NULL;
	rc = pthread_mutexattr_init(&attr);
	if (!rc)
		rc = pthread_mutexattr_setpshared(&attr,
						  PTHREAD_PROCESS_SHARED);
	if (!rc)
		rc = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	if (!rc)
		rc = pthread_mutex_init(&g->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	if (rc) {
		munmap(g, sizeof(*g));
		return NULL;
	}
	g->state = GATE_PENDING;
	return g;
}

static bool task_setting(const char *entry)
{
	return strncmp(entry, "NCCL_", 5) == 0 ||
	       strncmp(entry, "LD_LIBRARY_PATH=", 16) == 0;
}

/* The task's settings into the gate; false if they do not fit. */
static bool gate_env_store(struct sn_container_gate *g, char **env)
{
	size_t n;

	g->env_len = 0;
	for (; env && *env; env++) {
		if (!task_setting(*env))
			continue;
		n = strlen(*env) + 1;
		if (g->env_len + n > sizeof(g->env))
			return false;
		memcpy(g->env + g->env_len, *env, n);
		g->env_len += n;
	}
	return true;
}

/*
 * The helper's env: the job's (user_init's) without its NCCL_*, then the
 * task's NCCL_* and its LD_LIBRARY_PATH renamed (helper_protocol.h).
 * NULL: out of memory (the job's is used).
 */
static char **helper_env(struct sn_container_gate *g, char **job)
{
	static const char ld[] = "LD_LIBRARY_PATH=";
	size_t n = 1, i = 0, off;
	char **env;

	for (char **e = job; e && *e; e++)
		n++;
	for (off = 0; off < g->env_len; off += strlen(g->env + off) + 1)
		n++;
	env = calloc(n, sizeof(*env));
	if (!env)
		return NULL;
	for (char **e = job; e && *e; e++)
		if (strncmp(*e, "NCCL_", 5) != 0)
			env[i++] = *e;
	for (off = 0; off < g->env_len; off += strlen(g->env + off) + 1) {
		char *entry = g->env + off;

		if (strncmp(entry, ld, sizeof(ld) - 1) == 0) {
			if (asprintf(&env[i], SN_HELPER_ENV_CONTAINER_LDPATH "=%s",
				     entry + sizeof(ld) - 1) < 0)
				env[i] = NULL;
			else
				i++;
		} else {
			env[i++] = entry;
		}
	}
	env[i] = NULL;
	return env;
}

/* Reads PPid and the four Uid fields of an open /proc/PID/status. */
static int task_status(int fd, pid_t *ppid, uid_t uid[4])
{
	char line[256];
	int found = 0;
	FILE *f = fdopen(fd, "re");

	if (!f) {
		close(fd);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "PPid: %d", ppid) == 1)
			found |= 1;
		else if (sscanf(line, "Uid: %u %u %u %u", &uid[0], &uid[1],
				&uid[2], &uid[3]) == 4)
			found |= 2;
	}
	fclose(f);
	return found == 3 ? 0 : -1;
}

/*
 * The task's container root, opened here, as root: the task stays not
 * dumpable (as Slurm's setuid() left it), so the job user's helper
 * could not open /proc/PID/root itself; it inherits this descriptor.
 * PID came over the agent's pipe, which only this step's tasks hold; it
 * must still be a child of slurmstepd running as the job user (through
 * the /proc/PID directory opened first: a reused pid fails).  Returns a
 * descriptor above 2, or -1 with errno set.
 */
static int task_root_open(const struct sn_plugin *p,
			  const struct sn_job_ids *ids, pid_t pid)
{
	char path[64];
	uid_t uid[4];
	pid_t ppid = -1;
	int dir, fd = -1, sfd, err;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -1;
	sfd = openat(dir, "status", O_RDONLY | O_CLOEXEC);
	if (sfd >= 0 && task_status(sfd, &ppid, uid) == 0) {
		if (ppid == p->stepd_pid && uid[0] == ids->uid &&
		    uid[1] == ids->uid && uid[2] == ids->uid &&
		    uid[3] == ids->uid)
			fd = openat(dir, "root",
				    O_PATH | O_DIRECTORY | O_CLOEXEC);
		else
			errno = EPERM;
	}
	err = errno;
	close(dir);
	if (fd >= 0 && fd < 3) {
		int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);

		err = errno;
		close(fd);
		fd = high;
	}
	errno = err;
	return fd;
}

/* task_root_open() with euid 0 (user_init's euid is the job user's). */
static int task_root_take(const struct sn_plugin *p,
			  const struct sn_job_ids *ids, pid_t pid)
{
	struct sn_priv priv = SN_PRIV_INIT;
	int fd = -1, err = EPERM;

	if (sn_priv_enter(&priv, "the container's root") == 0) {
		fd = task_root_open(p, ids, pid);
		err = errno;
	}
	if (sn_priv_leave(&priv) < 0) {
		if (fd >= 0)
			close(fd);
		fd = -1;
		err = EPERM;
	}
	errno = err;
	return fd;
}

/* The agent: waits for a task's pid (0: no container), warms, tells. */
static void agent(struct sn_plugin *p, spank_t sp,
		  const struct sn_job_ids *ids, int pid_rd, int verdict_wr)
{
	struct sn_container_gate *g = p->gate;
	pid_t pid;
	ssize_t n;

	(void)sn_close_all_but(pid_rd, verdict_wr);
	do {
		n = read(pid_rd, &pid, sizeof(pid));
	} while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(pid))
		return;		/* no task came: nothing to warm */
	p->container_pid = pid;
	p->in_agent = true;
	g->state = GATE_FAILED;
	if (pid > 0) {
		p->container_root_fd = task_root_take(p, ids, pid);
		if (p->container_root_fd < 0) {
			char line[512], node[256];

			if (gethostname(node, sizeof(node)) < 0)
				snprintf(node, sizeof(node), "(unknown node)");
			node[sizeof(node) - 1] = '\0';
			snprintf(line, sizeof(line),
				 "warmup failed on node %s: cannot open the container of task %d (container image %s): %s; the step fails, report it to your admins",
				 node, (int)pid, p->container_image,
				 strerror(errno));
			sn_step_tell(p, true, line);
			goto verdict;
		}
		p->helper_env = helper_env(g, sn_spank_job_env(sp));
	}
	g->state = sn_step_warmup(p, sp, ids) < 0 ? GATE_FAILED : GATE_PASSED;
verdict:
	if (write(verdict_wr, "v", 1) < 0)
		return;		/* the tasks see the pipe close instead */
}

/* Forks the agent (a grandchild: no zombie for slurmstepd to meet). */
static int agent_start(struct sn_plugin *p, spank_t sp,
		       const struct sn_job_ids *ids)
{
	int pid_pipe[2], verdict_pipe[2], status;
	pid_t child;

	if (pipe2(pid_pipe, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(verdict_pipe, O_CLOEXEC) < 0) {
		close(pid_pipe[0]);
		close(pid_pipe[1]);
		return -1;
	}
	child = fork();
	if (child == 0) {
		close(pid_pipe[1]);
		close(verdict_pipe[0]);
		if (fork() == 0)
			agent(p, sp, ids, pid_pipe[0], verdict_pipe[1]);
		_exit(0);
	}
	close(pid_pipe[0]);
	close(verdict_pipe[1]);
	p->pid_fd = pid_pipe[1];
	p->verdict_fd = verdict_pipe[0];
	if (child < 0)
		return -1;
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	return 0;
}

bool sn_step_container_user_init(struct sn_plugin *p, spank_t sp,
				 const struct sn_job_ids *ids)
{
	int rc;

	rc = sn_spank_option_value(sp, SN_PYXIS_IMAGE_OPTION,
				   p->container_image,
				   sizeof(p->container_image));
	if (rc == 0)
		return false;
	if (rc < 0) {
		sn_log_error("the step's --%s is longer than %zu characters; the warmup cannot name it: use a shorter image name",
			     SN_PYXIS_IMAGE_OPTION,
			     sizeof(p->container_image) - 1);
		p->fail_tasks = true;
		return true;
	}
	p->stepd_pid = getpid();	/* the tasks' parent */
	if (mount_ns(p->host_mntns, sizeof(p->host_mntns)) < 0)
		p->host_mntns[0] = '\0';
	p->gate = gate_map();
	if (!p->gate || agent_start(p, sp, ids) < 0) {
		sn_log_error("cannot set up the warmup of container image %s (%s); the step fails, try again",
			     p->container_image, strerror(errno));
		p->fail_tasks = true;
	}
	return true;
}

/* The helper's deadline plus the supervisor's margins, and 5 s. */
static void gate_deadline(const struct sn_plugin *p, struct timespec *ts)
{
	unsigned int ms = p->cfg.warmup_timeout_s * 1000 + SN_WARMUP_SLACK_MS +
			  SN_WARMUP_KILL_GRACE_MS + 5000;

	sn_clock_wall_after(ms, ts);
}

/*
 * The first task: in the container yet?  Hands its pid (or 0, wrong
 * plugstack order) to the agent and waits for the verdict.
 */
static void warm(struct sn_plugin *p, spank_t sp,
		 const struct timespec *deadline)
{
	struct sn_container_gate *g = p->gate;
	struct pollfd pfd = { .fd = p->verdict_fd, .events = POLLIN };
	char ns[64], node[256], byte;
	pid_t pid = getpid();
	int rc;

	if (gethostname(node, sizeof(node)) < 0)
		snprintf(node, sizeof(node), "(unknown node)");
	node[sizeof(node) - 1] = '\0';
	if (p->host_mntns[0] && mount_ns(ns, sizeof(ns)) == 0 &&
	    strcmp(ns, p->host_mntns) == 0) {
		sn_log_user("on node %s the container of image %s did not exist yet when spank-nccl's task_init ran: spank-nccl is listed before pyxis in plugstack.conf. The host's NCCL was warmed instead of the image's; ask your admins to list pyxis first (docs/admin-guide.md)",
			    node, p->container_image);
		pid = 0;
	}
	g->state = GATE_FAILED;
	if (pid && !gate_env_store(g, sn_spank_job_env(sp))) {
		sn_log_error("warmup failed on node %s: the NCCL_* and LD_LIBRARY_PATH of container image %s are over %zu bytes; shorten them",
			     node, p->container_image, sizeof(g->env));
		return;
	}
	/*
	 * Slurm's setuid() to the job user left the task not dumpable (its
	 * memory is a copy of slurmstepd's), and it stays so while it waits:
	 * the agent, root, opens its /proc/PID/root for the helper.
	 */
	rc = write(p->pid_fd, &pid, sizeof(pid)) == (ssize_t)sizeof(pid);
	if (rc) {
		do {
			rc = poll(&pfd, 1, sn_clock_wall_left_ms(deadline));
		} while (rc < 0 && errno == EINTR);
		rc = rc > 0 && read(p->verdict_fd, &byte, 1) == 1;
	}
	if (!rc) {
		g->state = GATE_FAILED;
		sn_log_error("warmup failed on node %s: the warmup of container image %s gave no verdict within %u s; the step fails, report it to your admins",
			     node, p->container_image, p->cfg.warmup_timeout_s);
		return;
	}
	if (g->log[0])
		sn_log_info("%s", g->log);
	if (g->line[0])
		sn_step_tell(p, g->line_error, g->line);
	if (g->lines[0])
		sn_step_tell_lines(p, g->lines);
}

int sn_step_container_task_init(struct sn_plugin *p, spank_t sp)
{
	struct sn_container_gate *g = p->gate;
	struct timespec deadline;
	int rc;

	gate_deadline(p, &deadline);
	rc = pthread_mutex_timedlock(&g->lock, &deadline);
	if (rc == EOWNERDEAD) {
		/* The first task died while waiting: no verdict to share. */
		pthread_mutex_consistent(&g->lock);
		if (g->state == GATE_PENDING)
			g->state = GATE_FAILED;
		rc = 0;
	}
	if (rc) {
		sn_log_error("waited past the warmup's deadline (%u s) for another task of this node to warm the NCCL of container image %s (%s); the task fails",
			     p->cfg.warmup_timeout_s, p->container_image,
			     strerror(rc));
		return -1;
	}
	if (g->state == GATE_PENDING)
		warm(p, sp, &deadline);
	rc = g->state == GATE_PASSED ? 0 : -1;
	pthread_mutex_unlock(&g->lock);
	return rc;
}

void sn_step_container_fini(struct sn_plugin *p)
{
	if (!p->gate)
		return;
	close(p->pid_fd);
	close(p->verdict_fd);
	munmap(p->gate, sizeof(*p->gate));
	p->gate = NULL;
}

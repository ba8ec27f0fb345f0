/* SPDX-License-Identifier: MIT */
/* The fabric warmup's authentication for one step (step_fabric_auth.h). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "as_root.h"
#include "base/clock.h"
#include "helper_exec.h"
#include "helper_child.h"
#include "plugin.h"
#include "spank_wrap.h"
#include "step_fabric_auth.h"
#include "step_key.h"
#include "base/strutil.h"

/* How long the derivation may outlive the helper before it is killed
 * (a process) or left behind (a thread). */
#define DERIVE_REAP_MS 2000

/* plugstack.conf's fabric_key=, else the slurm.key beside slurm.conf. */
static const char *site_key(const struct sn_plugin *p,
			    const struct sn_slurm_auth *conf)
{
	return p->cfg.fabric_key[0] ? p->cfg.fabric_key : conf->key;
}

/*
 * The derivation, as root for good, with KEY_W at descriptor 3 and ERR_W
 * as stderr, nothing else open, no environment.  Only async-signal-safe
 * calls: slurmstepd has threads.
 */
static void __attribute__((noreturn))
derive_child(char *const argv[], int key_w, int err_w)
{
	sigset_t none;
	int null_fd = open("/dev/null", O_RDWR);

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0 ||
	    dup2(err_w, 2) < 0 || dup2(key_w, 3) != 3 ||
	    fcntl(3, F_SETFD, 0) < 0 || close_range(4, ~0U, 0) < 0)
		_exit(126);
	/* user_init may run with the job user's euid; the real uid is 0. */
	sn_exec_as_root(argv);
}

/*
 * The derivation in slurmstepd (sn_fabric_key_job.thread): its inputs,
 * read before the helper starts, and what it says when joined.
 */
struct sn_fabric_key_thread {
	pthread_t tid;
	struct sn_step_key_lib *lib;
	unsigned char *site;		/* SN_STEP_KEY_SITE_MAX; wiped */
	size_t site_len;
	char cluster[sizeof(((struct sn_slurm_auth *)0)->cluster)];
	uint32_t job, step, uid;
	int key_w;			/* the pipe's write end; it closes it */
	int rc;
	double hook_ms, thread_ms;
	char why[512];
};

/* HKDF, the key's line into the pipe, every copy wiped, the pipe closed:
 * the helper then reads the key, or EOF (no key: fabric_setup). */
static void *derive_thread(void *arg)
{
	struct sn_fabric_key_thread *t = arg;
	unsigned char key[SN_STEP_KEY_BYTES];
	double t0 = sn_clock_ms();

	t->rc = sn_step_key_derive(t->lib, t->site, t->site_len, t->cluster,
				   t->job, t->step, t->uid, key, t->why,
				   sizeof(t->why));
	explicit_bzero(t->site, t->site_len);
	if (t->rc == 0)
		t->rc = sn_step_key_write(t->key_w, key, t->why,
					  sizeof(t->why));
	explicit_bzero(key, sizeof(key));
	close(t->key_w);
	t->thread_ms = sn_clock_ms() - t0;
	return NULL;
}

static void derive_free(struct sn_fabric_key_thread *t)
{
	if (t->site) {
		explicit_bzero(t->site, SN_STEP_KEY_SITE_MAX);
		munmap(t->site, SN_STEP_KEY_SITE_MAX);
	}
	sn_step_key_close(t->lib);
	free(t);
}

/*
 * The step key derived here, where libcrypto is mapped (step_key.h):
 * the site key SITE read as root (as_root.h: process-wide, so here, in
 * the calling thread), a pipe whose read end goes to *KEY_FD, and a
 * thread (JOB's) that derives the key and writes it there while the
 * helper starts: libcrypto's first set-up in a fresh slurmstepd (about
 * 1 ms) is off the step's path, as the helper reads the key only when
 * it joins, after its exec and local checks.  A thread, not a process:
 * slurmstepd has threads already, and the helper's supervisor, forked
 * meanwhile, calls only async-signal-safe functions (helper_child.c);
 * sn_step_fabric_auth_end joins it before user_init returns (or leaves
 * it, stuck, DERIVE_REAP_MS after the helper).  -1 (WHY) to take the
 * exec path instead, nothing left open or running; with JOB's priv_lost
 * when the privileged section could not be left (the step must fail).
 */
static int derive_here(const char *site, const struct sn_slurm_auth *conf,
		       const struct sn_job_ids *ids, int *key_fd,
		       struct sn_fabric_key_job *job, char *why, size_t len)
{
	struct sn_fabric_key_thread *t = calloc(1, sizeof(*t));
	struct sn_priv priv = SN_PRIV_INIT;
	sigset_t all, old;
	int fds[2], rc = -1;

	if (!t) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	/* Zeros in a process forked meanwhile (the helper's supervisor). */
	t->site = mmap(NULL, SN_STEP_KEY_SITE_MAX, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t->site == MAP_FAILED ||
	    madvise(t->site, SN_STEP_KEY_SITE_MAX, MADV_WIPEONFORK) < 0) {
		snprintf(why, len, "no memory for the site key: %s",
			 strerror(errno));
		if (t->site == MAP_FAILED)
			t->site = NULL;
		derive_free(t);
		return -1;
	}
	if (!(t->lib = sn_step_key_open(why, len))) {
		derive_free(t);
		return -1;
	}
	if (sn_priv_enter(&priv, "the fabric warmup's site key") == 0)
		rc = sn_step_key_site_read(site, t->site, &t->site_len, why,
					   len);
	else
		snprintf(why, len, "not root");
	if (sn_priv_leave(&priv) < 0) {
		job->priv_lost = true;
		rc = -1;
	}
	if (rc == 0 && pipe2(fds, O_CLOEXEC) < 0) {
		snprintf(why, len, "no pipe for the key: %s", strerror(errno));
		rc = -1;
	}
	if (rc < 0) {
		derive_free(t);
		return -1;
	}
	snprintf(t->cluster, sizeof(t->cluster), "%s", conf->cluster);
	t->job = ids->job_id;
	t->step = ids->step_id;
	t->uid = (uint32_t)ids->uid;
	t->key_w = fds[1];
	/* Every signal blocked in it: slurmstepd's go to its own threads,
	 * and a write to a pipe whose reader left fails with EPIPE. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t->tid, NULL, derive_thread, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		snprintf(why, len, "no thread for the key: %s", strerror(rc));
		close(fds[0]);
		close(fds[1]);
		derive_free(t);
		return -1;
	}
	*key_fd = fds[0];
	job->thread = t;
	return 0;
}

/*
 * The thread joined; its failure, or its times, to slurmd's log.  Joined
 * for at most DERIVE_REAP_MS past the helper, as the exec path is reaped:
 * a thread stuck in libcrypto (a lock held by another thread, a provider
 * module that never loads) must not hold slurmstepd in user_init.  Such a
 * thread is left detached with its memory, the site key's copy wiped under
 * it; the helper, which never got a key, has failed as fabric_setup.
 */
static void derive_join(struct sn_fabric_key_job *job, const char *node)
{
	struct sn_fabric_key_thread *t = job->thread;
	struct timespec until;
	int rc;

	sn_clock_wall_after(DERIVE_REAP_MS, &until);
	rc = pthread_timedjoin_np(t->tid, NULL, &until);
	job->thread = NULL;
	if (rc == ETIMEDOUT) {
		explicit_bzero(t->site, SN_STEP_KEY_SITE_MAX);
		pthread_detach(t->tid);
		sn_log_error("fabric warmup on %s: the step key's derivation in slurmstepd did not end %d ms after the helper (stuck in libcrypto?): left running, no key given",
			     node, DERIVE_REAP_MS);
		return;
	}
	if (t->rc < 0)
		sn_log_error("fabric warmup on %s: the step key's derivation failed: %s",
			     node, t->why);
	else
		sn_log_info("fabric warmup, job %u step %u: the step key derived in slurmstepd (libcrypto mapped) beside the helper's start: %.1f ms in user_init before it, %.1f ms in a thread",
			    t->job, t->step, t->hook_ms, t->thread_ms);
	derive_free(t);
}

/*
 * Starts the derivation (nccl-warmup --fabric-key-derive) writing the
 * step key into a pipe whose read end goes to *KEY_FD.  Not waited for:
 * the helper reads the key only when it joins, after its local checks,
 * so the derivation's few milliseconds overlap them.
 */
static int derive_start(const struct sn_plugin *p,
			const struct sn_job_ids *ids,
			const struct sn_slurm_auth *conf, int *key_fd,
			struct sn_fabric_key_job *job, char *message,
			size_t len)
{
	char jid[16], step[16], uid[16];
	const char *site = site_key(p, conf);
	char *argv[] = { (char *)p->cfg.warmup_helper,
			 SN_HELPER_FABRIC_KEY_DERIVE, (char *)site,
			 (char *)conf->cluster, jid, step, uid, NULL };
	int key[2] = { -1, -1 }, err[2] = { -1, -1 };

	snprintf(jid, sizeof(jid), "%u", ids->job_id);
	snprintf(step, sizeof(step), "%u", ids->step_id);
	snprintf(uid, sizeof(uid), "%u", (unsigned int)ids->uid);
	if (pipe2(key, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
	    fcntl(err[0], F_SETFL, O_NONBLOCK) < 0 ||
	    (job->pid = fork()) < 0) {
		snprintf(message, len,
			 "the fabric warmup cannot start the step key's derivation: %s",
			 strerror(errno));
		for (int i = 0; i < 2; i++) {
			if (key[i] >= 0)
				close(key[i]);
			if (err[i] >= 0)
				close(err[i]);
		}
		job->pid = -1;
		return -1;
	}
	if (job->pid == 0)
		derive_child(argv, key[1], err[1]);
	close(key[1]);
	close(err[1]);
	*key_fd = key[0];
	job->err_fd = err[0];
	return 0;
}

int sn_step_fabric_auth(const struct sn_plugin *p,
			const struct sn_job_ids *ids, int *key_fd,
			struct sn_fabric_key_job *job, char *message,
			size_t len)
{
	const char *path = getenv("SLURM_CONF");
	struct sn_slurm_auth *conf = calloc(1, sizeof(*conf));
	enum sn_fabric_auth how;
	struct sn_error e;
	char why[512];
	double t0 = sn_clock_ms();
	int rc = -1;

	*key_fd = -1;
	job->pid = -1;
	job->err_fd = -1;
	job->priv_lost = false;
	job->thread = NULL;
	if (!conf) {
		snprintf(message, len, "fabric warmup: out of memory");
		return -1;
	}
	if (!path || !*path)
		path = SN_SLURM_CONF_DEFAULT;
	if (sn_slurm_auth_read(path, conf, &e) < 0 &&
	    p->cfg.fabric_auth != SN_FABRIC_AUTH_MUNGE)
		sn_log_info("fabric warmup: %s: AuthType and ClusterName unknown",
			    e.msg);
	if (sn_auth_choice_resolve(p->cfg.fabric_auth, conf->auth_type, &how,
				   &e) < 0)
		snprintf(message, len, "%s", e.msg);
	else if (how == SN_FABRIC_AUTH_MUNGE)
		rc = 0;
	else if (derive_here(site_key(p, conf), conf, ids, key_fd, job, why,
			     sizeof(why)) == 0) {
		job->thread->hook_ms = sn_clock_ms() - t0;
		rc = 0;
	} else if (job->priv_lost)
		snprintf(message, len,
			 "the fabric warmup's step key: slurmstepd could not return to the job user's ids");
	else {
		sn_log_info("fabric warmup, job %u step %u: the step key derived by nccl-warmup %s (not in slurmstepd: %s)",
			    ids->job_id, ids->step_id,
			    SN_HELPER_FABRIC_KEY_DERIVE, why);
		rc = derive_start(p, ids, conf, key_fd, job, message, len);
	}
	free(conf);
	return rc;
}

void sn_step_fabric_auth_end(struct sn_fabric_key_job *job, const char *node)
{
	struct sn_deadline until = sn_deadline_in(DERIVE_REAP_MS);
	char err[512];
	ssize_t n = 0;
	int status = 0;
	pid_t rc;

	if (job->thread)
		derive_join(job, node);
	if (job->pid <= 0)
		return;
	while ((rc = waitpid(job->pid, &status, WNOHANG)) == 0 &&
	       !sn_deadline_expired(until))
		usleep(1000);
	if (rc == 0) {
		kill(job->pid, SIGKILL);
		rc = waitpid(job->pid, &status, 0);
	}
	if (job->err_fd >= 0) {
		n = read(job->err_fd, err, sizeof(err) - 1);
		close(job->err_fd);
	}
	err[n > 0 ? n : 0] = '\0';
	if (rc != job->pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		char *nl = strchr(err, '\n');

		if (nl)
			*nl = '\0';
		sn_str_printable(err, sizeof(err), err);
		sn_log_error("fabric warmup on %s: the step key's derivation failed: %s",
			     node, err[0] ? err : "it did not run as root");
	}
	job->pid = -1;
	job->err_fd = -1;
}

/* SPDX-License-Identifier: MIT */
/*
 * slurmstepd: a step killed while its NCCL is stuck leaves RAS's verdict
 * in a fleet record (issue 35 item 3).  No SPANK hook runs between the
 * kill signal (scancel, the time limit, srun --signal) and the tasks'
 * deaths, and a dying step's RAS is gone within ~100 ms of it (measured:
 * docs/results/2026-11-28-cpu-ras-hooks.txt; asked from the first
 * task_exit, the fake's RAS did not answer).  So the verdict is taken
 * before: user_init forks a sampler, which becomes the job's user (RAS
 * is the job's: its word is the job's story, the record's fault "job")
 * and asks the step's RAS every ras_sample= seconds, keeping the last
 * verdict in a page shared with slurmstepd.  The first task of the node
 * that a signal kills (task_exit, root) writes the record when that
 * verdict names ranks missing, dead or behind; slurm_spank_exit kills the
 * sampler.  Only with ras=step, a record sink and the step's
 * NCCL_RAS_ADDR; steps whose tasks exit by themselves get no record.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/envlist.h"
#include "base/strutil.h"
#include "helper_exec.h"
#include "helper_child.h"
#include "plugin.h"
#include "protocol/ras_ask.h"
#include "protocol/ras_status.h"
#include "spank_wrap.h"

/* A question to a stuck step's RAS: real RAS waits 5 s on a dead peer. */
#define HANG_ASK_MS 10000
/* How long the sampler may take to leave when woken at the step's end. */
#define HANG_STOP_GRACE_MS 100

/* The sampler's last verdict, in a page shared with slurmstepd: seq is
 * odd while the sampler writes. */
struct sn_hang_sample {
	pid_t pid;			/* the sampler's */
	unsigned int seq;
	double taken;			/* sn_clock_wall_s(); 0: none yet */
	char verdict[2048];		/* "": every communicator in step */
};

/* SLURM_PROCID of local process PID (root reads any environ); "" none. */
static void task_of(long pid, char *task, size_t cap)
{
	static char buf[256 * 1024];
	long n = sn_proc_environ_read(pid, buf, sizeof(buf));

	task[0] = '\0';
	for (char *kv = buf; n > 0 && kv < buf + n; kv += strlen(kv) + 1)
		if (strncmp(kv, "SLURM_PROCID=", 13) == 0)
			sn_strlcpy(task, kv + 13, cap);
}

/* "rank R (task T on NODE, GPU G)", the task where its process is still
 * readable on this node, else RAS's pid and host. */
static void describe(const void *ctx, const struct sn_ras_rank *k, char *out,
		     size_t cap)
{
	const char *node = ctx;
	char gpu[32] = "", task[16] = "";

	if (k->nvml_dev >= 0)
		snprintf(gpu, sizeof(gpu), ", GPU %ld", k->nvml_dev);
	if (k->pid >= 0)
		task_of(k->pid, task, sizeof(task));
	if (task[0])
		snprintf(out, cap, "rank %ld (task %s on %s%s)", k->rank, task,
			 node, gpu);
	else if (k->pid >= 0)
		snprintf(out, cap, "rank %ld (process %ld on %s%s)", k->rank,
			 k->pid, k->host, gpu);
	else
		snprintf(out, cap, "rank %ld (its process unknown to RAS)",
			 k->rank);
}

/* RAS's verdict on the step's communicators into OUT; "" all healthy or
 * no answer (WHY says). */
static void ask(const char *addr, const char *node, char *out, size_t cap,
		char *why, size_t wcap)
{
	struct sn_ras_status *st = malloc(sizeof(*st));
	struct sn_ras_answer a;
	struct sn_error err;
	size_t len = 0;

	out[0] = why[0] = '\0';
	if (!st) {
		snprintf(why, wcap, "out of memory");
		return;
	}
	if (sn_ras_ask(addr, HANG_ASK_MS, &a, why, wcap) < 0)
		goto out;
	if (!a.json || sn_ras_parse(st, a.text, a.len, &err) != 0) {
		snprintf(why, wcap, "%s: %s", addr, a.json ? err.msg :
			 "NCCL before 2.28.7 answers no JSON");
		sn_ras_answer_free(&a);
		goto out;
	}
	sn_ras_answer_free(&a);
	for (int c = 0; c < st->n_comms && len < cap; c++) {
		struct sn_ras_verdict v;
		char line[1024];

		sn_ras_verdict(st, c, &v);
		sn_ras_verdict_line(st, c, &v, describe, node, line,
				    sizeof(line));
		if (line[0])
			len += (size_t)snprintf(out + len, cap - len, "%s%s",
						len ? "; " : "", line);
	}
out:
	free(st);
}

static void sample_put(struct sn_hang_sample *h, const char *verdict)
{
	__atomic_add_fetch(&h->seq, 1, __ATOMIC_ACQ_REL);
	sn_strlcpy(h->verdict, verdict, sizeof(h->verdict));
	h->taken = sn_clock_wall_s();
	__atomic_add_fetch(&h->seq, 1, __ATOMIC_ACQ_REL);
}

/* A consistent copy of H's verdict into OUT; its time, 0 none. */
static double sample_get(const struct sn_hang_sample *h, char *out,
			 size_t cap)
{
	for (int tries = 0; tries < 100; tries++) {
		unsigned int a = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
		double taken = h->taken;

		if (a & 1)
			continue;
		sn_strlcpy(out, h->verdict, cap);
		if (__atomic_load_n(&h->seq, __ATOMIC_ACQUIRE) == a)
			return taken;
	}
	out[0] = '\0';
	return 0;
}

/*
 * The sampler: the job's user, until slurmstepd kills it or closes the
 * pipe whose read end is WAKE (slurmstepd's death).  Orphaned at once
 * (its parent exits), so that slurmstepd never reaps it; it holds
 * ALIVE's write end, whose end tells slurmstepd it is gone.
 */
static void __attribute__((noreturn))
sampler(struct sn_hang_sample *h, int wake, int alive, const char *addr,
	const char *node, const struct sn_job_ids *ids, unsigned int period_s)
{
	static char verdict[2048];
	struct pollfd pfd = { .fd = wake, .events = POLLIN };
	char why[256];

	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	if (sn_close_all_but(wake, alive) < 0 ||
	    sn_switch_ids_for_good(ids->uid, ids->gid, ids->groups,
				   ids->n_groups) < 0)
		_exit(1);
	prctl(PR_SET_DUMPABLE, 0);
	prctl(PR_SET_NAME, "spank-nccl-ras");	/* ps, top: what it is */
	while (poll(&pfd, 1, (int)period_s * 1000) == 0) {
		ask(addr, node, verdict, sizeof(verdict), why, sizeof(why));
		/* No answer: the step has no NCCL yet, or RAS is busy; the
		 * last verdict stands. */
		if (verdict[0] || !why[0])
			sample_put(h, verdict);
	}
	_exit(0);
}

void sn_step_hang_start(struct sn_plugin *p, spank_t sp,
			const struct sn_job_ids *ids)
{
	const struct sn_config *cfg = &p->cfg;
	char addr[160], node[256];
	struct sn_hang_sample *h;
	int wake[2], alive[2] = { -1, -1 }, st;
	pid_t pid;

	/* The hang record goes to record_file= and record_syslog= only. */
	if (p->fail_tasks || cfg->ras != SN_RAS_STEP || !cfg->ras_sample_s ||
	    (!cfg->record_file[0] && !cfg->record_syslog) ||
	    ids->step_id >= 0xfffffff0u ||
	    sn_spank_getenv(sp, "NCCL_RAS_ADDR", addr, sizeof(addr)) < 0 ||
	    !addr[0])
		return;
	if (gethostname(node, sizeof(node)) < 0)
		snprintf(node, sizeof(node), "(unknown node)");
	node[sizeof(node) - 1] = '\0';
	h = mmap(NULL, sizeof(*h), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (h == MAP_FAILED || pipe2(wake, O_CLOEXEC) < 0 ||
	    pipe2(alive, O_CLOEXEC) < 0) {
		sn_log_info("hang sampler not started: %s", strerror(errno));
		if (h != MAP_FAILED)
			munmap(h, sizeof(*h));
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(wake[1]);
		close(alive[0]);
		pid_t c = fork();

		if (c == 0)
			sampler(h, wake[0], alive[1], addr, node, ids,
				cfg->ras_sample_s);
		h->pid = c;	/* before slurmstepd's waitpid() returns */
		_exit(c < 0);
	}
	close(wake[0]);
	close(alive[1]);
	p->hang_wake = wake[1];
	p->hang_alive = alive[0];
	p->hang_sample = h;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || st != 0) {
		sn_log_info("hang sampler not started: fork: %s", strerror(errno));
		h->pid = 0;
		sn_step_hang_stop(p);
	}
}

/*
 * Ends the sampler before slurmstepd waits for the step's processes:
 * proctrack/linuxproc counts it among them (measured on 22.05: the step
 * stayed in CG, SIGKILL sent every 10 s, until the sampler went).
 */
void sn_step_hang_stop(struct sn_plugin *p)
{
	struct pollfd pfd = { .fd = p->hang_alive, .events = POLLIN };

	if (!p->hang_sample)
		return;
	/* Woken first: its poll on the wake pipe ends and it exits (a
	 * coverage build's _exit() then writes its counters).  Still there
	 * after HANG_STOP_GRACE_MS (inside a RAS question): killed; its pid
	 * is its own while ALIVE is open. */
	close(p->hang_wake);
	if (poll(&pfd, 1, HANG_STOP_GRACE_MS) == 0 && p->hang_sample->pid > 0)
		kill(p->hang_sample->pid, SIGKILL);
	poll(&pfd, 1, 1000);
	close(p->hang_alive);
	munmap(p->hang_sample, sizeof(*p->hang_sample));
	p->hang_sample = NULL;
}

void sn_step_task_exit(struct sn_plugin *p, spank_t sp)
{
	static uint32_t exited;
	char node[256], verdict[2048];
	struct sn_job_ids ids;
	int status = 0;
	double taken;

	if (!p->hang_sample || sn_spank_job_ids(sp, &ids) < 0)
		return;
	if (sn_spank_task_exit_status(sp, &status) < 0 || !WIFSIGNALED(status)) {
		if (++exited >= ids.local_tasks)
			sn_step_hang_stop(p);
		return;
	}
	taken = sample_get(p->hang_sample, verdict, sizeof(verdict));
	sn_step_hang_stop(p);
	sn_log_info("step %u.%u killed (signal %d): RAS's last verdict (%.0f s old): %s",
		    ids.job_id, ids.step_id, WTERMSIG(status),
		    taken > 0 ? sn_clock_wall_s() - taken : -1.0,
		    verdict[0] ? verdict : taken > 0 ?
		    "every communicator in step" : "none taken");
	if (!verdict[0])
		return;
	if (gethostname(node, sizeof(node)) < 0)
		snprintf(node, sizeof(node), "(unknown node)");
	node[sizeof(node) - 1] = '\0';
	sn_step_record_hang(p, &ids, node, WTERMSIG(status), verdict,
			    sn_clock_wall_s() - taken);
}

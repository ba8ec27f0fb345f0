/* SPDX-License-Identifier: MIT */
/*
 * spank-nccl-status [--json] JOBID[.STEP]  (spank-nccl-status(1))
 * Where a step's NCCL is stuck: finds the step's nodes (squeue), starts
 * itself there (srun --overlap --jobid) as the caller, or root as the
 * job's user (Slurm lets no other uid start a step in a job), reads the step's processes and
 * asks NCCL's RAS on the first node (status_node.c), then names every
 * rank that is missing, dead or off the others' collective count by
 * Slurm task, node and GPU (status_render.c).
 * Exit: 0 answered, 1 no answer (the message says why), 2 usage.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fabric/hostlist.h"
#include "status.h"

static void usage(FILE *to)
{
	fprintf(to,
		"usage: spank-nccl-status [--json] JOBID[.STEP]\n"
		"  names the ranks of the step's NCCL communicators that are missing,\n"
		"  dead or behind, by Slurm task, node and GPU (NCCL 2.24+ RAS)\n"
		"  --json  one JSON object for tools\n");
}

static bool digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* squeue's steps of JOB: "STEPID USER NODES" lines into OUT. */
static int job_steps(const char *job, char *out, size_t cap)
{
	char cmd[128];
	size_t n;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "squeue -h -s -j %s -o '%%i %%u %%N' 2>/dev/null", job);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	return pclose(p) == 0 ? 0 : -1;
}

/* The step to ask: STEP if given, else the job's highest numbered step. */
static int pick_step(const char *job, const char *want, struct status_run *run)
{
	static char steps[65536];
	char *save = NULL, *line;
	long best = -1;

	if (job_steps(job, steps, sizeof(steps)) != 0 || !steps[0]) {
		fprintf(stderr,
			"spank-nccl: job %s is not running, or is not yours (only its user and\n"
			"spank-nccl: root can ask it)\n", job);
		return -1;
	}
	for (line = strtok_r(steps, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char id[64], user[64], nodes[4096], *dot;

		if (sscanf(line, "%63s %63s %4095s", id, user, nodes) != 3)
			continue;
		dot = strchr(id, '.');
		if (!dot || !digits(dot + 1))
			continue;
		if (want ? strcmp(dot + 1, want) != 0 : atol(dot + 1) <= best)
			continue;
		best = atol(dot + 1);
		snprintf(run->step, sizeof(run->step), "%s", dot + 1);
		snprintf(run->user, sizeof(run->user), "%s", user);
		snprintf(run->nodes, sizeof(run->nodes), "%s", nodes);
	}
	if (best < 0) {
		fprintf(stderr, "spank-nccl: job %s has no running step%s%s\n",
			job, want ? " " : "", want ? want : "");
		return -1;
	}
	return 0;
}

/* Root asks as the job's user: Slurm lets no other uid, root included,
 * start a step in a job.  Anyone else asks as themselves. */
static int become(const char *user)
{
	struct passwd *pw;

	if (getuid() != 0)
		return 0;
	pw = getpwnam(user);
	if (!pw || pw->pw_uid == 0)
		return pw ? 0 : -1;
	if (initgroups(pw->pw_name, pw->pw_gid) != 0 ||
	    setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0)
		return -1;
	return 0;
}

/* Runs ARGV as USER (become()), its stdout into OUT (grown), its
 * stderr's last bytes into ERR.  Returns its exit status, -1 if it could
 * not run. */
static int capture(char *const argv[], const char *user,
		   struct status_buf *out, char *err, size_t err_cap)
{
	int o[2], e[2], status;
	pid_t pid;
	FILE *ef;
	size_t en = 0;

	if (pipe(o) != 0 || pipe(e) != 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(o[1], 1);
		dup2(e[1], 2);
		close(o[0]);
		close(e[0]);
		if (become(user) != 0) {
			fprintf(stderr, "cannot become user %s: %s\n", user,
				strerror(errno));
			_exit(127);
		}
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	status_buf_read(out, o[0]);
	close(o[0]);
	ef = fdopen(e[0], "r");
	err[0] = '\0';
	if (ef) {
		char line[512];

		while (fgets(line, sizeof(line), ef)) {
			size_t l = strlen(line);

			if (en + l >= err_cap)
				en = 0;	/* keep the last lines */
			memcpy(err + en, line, l + 1);
			en += l;
		}
		fclose(ef);
	} else {
		close(e[0]);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int ask_nodes(const char *job, struct status_run *run)
{
	char self[4096], nn[16], w[4200], jobid[64], err[1024];
	size_t count = 0;
	struct sn_error e;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int rc;

	if (n <= 0 || sn_hostlist_count(run->nodes, &count, &e) != 0) {
		fprintf(stderr, "spank-nccl: cannot read step %s.%s's nodes (%s)\n",
			job, run->step, run->nodes);
		return -1;
	}
	self[n] = '\0';
	snprintf(nn, sizeof(nn), "%zu", count);
	snprintf(w, sizeof(w), "--nodelist=%s", run->nodes);
	snprintf(jobid, sizeof(jobid), "--jobid=%s", job);
	{
		char *argv[] = {
			/* -n too: inside the job, srun reads SLURM_NTASKS */
			"srun", "--overlap", jobid, w, "-N", nn, "-n", nn,
			"--ntasks-per-node=1", "--label", "--quiet",
			"--kill-on-bad-exit=0", "--chdir=/", self, "--node", (char *)job,
			run->step, NULL,
		};

		rc = capture(argv, run->user, &run->out, err, sizeof(err));
	}
	if (rc != 0 || run->out.len == 0) {
		err[strcspn(err, "\n")] = '\0';
		fprintf(stderr,
			"spank-nccl: cannot reach step %s.%s on %s as you (srun: %s)\n"
			"spank-nccl: only the job's user and root can ask it\n",
			job, run->step, run->nodes, err[0] ? err : "failed");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct status_run run;
	char job[32], *dot;
	bool json = false;
	int i = 1, rc;

	if (argc == 4 && strcmp(argv[1], "--node") == 0) {
		const char *id = getenv("SLURM_NODEID");

		return sn_status_node(argv[2], argv[3], id && strcmp(id, "0") == 0);
	}
	if (argc > 1 && strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--json") == 0) {
		json = true;
		i++;
	}
	if (argc != i + 1 || strlen(argv[i]) >= sizeof(job)) {
		usage(stderr);
		return 2;
	}
	snprintf(job, sizeof(job), "%s", argv[i]);
	dot = strchr(job, '.');
	if (dot)
		*dot++ = '\0';
	if (!digits(job) || (dot && !digits(dot))) {
		fprintf(stderr, "spank-nccl: \"%s\": expected JOBID or JOBID.STEP\n",
			argv[i]);
		return 2;
	}
	memset(&run, 0, sizeof(run));
	snprintf(run.job, sizeof(run.job), "%s", job);
	if (pick_step(job, dot, &run) != 0 || ask_nodes(job, &run) != 0)
		return 1;
	rc = status_render(&run, json);
	free(run.out.data);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * spank-nccl-status --node: runs on one node of the step, as the job's
 * user (srun --overlap), and prints, one fact a line:
 *   node NAME                 this node (gethostname)
 *   addr IP                   each of its addresses (RAS names hosts so)
 *   proc PID TASK LOCALID NCCL   a process of the step (SLURM_PROCID,
 *                             SLURM_LOCALID; NCCL: the libnccl version
 *                             it has mapped, "yes" if the name has none,
 *                             "-" if none)
 *   ras ADDR | off | default  the step's NCCL_RAS_ADDR (NCCL_RAS_ENABLE=0:
 *                             off; unset: NCCL's default)
 *   answer json|text          RAS's answer follows, one "| LINE" a line
 *   error TEXT                RAS could not be asked (why)
 * The step's processes are found by their environment (/proc/PID/environ:
 * SLURM_JOB_ID and SLURM_STEP_ID): readable only by their own user and
 * root, which is the access check too, and it finds the process NCCL runs
 * in even when the task is a launcher (torchrun) that started it.  (A
 * map the plugin wrote at task_init would know only the task's own pid,
 * and cost every step a file.)
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/envlist.h"
#include "protocol/ras_ask.h"
#include "status.h"

#define ENV_MAX (256 * 1024)
#define RAS_TIMEOUT_S 15

struct proc_env {
	char job[32], step[32], task[16], local[16];
	char ras[128], enable[16];
	char conf[512];
};

static void env_take(const char *kv, const char *name, char *dst, size_t cap)
{
	size_t n = strlen(name);

	if (strncmp(kv, name, n) == 0 && kv[n] == '=')
		snprintf(dst, cap, "%s", kv + n + 1);
}

static bool read_env(const char *pid, struct proc_env *e)
{
	static char buf[ENV_MAX];
	long n;

	memset(e, 0, sizeof(*e));
	n = sn_proc_environ_read(strtol(pid, NULL, 10), buf, sizeof(buf));
	if (n < 0)
		return false;
	for (char *kv = buf; kv < buf + n; kv += strlen(kv) + 1) {
		env_take(kv, "SLURM_JOB_ID", e->job, sizeof(e->job));
		env_take(kv, "SLURM_STEP_ID", e->step, sizeof(e->step));
		env_take(kv, "SLURM_PROCID", e->task, sizeof(e->task));
		env_take(kv, "SLURM_LOCALID", e->local, sizeof(e->local));
		env_take(kv, "NCCL_RAS_ADDR", e->ras, sizeof(e->ras));
		env_take(kv, "NCCL_RAS_ENABLE", e->enable, sizeof(e->enable));
		env_take(kv, "SLURM_CONF", e->conf, sizeof(e->conf));
	}
	return true;
}

/* The libnccl PID has mapped: its version from the file name, "yes"
 * without one, "-" none. */
static void nccl_of(const char *pid, char *out, size_t cap)
{
	char path[64], line[1024];
	FILE *f;

	snprintf(out, cap, "-");
	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *lib = strstr(line, "/libnccl.so");

		if (!lib)
			continue;
		lib += strlen("/libnccl.so");
		lib[strcspn(lib, "\n")] = '\0';
		/* ".2.28.9" -> "2.28.9"; ".2" alone says no version. */
		if (lib[0] == '.' && strchr(lib + 1, '.'))
			snprintf(out, cap, "%s", lib + 1);
		else
			snprintf(out, cap, "yes");
		break;
	}
	fclose(f);
}

static void print_addrs(void)
{
	struct ifaddrs *ifs, *i;
	char ip[INET6_ADDRSTRLEN];

	if (getifaddrs(&ifs) != 0)
		return;
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
				     i->ifa_addr->sa_family != AF_INET6))
			continue;
		if (getnameinfo(i->ifa_addr, i->ifa_addr->sa_family == AF_INET ?
			sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6),
			ip, sizeof(ip), NULL, 0, NI_NUMERICHOST) == 0)
			printf("addr %s\n", ip);
	}
	freeifaddrs(ifs);
}

/* RAS's answer (ras_ask.h), one "| LINE" a line. */
static void ras_query(const char *addr)
{
	struct sn_ras_answer a;
	char why[256];

	if (sn_ras_ask(addr, RAS_TIMEOUT_S * 1000, &a, why, sizeof(why)) < 0) {
		printf("error %s\n", why);
		return;
	}
	printf("answer %s\n", a.json ? "json" : "text");
	for (char *l = a.text, *nl; *l; l = nl) {
		nl = l + strcspn(l, "\n");
		printf("| %.*s\n", (int)(nl - l - (nl > l && nl[-1] == '\r')),
		       l);
		nl += *nl == '\n';
	}
	if (a.cut)
		printf("error %s\n", why);
	sn_ras_answer_free(&a);
}

/* Slurm daemons of several clusters on one host (test clusters) reuse job
 * ids: where both name one, the step's SLURM_CONF must be ours. */
static bool other_cluster(const struct proc_env *e)
{
	const char *ours = getenv("SLURM_CONF");

	return ours && *ours && e->conf[0] && strcmp(ours, e->conf) != 0;
}

int sn_status_node(const char *job, const char *step, int query)
{
	char host[256] = "?", nccl[64], ras[160] = "";
	struct proc_env e;
	struct dirent *d;
	DIR *dir;

	gethostname(host, sizeof(host) - 1);
	printf("node %s\n", host);
	print_addrs();
	dir = opendir("/proc");
	while (dir && (d = readdir(dir))) {
		if (d->d_name[0] < '1' || d->d_name[0] > '9' ||
		    atoi(d->d_name) == (int)getpid())
			continue;
		if (!read_env(d->d_name, &e) || strcmp(e.job, job) != 0 ||
		    strcmp(e.step, step) != 0 || other_cluster(&e))
			continue;
		nccl_of(d->d_name, nccl, sizeof(nccl));
		printf("proc %s %s %s %s\n", d->d_name,
		       e.task[0] ? e.task : "-", e.local[0] ? e.local : "-",
		       nccl);
		/* The address of a process that has NCCL wins. */
		if (!ras[0] || strcmp(nccl, "-") != 0)
			snprintf(ras, sizeof(ras), "%s",
				 strcmp(e.enable, "0") == 0 ? "off" :
				 e.ras[0] ? e.ras : "default");
	}
	if (dir)
		closedir(dir);
	if (ras[0])
		printf("ras %s\n", ras);
	if (query && ras[0] && strcmp(ras, "off") != 0)
		ras_query(strcmp(ras, "default") == 0 ? "localhost:28028" : ras);
	fflush(stdout);
	return 0;
}

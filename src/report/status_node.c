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
	char path[64];
	ssize_t n;
	int fd;

	memset(e, 0, sizeof(*e));
	snprintf(path, sizeof(path), "/proc/%s/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
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

/* Connects to ADDR ("host:port"), with send/receive timeouts. */
static int ras_connect(const char *addr, char *why, size_t cap)
{
	char host[128];
	const char *port;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	struct timeval tv = { .tv_sec = RAS_TIMEOUT_S };
	char *colon;
	int fd, rc;

	snprintf(host, sizeof(host), "%s", addr);
	colon = strrchr(host, ':');
	if (!colon) {
		snprintf(why, cap, "NCCL_RAS_ADDR %s has no port", addr);
		return -1;
	}
	*colon = '\0';
	port = colon + 1;
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		snprintf(why, cap, "%s: %s", addr, gai_strerror(rc));
		return -1;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
			snprintf(why, cap, "nothing answers on %s (%s)", addr,
				 strerror(errno));
			close(fd);
			fd = -1;
		}
	} else {
		snprintf(why, cap, "socket: %s", strerror(errno));
	}
	freeaddrinfo(res);
	return fd;
}

static bool send_all(int fd, const char *s)
{
	size_t n = strlen(s);

	while (n > 0) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);

		if (w <= 0)
			return false;
		s += w;
		n -= (size_t)w;
	}
	return true;
}

/* One line of the answer into LINE, or false at its end. */
static bool read_line(FILE *f, char *line, size_t cap)
{
	if (!fgets(line, (int)cap, f))
		return false;
	line[strcspn(line, "\r\n")] = '\0';
	return true;
}

/* CLIENT PROTOCOL, SET FORMAT json (NCCL 2.28.7+; older: text), then
 * VERBOSE STATUS; NCCL closes after the answer. */
static void ras_query(const char *addr)
{
	char why[256], line[4096];
	bool json;
	FILE *f;
	int fd = ras_connect(addr, why, sizeof(why));

	if (fd < 0) {
		printf("error %s\n", why);
		return;
	}
	f = fdopen(dup(fd), "r");
	if (!f || !send_all(fd, "CLIENT PROTOCOL 2\nSET FORMAT json\n") ||
	    !read_line(f, line, sizeof(line)) ||
	    strncmp(line, "SERVER PROTOCOL ", 16) != 0 ||
	    !read_line(f, line, sizeof(line))) {
		printf("error %s did not answer as NCCL's RAS does\n", addr);
		goto out;
	}
	json = strcmp(line, "OK") == 0;
	if (!send_all(fd, "VERBOSE STATUS\n")) {
		printf("error %s: %s\n", addr, strerror(errno));
		goto out;
	}
	printf("answer %s\n", json ? "json" : "text");
	while (read_line(f, line, sizeof(line)))
		printf("| %s\n", line);
	if (ferror(f))
		printf("error %s: the answer stopped: %s\n", addr,
		       errno == EAGAIN ? "timed out" : strerror(errno));
out:
	if (f)
		fclose(f);
	close(fd);
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

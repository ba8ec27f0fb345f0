/* SPDX-License-Identifier: MIT */
/*
 * The fake NCCL's RAS (NCCL 2.24+): from the first communicator on, a
 * thread listens on NCCL_RAS_ADDR (default localhost:28028) unless
 * NCCL_RAS_ENABLE=0 and answers NCCL's text protocol: CLIENT PROTOCOL,
 * TIMEOUT, SET FORMAT text|json (json from 2.28.7), STATUS and VERBOSE
 * STATUS (then closes, as NCCL does).  Real RAS gathers every process's
 * view over its own network; the fake's processes publish theirs as
 * files in FAKE_NCCL_RAS_DIR (default /tmp/fake-nccl-ras-UID), one per
 * communicator rank, and the answering process reads its communicators'.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake_nccl.h"

#define MAX_COMMS 16
#define N_COLLS 5

static const char *const colls[N_COLLS] = {
	"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce",
};

static struct {
	pthread_mutex_t lock;
	bool started;
	ncclComm_t comms[MAX_COMMS];
	unsigned long long counts[MAX_COMMS][N_COLLS];
	bool skipped[MAX_COMMS];
} ras = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int version(void)
{
	int v = 0;

	ncclGetVersion(&v);
	return v;
}

static void dir_path(char *out, size_t len)
{
	const char *d = getenv("FAKE_NCCL_RAS_DIR");

	if (d && *d)
		snprintf(out, len, "%s", d);
	else
		snprintf(out, len, "/tmp/fake-nccl-ras-%u", (unsigned)getuid());
}

static void rank_path(unsigned long long clique, int rank, char *out,
		      size_t len)
{
	char dir[512];

	dir_path(dir, sizeof(dir));
	snprintf(out, len, "%s/%016llx.%d", dir, clique, rank);
}

/* The bootstrap interface's address, as RAS names a node. */
static void host_ip(char *out, size_t len)
{
	char name[128], *colon, *lt;

	fake_uid_bootstrap_name(name, sizeof(name));
	colon = strchr(name, ':');
	lt = strchr(name, '<');
	if (lt)
		*lt = '\0';
	snprintf(out, len, "%s", colon ? colon + 1 : "unknown");
}

/* The physical GPU of visible device DEV (CUDA_VISIBLE_DEVICES). */
static int nvml_dev(int dev)
{
	char item[32];
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");

	if (cvd && fake_list_item(cvd, dev, item, sizeof(item)) &&
	    item[0] >= '0' && item[0] <= '9')
		return atoi(item);
	return dev;
}

/* Writes slot I's line: "host pid cuda_dev nvml_dev counts...".  Locked. */
static void publish(int i)
{
	char path[600], tmp[620], host[64];
	ncclComm_t c = ras.comms[i];
	FILE *f;

	rank_path(c->clique, c->rank, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (!f)
		return;
	host_ip(host, sizeof(host));
	fprintf(f, "%s %d %d %d", host, (int)getpid(), c->device,
		nvml_dev(c->device));
	for (int j = 0; j < N_COLLS; j++)
		fprintf(f, " %llu", ras.counts[i][j]);
	fprintf(f, "\n");
	if (fclose(f) == 0)
		rename(tmp, path);
	else
		unlink(tmp);
}

struct peer {
	bool present, dead;
	char host[64];
	int pid, cuda, nvml;
	unsigned long long counts[N_COLLS];
};

static bool rank_listed(const char *var, int rank)
{
	char item[16];
	const char *list = getenv(var);

	for (int i = 0; list && fake_list_item(list, i, item, sizeof(item)); i++)
		if (atoi(item) == rank && item[0] >= '0' && item[0] <= '9')
			return true;
	return false;
}

static void read_peer(unsigned long long clique, int rank, struct peer *p)
{
	char path[600];
	FILE *f;

	memset(p, 0, sizeof(*p));
	snprintf(p->host, sizeof(p->host), "unknown");
	p->pid = p->cuda = p->nvml = -1;
	rank_path(clique, rank, path, sizeof(path));
	f = fopen(path, "r");
	if (!f)
		return;
	p->present = fscanf(f, "%63s %d %d %d %llu %llu %llu %llu %llu",
			    p->host, &p->pid, &p->cuda, &p->nvml,
			    &p->counts[0], &p->counts[1], &p->counts[2],
			    &p->counts[3], &p->counts[4]) == 9;
	fclose(f);
	/* FAKE_NCCL_RAS_DEAD: RAS lost the rank's process for good. */
	if (p->present && rank_listed("FAKE_NCCL_RAS_DEAD", rank)) {
		p->present = false;
		p->dead = true;
	}
}

static void json_comm(FILE *o, ncclComm_t c, bool first)
{
	struct peer p;
	int n = 0, k = 0;

	for (int r = 0; r < c->nranks; r++) {
		read_peer(c->clique, r, &p);
		n += p.present;
	}
	fprintf(o, "%s    {\n      \"hash\": \"0x%llx\",\n"
		"      \"secondary_hash\": \"0x0:0x0\",\n      \"size\": %d,\n"
		"      \"ranks_count\": %d,\n      \"missing_ranks_count\": %d,\n"
		"      \"ranks\": [\n", first ? "" : ",\n", c->clique, c->nranks,
		n, c->nranks - n);
	for (int pass = 0; pass < 2; pass++) {
		k = 0;
		for (int r = 0; r < c->nranks; r++) {
			read_peer(c->clique, r, &p);
			if (p.present != (pass == 0))
				continue;
			fprintf(o, "%s        {\n          \"rank\": %d,\n"
				"          \"host\": \"%s\",\n          \"pid\": %d,\n"
				"          \"cuda_dev\": %d,\n          \"nvml_dev\": %d,\n"
				"          \"status\": {\n", k++ ? ",\n" : "", r,
				p.host, p.pid, p.cuda, p.nvml);
			if (!p.present) {
				fprintf(o, "            \"unresponsive\": true,\n"
					"            \"considered_dead\": %s\n"
					"          }\n        }",
					p.dead ? "true" : "false");
				continue;
			}
			fprintf(o, "            \"init_state\": 0,\n"
				"            \"async_error\": 0,\n"
				"            \"finalize_called\": false,\n"
				"            \"destroy_flag\": false,\n"
				"            \"abort_flag\": false\n          },\n"
				"          \"collective_counts\": {\n");
			for (int j = 0; j < N_COLLS; j++)
				fprintf(o, "            \"%s\": %llu%s\n", colls[j],
					p.counts[j], j < N_COLLS - 1 ? "," : "");
			fprintf(o, "          }\n        }");
		}
		fprintf(o, pass == 0 ? "\n      ],\n      \"missing_ranks\": [\n" :
				       "\n      ]\n    }");
	}
}

/* NCCL's text form, its mismatch and missing-rank lines only. */
static void text_comm(FILE *o, ncclComm_t c, int idx)
{
	struct peer p;

	fprintf(o, "#0-%d (%016llx)\n", idx, c->clique);
	for (int r = 0; r < c->nranks; r++) {
		read_peer(c->clique, r, &p);
		if (!p.present)
			fprintf(o, "  Missing rank %d%s\n", r,
				p.dead ? " (considered dead)" : "");
		else
			fprintf(o, "  Rank %d has launched up to operation %llu -- GPU %d managed by process %d on node %s\n",
				r, p.counts[4], p.nvml, p.pid, p.host);
	}
}

static void status(FILE *o, bool json)
{
	int v = version(), idx = 0;

	if (!json)
		fprintf(o, "NCCL version %d.%d.%d (fake)\n\nCommunicators...\n",
			v / 10000, v / 100 % 100, v % 100);
	else
		fprintf(o, "{\n  \"nccl_version\": \"%d.%d.%d\",\n"
			"  \"communicators\": [\n", v / 10000, v / 100 % 100,
			v % 100);
	pthread_mutex_lock(&ras.lock);
	for (int i = 0; i < MAX_COMMS; i++) {
		if (!ras.comms[i])
			continue;
		if (json)
			json_comm(o, ras.comms[i], idx == 0);
		else
			text_comm(o, ras.comms[i], idx);
		idx++;
	}
	pthread_mutex_unlock(&ras.lock);
	if (json)
		fprintf(o, "\n  ],\n  \"ras\": {\n    \"collection_time_sec\": 0.000,\n"
			"    \"timeouts_count\": 0\n  }\n}\n");
}

/* A line in FAKE_NCCL_RAS_DIR/answered after each status sent: tests
 * wait on it for a query they cannot see (the plugin's sampler). */
static void note_answered(void)
{
	char path[600];
	FILE *f;

	dir_path(path, sizeof(path) - 16);
	strcat(path, "/answered");
	f = fopen(path, "a");
	if (f) {
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
}

/* One client: commands by line until STATUS; answers as NCCL does. */
static void serve(int fd)
{
	FILE *in = fdopen(fd, "r"), *out = fdopen(dup(fd), "w");
	char line[256];
	bool json = false, answered = false;

	if (!in || !out)
		goto done;
	while (fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (strncasecmp(line, "client protocol ", 16) == 0) {
			fprintf(out, "SERVER PROTOCOL 2\n");
		} else if (strncasecmp(line, "timeout ", 8) == 0) {
			fprintf(out, "OK\n");
		} else if (strncasecmp(line, "set format ", 11) == 0 &&
			   version() >= 22807 &&
			   (strcasecmp(line + 11, "json") == 0 ||
			    strcasecmp(line + 11, "text") == 0)) {
			json = strcasecmp(line + 11, "json") == 0;
			fprintf(out, "OK\n");
		} else if (strcasecmp(line, "status") == 0 ||
			   strcasecmp(line, "verbose status") == 0) {
			status(out, json);
			answered = true;
			break;
		} else {
			fprintf(out, "ERROR: Unknown command %s\n", line);
		}
		fflush(out);
	}
done:
	if (out)
		fclose(out);
	if (in)
		fclose(in);
	else
		close(fd);
	if (answered)
		note_answered();
}

static void *listener(void *arg)
{
	int lfd = (int)(long)arg;

	for (;;) {
		int fd = accept(lfd, NULL, NULL);

		if (fd >= 0)
			serve(fd);
		else if (errno != EINTR)
			fake_sleep(0.01);
	}
	return NULL;
}

/* Listens on NCCL_RAS_ADDR ("host:port"; localhost or an IPv4 address). */
static void start(void)
{
	const char *addr = getenv("NCCL_RAS_ADDR");
	char host[64] = "127.0.0.1", *colon;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd, one = 1, port = 28028;
	pthread_t t;

	if (addr && *addr) {
		snprintf(host, sizeof(host), "%s", addr);
		colon = strrchr(host, ':');
		if (colon) {
			*colon = '\0';
			port = atoi(colon + 1);
		}
		if (strcmp(host, "localhost") == 0)
			snprintf(host, sizeof(host), "127.0.0.1");
	}
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return;
	sa.sin_port = htons((unsigned short)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	/* As NCCL: the processes of one uid share the port. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 16) < 0) {
		/* NCCL's WARN lines show only under NCCL_DEBUG. */
		const char *dbg = getenv("NCCL_DEBUG");

		if (dbg && *dbg)
			fprintf(stderr, "fake NCCL WARN Call to bind failed: %s\n"
				"fake NCCL WARN RAS failed to establish a client listening socket at %s:%d\n",
				strerror(errno), host, port);
		close(fd);
		return;
	}
	if (pthread_create(&t, NULL, listener, (void *)(long)fd) == 0)
		pthread_detach(t);
	else
		close(fd);
}

void fake_ras_comm_add(ncclComm_t comm)
{
	const char *en = getenv("NCCL_RAS_ENABLE");
	char dir[512];

	if (version() < 22400 || (en && strcmp(en, "0") == 0))
		return;
	dir_path(dir, sizeof(dir));
	mkdir(dir, 0700);
	pthread_mutex_lock(&ras.lock);
	for (int i = 0; i < MAX_COMMS; i++) {
		if (ras.comms[i])
			continue;
		ras.comms[i] = comm;
		memset(ras.counts[i], 0, sizeof(ras.counts[i]));
		ras.skipped[i] = false;
		publish(i);
		break;
	}
	if (!ras.started) {
		ras.started = true;
		start();
	}
	pthread_mutex_unlock(&ras.lock);
}

/* FAKE_NCCL_RAS_BEHIND=R: rank R's first collective is not counted, as
 * if it had skipped it (the others wait for it). */
void fake_ras_count(ncclComm_t comm, enum op_kind kind)
{
	int j = kind == OP_BROADCAST ? 0 : kind == OP_ALLGATHER ? 2 :
		kind == OP_REDUCESCATTER ? 3 : kind == OP_ALLREDUCE ? 4 : -1;

	if (j < 0)
		return;
	pthread_mutex_lock(&ras.lock);
	for (int i = 0; i < MAX_COMMS; i++) {
		if (ras.comms[i] != comm)
			continue;
		if (!ras.skipped[i] &&
		    rank_listed("FAKE_NCCL_RAS_BEHIND", comm->rank))
			ras.skipped[i] = true;
		else
			ras.counts[i][j]++;
		publish(i);
	}
	pthread_mutex_unlock(&ras.lock);
}

void fake_ras_comm_remove(ncclComm_t comm)
{
	char path[600];

	pthread_mutex_lock(&ras.lock);
	for (int i = 0; i < MAX_COMMS; i++) {
		if (ras.comms[i] != comm)
			continue;
		ras.comms[i] = NULL;
		rank_path(comm->clique, comm->rank, path, sizeof(path));
		unlink(path);
	}
	pthread_mutex_unlock(&ras.lock);
}

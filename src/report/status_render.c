/* SPDX-License-Identifier: MIT */
/*
 * spank-nccl-status: reads what the step's nodes printed (status_node.c,
 * one "LABEL: fact" a line from srun --label) and prints RAS's view in
 * the job's terms: each communicator, its ranks that are missing, dead
 * or off the others' count of a collective, as Slurm task, node and GPU
 * (RAS's nvml_dev: the node's GPU index), and a one-line verdict.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "protocol/json_write.h"
#include "protocol/ras_status.h"
#include "status.h"

#define MAX_NODES 4096
#define MAX_PROCS 65536
#define MAX_ADDRS 32768
#define BUF_LIMIT (64u << 20)

struct proc {
	long pid;
	char task[16], local[16], nccl[32];
	int node;
};

struct facts {
	int n_nodes;
	char node[MAX_NODES][64];
	int n_procs;
	struct proc procs[MAX_PROCS];
	int n_addrs;
	int addr_node[MAX_ADDRS];
	char addr[MAX_ADDRS][48];
	char ras[128];
	int asked;		/* the node that asked RAS, -1 */
	char error[512], format[8];
	struct status_buf answer;
};

void status_buf_read(struct status_buf *b, int fd)
{
	for (;;) {
		ssize_t n;

		if (b->cap - b->len < 4096) {
			size_t cap = b->cap ? b->cap * 2 : 65536;
			char *d = cap <= BUF_LIMIT ? realloc(b->data, cap) : NULL;

			if (!d)
				break;
			b->data = d;
			b->cap = cap;
		}
		n = read(fd, b->data + b->len, b->cap - b->len - 1);
		if (n <= 0)
			break;
		b->len += (size_t)n;
	}
	if (b->data)
		b->data[b->len] = '\0';
}

static void buf_add(struct status_buf *b, const char *s)
{
	size_t n = strlen(s);

	if (b->len + n + 2 > b->cap) {
		size_t cap = (b->len + n + 2) * 2;
		char *d = cap <= BUF_LIMIT ? realloc(b->data, cap) : NULL;

		if (!d)
			return;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len++] = '\n';
	b->data[b->len] = '\0';
}

/* One "LABEL: fact" line of the nodes' output. */
static void take_line(struct facts *f, char *line)
{
	char *rest, a[64], b[16], c[16], d[32];
	long label = strtol(line, &rest, 10);
	int n;

	if (rest == line || rest[0] != ':' || label < 0 || label >= MAX_NODES)
		return;
	rest += rest[1] == ' ' ? 2 : 1;
	n = (int)label;
	if (n >= f->n_nodes)
		f->n_nodes = n + 1;
	if (strncmp(rest, "node ", 5) == 0) {
		snprintf(f->node[n], sizeof(f->node[n]), "%s", rest + 5);
	} else if (strncmp(rest, "addr ", 5) == 0 && f->n_addrs < MAX_ADDRS) {
		f->addr_node[f->n_addrs] = n;
		snprintf(f->addr[f->n_addrs++], sizeof(f->addr[0]), "%s",
			 rest + 5);
	} else if (sscanf(rest, "proc %63s %15s %15s %31s", a, b, c, d) == 4 &&
		   f->n_procs < MAX_PROCS) {
		struct proc *p = &f->procs[f->n_procs++];

		p->pid = atol(a);
		p->node = n;
		snprintf(p->task, sizeof(p->task), "%s", b);
		snprintf(p->local, sizeof(p->local), "%s", c);
		snprintf(p->nccl, sizeof(p->nccl), "%s", d);
	} else if (strncmp(rest, "ras ", 4) == 0 && !f->ras[0]) {
		snprintf(f->ras, sizeof(f->ras), "%s", rest + 4);
	} else if (strncmp(rest, "answer ", 7) == 0) {
		f->asked = n;
		snprintf(f->format, sizeof(f->format), "%s", rest + 7);
	} else if (strncmp(rest, "error ", 6) == 0) {
		f->asked = n;
		snprintf(f->error, sizeof(f->error), "%s", rest + 6);
	} else if (strncmp(rest, "| ", 2) == 0 && n == f->asked) {
		buf_add(&f->answer, rest + 2);
	}
}

static void read_facts(struct facts *f, char *out)
{
	char *save = NULL;

	f->asked = -1;
	for (char *l = strtok_r(out, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save))
		take_line(f, l);
}

/* The step's process RAS names as PID on HOST: the one on a node with
 * that address, else the only one with that pid. */
static const struct proc *find_proc(const struct facts *f, long pid,
				    const char *host)
{
	const struct proc *only = NULL;
	int n = 0;

	if (pid < 0)
		return NULL;
	for (int i = 0; i < f->n_procs; i++) {
		if (f->procs[i].pid != pid)
			continue;
		for (int a = 0; a < f->n_addrs; a++)
			if (f->addr_node[a] == f->procs[i].node &&
			    strcmp(f->addr[a], host) == 0)
				return &f->procs[i];
		only = &f->procs[i];
		n++;
	}
	return n == 1 ? only : NULL;
}

/* "rank R (task T on NODE, GPU G)" */
static void describe(const void *ctx, const struct sn_ras_rank *k,
		     char *out, size_t cap)
{
	const struct facts *f = ctx;
	const struct proc *p = find_proc(f, k->pid, k->host);
	char gpu[32] = "";

	if (k->nvml_dev >= 0)
		snprintf(gpu, sizeof(gpu), ", GPU %ld", k->nvml_dev);
	if (p)
		snprintf(out, cap, "rank %ld (task %s on %s%s)", k->rank,
			 p->task, f->node[p->node], gpu);
	else if (k->pid >= 0)
		snprintf(out, cap, "rank %ld (process %ld on %s%s, no task of this step)",
			 k->rank, k->pid, k->host, gpu);
	else
		snprintf(out, cap, "rank %ld (its process unknown to RAS)",
			 k->rank);
}

static const char *rank_state(const struct sn_ras_rank *k)
{
	return k->missing ? (k->dead ? "dead" : "missing") :
	       k->odd ? "off" : "ok";
}

static void print_json(const struct facts *f, const struct status_run *run,
		       struct sn_ras_status *st, const char *verdict)
{
	printf("{\"job\":%s,\"step\":%s,\"user\":", run->job, run->step);
	sn_json_print(stdout, run->user, false);
	printf(",\"asked_on\":");
	sn_json_print(stdout, f->node[f->asked], false);
	printf(",\"nccl_version\":");
	sn_json_print(stdout, st->version, false);
	printf(",\"communicators\":[");
	for (int c = 0; c < st->n_comms; c++) {
		const struct sn_ras_comm *cm = &st->comms[c];
		struct sn_ras_verdict v;

		sn_ras_verdict(st, c, &v);
		printf("%s{\"hash\":", c ? "," : "");
		sn_json_print(stdout, cm->hash, false);
		printf(",\"size\":%ld,\"collective\":", cm->size);
		if (v.coll >= 0)
			printf("\"%s\",\"count\":%llu", st->colls[v.coll], v.rest_count);
		else
			printf("null");
		printf(",\"ranks\":[");
		for (int i = cm->first; i < cm->first + cm->n; i++) {
			const struct sn_ras_rank *k = &st->ranks[i];
			const struct proc *p = find_proc(f, k->pid, k->host);

			printf("%s{\"rank\":%ld,\"state\":\"%s\",\"pid\":%ld,\"host\":",
			       i > cm->first ? "," : "", k->rank, rank_state(k),
			       k->pid);
			sn_json_print(stdout, k->host, false);
			printf(",\"gpu\":%ld", k->nvml_dev);
			if (v.coll >= 0 && !k->missing)
				printf(",\"count\":%llu", k->counts[v.coll]);
			if (p) {
				printf(",\"task\":%s,\"node\":",
				       strcmp(p->task, "-") ? p->task : "null");
				sn_json_print(stdout, f->node[p->node], false);
			}
			printf("}");
		}
		printf("]}");
	}
	printf("],\"verdict\":");
	sn_json_print(stdout, verdict, false);
	printf("}\n");
}

/* Whether any rank RAS names is a process of the step (or none named). */
static bool any_ours(const struct facts *f, const struct sn_ras_status *st)
{
	for (int i = 0; i < st->n_ranks; i++)
		if (find_proc(f, st->ranks[i].pid, st->ranks[i].host))
			return true;
	return st->n_ranks == 0;
}

static int render_json(const struct facts *f, const struct status_run *run,
		       bool json)
{
	static struct sn_ras_status st;
	static char verdict[4096];
	char line[2048], who[256];
	struct sn_error err;

	if (sn_ras_parse(&st, f->answer.data ? f->answer.data : "",
			 f->answer.len, &err) != 0) {
		fprintf(stderr, "spank-nccl: step %s.%s: RAS's answer on %s is not its JSON: %s\n",
			run->job, run->step, f->node[f->asked], err.msg);
		return 1;
	}
	if (!any_ours(f, &st)) {
		fprintf(stderr,
			"spank-nccl: step %s.%s: RAS at %s on %s answered for processes that are not\n"
			"spank-nccl: the step's (NCCL's shared default address: the site's ras=nccl)\n",
			run->job, run->step, f->ras, f->node[f->asked]);
		return 1;
	}
	verdict[0] = '\0';
	for (int c = 0; c < st.n_comms && !verdict[0]; c++) {
		struct sn_ras_verdict v;

		sn_ras_verdict(&st, c, &v);
		sn_ras_verdict_line(&st, c, &v, describe, f, verdict,
				    sizeof(verdict));
	}
	if (!verdict[0])
		snprintf(verdict, sizeof(verdict), st.n_comms ?
			 "no rank is missing or behind: every rank of each communicator has launched the same collectives" :
			 "the step's NCCL has no communicator");
	if (json) {
		print_json(f, run, &st, verdict);
		return 0;
	}
	printf("step %s.%s (user %s): NCCL %s, RAS asked on %s, %d communicator%s\n",
	       run->job, run->step, run->user, st.version, f->node[f->asked],
	       st.n_comms, st.n_comms == 1 ? "" : "s");
	for (int c = 0; c < st.n_comms; c++) {
		const struct sn_ras_comm *cm = &st.comms[c];
		struct sn_ras_verdict v;

		sn_ras_verdict(&st, c, &v);
		printf("communicator %s: %ld ranks, %d answering", cm->hash,
		       cm->size, cm->n - v.missing);
		if (v.coll >= 0)
			printf(", %d at %s %llu", v.n_rest, st.colls[v.coll],
			       v.rest_count);
		printf("\n");
		for (int i = cm->first; i < cm->first + cm->n; i++) {
			const struct sn_ras_rank *k = &st.ranks[i];

			if (!k->missing && !k->odd)
				continue;
			describe(f, k, who, sizeof(who));
			if (k->missing)
				snprintf(line, sizeof(line), "%s", k->dead ? "dead" : "missing");
			else
				snprintf(line, sizeof(line), "%s %llu",
					 st.colls[v.coll], k->counts[v.coll]);
			printf("  %s: %s\n", who, line);
		}
	}
	printf("verdict: %s\n", verdict);
	return 0;
}

/* NCCL before 2.28.7: RAS's own text, every "process PID" named. */
static int render_text(const struct facts *f, const struct status_run *run)
{
	char *save = NULL;

	printf("step %s.%s (user %s): RAS asked on %s answered in text (NCCL before 2.28.7); processes named by task\n",
	       run->job, run->step, run->user, f->node[f->asked]);
	for (char *l = strtok_r(f->answer.data ? f->answer.data : (char *)"",
				"\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *p = strstr(l, "process ");
		const struct proc *pr = NULL;

		if (p) {
			long pid = atol(p + 8);
			char *node = strstr(p, " on node ");
			char host[64] = "";

			if (node)
				sscanf(node + 9, "%63s", host);
			pr = find_proc(f, pid, host);
		}
		if (pr)
			printf("%s  [task %s on %s]\n", l, pr->task, f->node[pr->node]);
		else
			printf("%s\n", l);
	}
	return 0;
}

/* Why there is nothing to ask; 1 with the reason, or 0 to go on. */
static int nothing_to_ask(const struct facts *f, const struct status_run *run)
{
	const char *v = NULL;
	bool nccl = false;

	for (int i = 0; i < f->n_procs; i++) {
		if (strcmp(f->procs[i].nccl, "-") == 0)
			continue;
		nccl = true;
		if (strcmp(f->procs[i].nccl, "yes") != 0)
			v = f->procs[i].nccl;
	}
	if (f->n_procs == 0)
		fprintf(stderr, "spank-nccl: no process of step %s.%s on %s (it has ended)\n",
			run->job, run->step, run->nodes);
	else if (!nccl)
		fprintf(stderr, "spank-nccl: step %s.%s runs no NCCL: none of its %d processes has libnccl loaded\n",
			run->job, run->step, f->n_procs);
	else if (v && strverscmp(v, "2.24") < 0)
		fprintf(stderr, "spank-nccl: step %s.%s's NCCL is %s: RAS, which this asks, needs NCCL 2.24 or later\n",
			run->job, run->step, v);
	else if (strcmp(f->ras, "off") == 0)
		fprintf(stderr,
			"spank-nccl: NCCL's RAS is off in step %s.%s (NCCL_RAS_ENABLE=0: the site's\n"
			"spank-nccl: ras=off, or the job's own setting): there is nothing to ask\n",
			run->job, run->step);
	else if (f->error[0])
		fprintf(stderr,
			"spank-nccl: step %s.%s's NCCL RAS on %s: %s\n"
			"spank-nccl: its NCCL is older than 2.24 (no RAS), or has no communicator yet\n",
			run->job, run->step,
			f->asked >= 0 ? f->node[f->asked] : "?", f->error);
	else if (f->asked < 0)
		fprintf(stderr, "spank-nccl: step %s.%s: the first node (%s) has none of its processes\n",
			run->job, run->step, f->n_nodes ? f->node[0] : "?");
	else
		return 0;
	return 1;
}

int status_render(const struct status_run *run, bool json)
{
	struct facts *f = calloc(1, sizeof(*f));
	int rc;

	if (!f) {
		fprintf(stderr, "spank-nccl: out of memory\n");
		return 1;
	}
	read_facts(f, run->out.data);
	rc = nothing_to_ask(f, run);
	if (rc == 0 && strcmp(f->format, "json") == 0)
		rc = render_json(f, run, json);
	else if (rc == 0 && json) {
		fprintf(stderr, "spank-nccl: step %s.%s's NCCL answers RAS in text only (before 2.28.7): no --json\n",
			run->job, run->step);
		rc = 1;
	} else if (rc == 0)
		rc = render_text(f, run);
	free(f->answer.data);
	free(f);
	return rc;
}

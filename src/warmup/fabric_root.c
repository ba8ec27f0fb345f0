/* SPDX-License-Identifier: MIT */
/* The root side of the fabric coordination: the step's first node. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fabric_io.h"

/* The root: listens on the first candidate port that is free. */
int fabric_root_listen(struct fabric_coord *c, struct sn_error *err)
{
	const struct fabric_plan *p = &c->plan;
	struct sockaddr_storage ss;
	unsigned int k;
	int one = 1;

	for (k = 0; k < p->attempts; k++) {
		unsigned int port = sn_fabric_port(&p->ports, p->jobid,
						   p->stepid, k);
		socklen_t sl = fabric_make_addr(p->root_addr, port, &ss);
		int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0) {
			sn_error_set(err, "socket: %s", strerror(errno));
			return -1;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&ss, sl) == 0 &&
		    listen(fd, (int)(p->nodes < 4096 ? p->nodes : 4096)) == 0) {
			c->listen_fd = fd;
			c->port = port;
			c->join_started_ms = fabric_now_ms();
			return 0;
		}
		close(fd);
		if (errno != EADDRINUSE) {
			sn_error_set(err, "cannot listen on %s port %u: %s (is %s an address of this node %s?)",
				     p->root_addr, port, strerror(errno),
				     p->root_addr, p->node);
			return -1;
		}
	}
	sn_error_set(err, "all %u candidate ports for step %u.%u in %u-%u are taken on %s: widen fabric_ports or free them",
		     p->attempts, p->jobid, p->stepid, p->ports.lo, p->ports.hi,
		     p->node);
	return -1;
}

/* The NCCL bootstrap port: the first candidate after ours that binds. */
static unsigned int pick_nccl_port(const struct fabric_coord *c)
{
	const struct fabric_plan *p = &c->plan;
	struct sockaddr_storage ss;
	unsigned int k, port = 0;
	int one = 1;

	for (k = 0; k < 2 * p->attempts; k++)
		if (sn_fabric_port(&p->ports, p->jobid, p->stepid, k) == c->port)
			break;
	for (k++; k < 3 * p->attempts; k++) {
		socklen_t sl;
		int fd;

		port = sn_fabric_port(&p->ports, p->jobid, p->stepid, k);
		if (port == c->port)
			continue;
		sl = fabric_make_addr(p->root_addr, port, &ss);
		fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			break;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&ss, sl) == 0) {
			close(fd);
			return port;
		}
		close(fd);
	}
	return port;
}

/* Checks a HELLO against the plan and the nodes already joined. */
static const char *hello_problem(const struct fabric_coord *c,
				 const struct sn_fabric_msg *m)
{
	if (m->type != SN_FMSG_HELLO)
		return "expected HELLO";
	if (m->jobid != c->plan.jobid || m->stepid != c->plan.stepid)
		return "this port belongs to another step";
	if (m->nodes != c->plan.nodes)
		return "node count differs from the root's";
	if (m->index == c->plan.index)
		return "node index is the root's";
	if (c->conns[m->index].state != CONN_NONE)
		return "node index already joined";
	return NULL;
}

struct pending {
	int fd;
	char rbuf[SN_FABRIC_MSG_MAX];
	size_t rlen;
};

/* Reads from pending connection P; moves it to conns once identified. */
static void serve_pending(struct fabric_coord *c, struct pending *pd,
			  uint32_t *joined)
{
	struct sn_fabric_msg m;
	struct sn_error e;
	char line[SN_FABRIC_MSG_MAX];
	const char *why;
	int r;

	if (!fabric_fill(pd->fd, pd->rbuf, &pd->rlen))
		goto drop;
	r = fabric_take_line(pd->rbuf, &pd->rlen, line);
	if (r == 0)
		return;
	if (r < 0 || sn_fabric_msg_decode(line, &m, &e) < 0)
		goto drop;
	why = hello_problem(c, &m);
	if (why) {
		struct sn_fabric_msg no = { .type = SN_FMSG_REFUSE };

		snprintf(no.text, sizeof(no.text), "%s", why);
		fabric_send_msg(pd->fd, &no, &c->plan, &e);
		goto drop;
	} else {
		struct sn_fabric_msg yes = { .type = SN_FMSG_WELCOME };
		struct fabric_conn *fc = &c->conns[m.index];

		if (fabric_send_msg(pd->fd, &yes, &c->plan, &e) < 0)
			goto drop;
		fc->fd = pd->fd;
		fc->state = CONN_JOINED;
		fc->hello = m;
		memcpy(fc->rbuf, pd->rbuf, pd->rlen);
		fc->rlen = pd->rlen;
		pd->fd = -1;
		(*joined)++;
		return;
	}
drop:
	close(pd->fd);
	pd->fd = -1;
}

/* Accepts and identifies members until all joined or the deadline. */
void fabric_root_gather(struct fabric_coord *c, int64_t deadline_ms)
{
	struct pending pend[MAX_PENDING];
	struct pollfd pfd[MAX_PENDING + 1];
	uint32_t joined = 0;
	size_t i;

	for (i = 0; i < MAX_PENDING; i++)
		pend[i].fd = -1;
	while (joined + 1 < c->plan.nodes) {
		size_t n = 1;
		int r;

		pfd[0] = (struct pollfd){ .fd = c->listen_fd, .events = POLLIN };
		for (i = 0; i < MAX_PENDING; i++)
			pfd[n++] = (struct pollfd){ .fd = pend[i].fd,
						    .events = POLLIN };
		r = poll(pfd, n, fabric_ms_left(deadline_ms));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (i = 0; i < MAX_PENDING; i++)
			if (pend[i].fd >= 0 && pfd[i + 1].revents)
				serve_pending(c, &pend[i], &joined);
		if (pfd[0].revents & POLLIN) {
			int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);

			for (i = 0; fd >= 0 && i < MAX_PENDING; i++)
				if (pend[i].fd < 0)
					break;
			if (fd >= 0 && i == MAX_PENDING)
				close(fd);	/* a flood: the real ones retry */
			else if (fd >= 0)
				pend[i] = (struct pending){ .fd = fd };
		}
	}
	for (i = 0; i < MAX_PENDING; i++)
		if (pend[i].fd >= 0)
			close(pend[i].fd);
}

/* Root: ABORT or GO once every node joined (or the join deadline). */
int fabric_root_decide(struct fabric_coord *c, uint32_t local_status,
		       const char *local_text, struct fabric_go *go,
		       struct fabric_outcome *out, struct sn_error *err)
{
	const struct fabric_plan *p = &c->plan;
	uint32_t i, rank = 0, missing = SN_FABRIC_NO_BLAME, bad = SN_FABRIC_NO_BLAME;
	struct sn_fabric_msg m;

	for (i = 0; i < p->nodes; i++) {
		if (i == p->index)
			continue;
		if (c->conns[i].state != CONN_JOINED && missing == SN_FABRIC_NO_BLAME)
			missing = i;
		if (c->conns[i].state == CONN_JOINED &&
		    c->conns[i].hello.status && bad == SN_FABRIC_NO_BLAME)
			bad = i;
	}
	/* Texts name no node: the blame index does (fabric_coord.h). */
	if (local_status) {
		fabric_set_outcome(out, local_status, p->index, "failed: %s",
				   local_text);
	} else if (bad != SN_FABRIC_NO_BLAME) {
		fabric_set_outcome(out, c->conns[bad].hello.status, bad,
				   "failed: %s", c->conns[bad].hello.text);
	} else if (missing != SN_FABRIC_NO_BLAME) {
		fabric_set_outcome(out, SN_WARMUP_TIMEOUT, missing,
				   "never joined within %.0f s (its helper did not start, or cannot reach %s's fabric port %u)",
				   (double)(fabric_now_ms() - c->join_started_ms) / 1e3,
				   p->node, c->port);
	} else {
		unsigned int port = pick_nccl_port(c);

		/* rank = the GPUs of the nodes before, in node-index order */
		for (i = 0; i < p->nodes; i++) {
			if (i == p->index) {
				go->rank_base = rank;
				rank += p->gpus;
			} else {
				c->conns[i].hello.rank_base = rank;
				rank += c->conns[i].hello.gpus;
			}
		}
		go->nranks = rank;
		go->port = port;
		for (i = 0; i < p->nodes; i++) {
			if (i == p->index)
				continue;
			m = (struct sn_fabric_msg){
				.type = SN_FMSG_GO, .nranks = rank, .port = port,
				.rank_base = c->conns[i].hello.rank_base };
			if (fabric_send_msg(c->conns[i].fd, &m, p, err) < 0)
				c->conns[i].state = CONN_LOST;
		}
		return 0;
	}
	m = (struct sn_fabric_msg){ .type = SN_FMSG_ABORT, .blame = out->blame };
	snprintf(m.text, sizeof(m.text), "%s", out->text);
	for (i = 0; i < p->nodes; i++)
		if (i != p->index && c->conns[i].state == CONN_JOINED)
			fabric_send_msg(c->conns[i].fd, &m, p, err);
	return 1;
}

/* Join deadline of the root: leaves the members time to hear ABORT. */
int64_t fabric_root_join_deadline(int64_t deadline_ms)
{
	int64_t left = deadline_ms - fabric_now_ms(), margin = left / 5;

	return deadline_ms - (margin > 1000 ? 1000 : margin);
}

/* Root: the node at fault after the collectives, from every DONE. */
void fabric_root_verdict(struct fabric_coord *c, uint32_t status,
			 const char *text, struct fabric_outcome *out)
{
	const struct fabric_plan *p = &c->plan;
	uint32_t i, pick = SN_FABRIC_NO_BLAME, order = UINT32_MAX;
	bool pick_timeout = true;

	/* A node that never reported hung or died: it is at fault first. */
	for (i = 0; i < p->nodes; i++) {
		if (i != p->index && c->conns[i].state != CONN_DONE) {
			fabric_set_outcome(out, SN_WARMUP_TIMEOUT, i,
					   "did not finish the fabric collectives (hung, died or lost its connection to %s)",
					   p->node);
			return;
		}
	}
	/*
	 * Otherwise the first failure to arrive, preferring a real error over
	 * a timeout: the other ranks of a broken communicator fail after it,
	 * as a consequence.  A node that stopped because another failed
	 * (peer_failed) is never the one at fault.
	 */
	for (i = 0; i < p->nodes; i++) {
		uint32_t st = i == p->index ? status : c->conns[i].done.status;
		uint32_t ord = i == p->index ? c->plan.nodes :
			       c->conns[i].done_order;
		bool is_timeout = st == SN_WARMUP_TIMEOUT;

		if (!st || st == SN_WARMUP_PEER_FAILED)
			continue;
		if (pick == SN_FABRIC_NO_BLAME ||
		    (pick_timeout && !is_timeout) ||
		    (pick_timeout == is_timeout && ord < order)) {
			pick = i;
			order = ord;
			pick_timeout = is_timeout;
		}
	}
	if (pick == SN_FABRIC_NO_BLAME) {
		fabric_set_outcome(out, 0, SN_FABRIC_NO_BLAME, "%s", "");
		return;
	}
	fabric_set_outcome(out, pick == p->index ? status : c->conns[pick].done.status,
			   pick, "failed: %s",
			   pick == p->index ? text : c->conns[pick].done.text);
}

void fabric_root_tell(struct fabric_coord *c)
{
	struct sn_fabric_msg m = { .type = SN_FMSG_VERDICT,
				   .status = c->verdict.status,
				   .blame = c->verdict.blame };
	struct sn_error e;
	uint32_t i;

	snprintf(m.text, sizeof(m.text), "%s", c->verdict.text);
	for (i = 0; i < c->plan.nodes; i++) {
		struct fabric_conn *fc = &c->conns[i];

		if (i == c->plan.index || fc->told ||
		    (fc->state != CONN_JOINED && fc->state != CONN_DONE))
			continue;
		fabric_send_msg(fc->fd, &m, &c->plan, &e);
		fc->told = true;
	}
}

/*
 * Root: member I's connection is readable.  The first failure to arrive
 * (a failed DONE, or a member whose connection closed before its DONE)
 * is the step's verdict at once: the members still in NCCL are told now.
 */
bool fabric_root_read_done(struct fabric_coord *c, uint32_t i)
{
	struct fabric_conn *fc = &c->conns[i];
	struct sn_error e;
	bool failed = false;
	int r = fabric_recv_msg(fc->fd, fc->rbuf, &fc->rlen, fabric_now_ms(),
				&fc->done, &e);

	if (r > 0 && fc->done.type == SN_FMSG_DONE) {
		fc->state = CONN_DONE;
		fc->done_order = c->arrived++;
		failed = fc->done.status &&
			 fc->done.status != SN_WARMUP_PEER_FAILED &&
			 fc->done.status != SN_WARMUP_TIMEOUT;
		if (failed && !c->verdict_known)
			fabric_set_outcome(&c->verdict, fc->done.status, i,
					   "failed: %s", fc->done.text);
	} else if (r != 0) {
		fc->state = CONN_LOST;
		failed = true;
		if (!c->verdict_known)
			fabric_set_outcome(&c->verdict, SN_WARMUP_TIMEOUT, i,
					   "lost its connection to %s before it finished (its helper died or its network failed)",
					   c->plan.node);
	}
	if (failed && !c->verdict_known) {
		c->verdict_known = true;
		fabric_root_tell(c);
	}
	return failed;
}

/* Root: collects every member's DONE until all came or the deadline. */
void fabric_root_collect(struct fabric_coord *c, int64_t deadline_ms)
{
	const struct fabric_plan *p = &c->plan;
	struct pollfd *pfd = calloc(p->nodes, sizeof(*pfd));
	uint32_t i, waiting;

	if (!pfd)
		return;
	for (;;) {
		waiting = 0;
		/* Lines already buffered (read with an earlier one) first. */
		for (i = 0; i < p->nodes; i++)
			if (c->conns[i].state == CONN_JOINED &&
			    memchr(c->conns[i].rbuf, '\n', c->conns[i].rlen))
				fabric_root_read_done(c, i);
		for (i = 0; i < p->nodes; i++) {
			bool open = c->conns[i].state == CONN_JOINED;

			pfd[i] = (struct pollfd){ .fd = open ? c->conns[i].fd : -1,
						  .events = POLLIN };
			waiting += open;
		}
		if (!waiting || poll(pfd, p->nodes, fabric_ms_left(deadline_ms)) <= 0)
			break;
		for (i = 0; i < p->nodes; i++)
			if (pfd[i].revents)
				fabric_root_read_done(c, i);
	}
	free(pfd);
}

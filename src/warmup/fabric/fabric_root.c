/* SPDX-License-Identifier: MIT */
/* The root side of the fabric coordination: the step's first node. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
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
	char ports[64];
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
		/*
		 * The kernel's largest backlog: strangers that fill a small
		 * one would make the members' SYNs wait out retransmits.
		 */
		if (bind(fd, (struct sockaddr *)&ss, sl) == 0 &&
		    listen(fd, SOMAXCONN) == 0) {
			c->listen_fd = fd;
			c->port = port;
			c->join_started_ms = sn_clock_ms();
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
	fabric_candidates(p, ports, sizeof(ports));
	sn_error_set(err, "ports %s on %s are all taken by other processes (the %u candidates of step %u.%u in fabric_ports=%u-%u; ss -ltnp names them): free them or widen fabric_ports",
		     ports, p->node, p->attempts, p->jobid, p->stepid,
		     p->ports.lo, p->ports.hi);
	return -1;
}

/* Whether ADDR (numeric) is an address of node INDEX's name. */
static bool peer_is_node(const struct fabric_plan *p, uint32_t index,
			 const char *addr)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	char name[SN_HOSTNAME_MAX], host[FABRIC_ADDR_MAX];
	struct addrinfo *res, *ai;
	struct sn_error ignored;
	bool found = false;

	if (!p->check_peer_addr)
		return true;
	if (!p->nodelist ||
	    sn_hostlist_nth(p->nodelist, index, name, sizeof(name), &ignored) < 0 ||
	    getaddrinfo(name, NULL, &hints, &res) != 0)
		return false;
	for (ai = res; ai && !found; ai = ai->ai_next)
		found = getnameinfo(ai->ai_addr, ai->ai_addrlen, host,
				    sizeof(host), NULL, 0, NI_NUMERICHOST) == 0 &&
			strcmp(host, addr) == 0;
	freeaddrinfo(res);
	return found;
}

/* Checks an authenticated HELLO against the plan and the nodes joined. */
static const char *hello_problem(const struct fabric_coord *c,
				 const struct sn_fabric_msg *m,
				 const char *addr)
{
	if (m->type != SN_FMSG_HELLO)
		return "expected HELLO";
	if (m->nodes != c->plan.nodes)
		return "node count differs from the root's";
	if (m->index == c->plan.index)
		return "node index is the root's";
	if (c->conns[m->index].state != CONN_NONE)
		return "node index already joined";
	if (!peer_is_node(&c->plan, m->index, addr))
		return "the connection does not come from an address of that node";
	return NULL;
}

struct pending {
	int fd;
	struct sn_deadline until;	/* its sealed HELLO by then, or closed */
	char addr[FABRIC_ADDR_MAX];
	char rbuf[SN_FABRIC_MSG_MAX];
	size_t rlen;
};

struct pending_set {
	struct pending *p;
	size_t n, cap;
};

static void drop_pending(struct pending_set *ps, size_t i)
{
	close(ps->p[i].fd);
	ps->p[i] = ps->p[--ps->n];
}

/*
 * Reads from pending connection PD.  1: it is gone (joined or dropped),
 * 0: no complete line yet.  Nothing but a HELLO that a process of the
 * job's user sealed for this connection is acted on; the rest is closed
 * unanswered and logged.
 */
static int serve_pending(struct fabric_coord *c, struct pending *pd,
			 uint32_t *joined)
{
	struct sn_fabric_msg m, reply = { .type = SN_FMSG_WELCOME };
	struct sn_error e = { "" };
	char line[SN_FABRIC_MSG_MAX];
	const char *why;
	struct fabric_conn *fc;
	int r;

	if (!fabric_fill(pd->fd, pd->rbuf, &pd->rlen)) {
		fabric_stranger(c, pd->addr, "closed before it said who it is");
		return 1;
	}
	r = fabric_take_line(pd->rbuf, &pd->rlen, line);
	if (r == 0)
		return 0;
	if (r < 0) {
		fabric_stranger(c, pd->addr, "sent a line too long for the protocol");
		return 1;
	}
	if (fabric_open_sealed(pd->fd, line, &c->plan, &m, &e) !=
	    FABRIC_UNSEAL_OK) {
		fabric_stranger(c, pd->addr, e.msg);
		return 1;
	}
	why = hello_problem(c, &m, pd->addr);
	if (why) {
		/* One of the job's user's processes: it may hear why. */
		reply = (struct sn_fabric_msg){ .type = SN_FMSG_REFUSE };
		snprintf(reply.text, sizeof(reply.text), "%s", why);
		fabric_send_sealed(pd->fd, &reply, &c->plan, &e);
		fabric_stranger(c, pd->addr, why);
		return 1;
	}
	if (fabric_send_sealed(pd->fd, &reply, &c->plan, &e) < 0)
		return 1;
	fc = &c->conns[m.index];
	fc->fd = pd->fd;
	fc->state = CONN_JOINED;
	fc->hello = m;
	memcpy(fc->rbuf, pd->rbuf, pd->rlen);
	fc->rlen = pd->rlen;
	pd->fd = -1;
	(*joined)++;
	return 1;
}

/* Takes every connection waiting on the listener, oldest out if full. */
static void accept_all(struct fabric_coord *c, struct pending_set *ps)
{
	for (;;) {
		int fd = accept4(c->listen_fd, NULL, NULL,
				 SOCK_CLOEXEC | SOCK_NONBLOCK);
		size_t i, oldest = 0;

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			/* Out of descriptors: make room, the next one waits. */
			if ((errno == EMFILE || errno == ENFILE) && ps->n)
				drop_pending(ps, 0);
			return;
		}
		if (ps->n == ps->cap && ps->cap < PENDING_MAX) {
			size_t cap = ps->cap ? 2 * ps->cap : 16;
			struct pending *np = realloc(ps->p, cap * sizeof(*np));

			if (np) {
				ps->p = np;
				ps->cap = cap;
			}
		}
		if (ps->n == ps->cap) {
			for (i = 1; i < ps->n; i++)
				if (ps->p[i].until.at_ms <
				    ps->p[oldest].until.at_ms)
					oldest = i;
			if (ps->n == 0) {
				close(fd);
				return;
			}
			fabric_stranger(c, ps->p[oldest].addr,
					"too many connections at once");
			drop_pending(ps, oldest);
		}
		ps->p[ps->n] = (struct pending){
			.fd = fd, .until = sn_deadline_in(FIRST_LINE_MS) };
		fabric_peer_addr(fd, ps->p[ps->n].addr, sizeof(ps->p[ps->n].addr));
		ps->n++;
	}
}

/* Accepts and identifies members until all joined or the deadline. */
void fabric_root_gather(struct fabric_coord *c, struct sn_deadline deadline)
{
	struct pending_set ps = { NULL, 0, 0 };
	struct pollfd *pfd = NULL;
	size_t pfd_cap = 0, i;
	uint32_t joined = 0;

	/* Non-blocking: accept_all drains a burst and stops. */
	fcntl(c->listen_fd, F_SETFL, O_NONBLOCK);
	while (joined + 1 < c->plan.nodes && !sn_deadline_expired(deadline)) {
		struct sn_deadline wake = deadline;
		int r;

		/* Strangers that said nothing in time go first. */
		for (i = 0; i < ps.n;) {
			if (sn_deadline_expired(ps.p[i].until)) {
				fabric_stranger(c, ps.p[i].addr,
						"sent no sealed HELLO within 1 s");
				drop_pending(&ps, i);
				continue;
			}
			wake = sn_deadline_min(wake, ps.p[i].until);
			i++;
		}
		if (pfd_cap < ps.n + 1) {
			struct pollfd *np = realloc(pfd, (ps.n + 1) * sizeof(*np));

			if (!np)
				break;
			pfd = np;
			pfd_cap = ps.n + 1;
		}
		pfd[0] = (struct pollfd){ .fd = c->listen_fd, .events = POLLIN };
		for (i = 0; i < ps.n; i++)
			pfd[i + 1] = (struct pollfd){ .fd = ps.p[i].fd,
						      .events = POLLIN };
		r = poll(pfd, ps.n + 1, sn_deadline_poll_ms(wake,
							    FABRIC_POLL_MAX_MS));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		/* From the end: drop_pending moves the last entry into I. */
		for (i = ps.n; i-- > 0;) {
			if (!pfd[i + 1].revents)
				continue;
			if (serve_pending(c, &ps.p[i], &joined)) {
				if (ps.p[i].fd >= 0)
					close(ps.p[i].fd);
				ps.p[i] = ps.p[--ps.n];
			}
		}
		if (pfd[0].revents & POLLIN)
			accept_all(c, &ps);
	}
	for (i = 0; i < ps.n; i++)
		close(ps.p[i].fd);
	free(ps.p);
	free(pfd);
}

/* Root: ABORT or GO once every node joined (or the join deadline). */
int fabric_root_decide(struct fabric_coord *c, uint32_t local_status,
		       const char *local_text, const unsigned char *nccl_id,
		       struct fabric_go *go,
		       struct fabric_outcome *out, struct sn_error *err)
{
	const struct fabric_plan *p = &c->plan;
	uint32_t i, rank = 0, missing = SN_FABRIC_NO_BLAME, bad = SN_FABRIC_NO_BLAME;
	unsigned char made[SN_FABRIC_NCCL_ID_BYTES];
	char why[SN_FABRIC_TEXT_MAX] = "no NCCL unique id to hand out";
	struct sn_fabric_msg m;
	int code;

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
				   (sn_clock_ms() - c->join_started_ms) / 1e3,
				   p->node, c->port);
	} else if (!nccl_id &&
		   (code = p->make_id ? p->make_id(p->make_id_ctx, made, why,
						   sizeof(why)) :
					SN_WARMUP_INTERNAL) != 0) {
		fabric_set_outcome(out, (uint32_t)code, p->index, "failed: %s",
				   why);
	} else {
		if (!nccl_id)
			nccl_id = made;
		/*
		 * rank = the GPUs of the nodes before, in node-index order;
		 * at most SN_FABRIC_NODES_MAX x SN_FABRIC_GPUS_MAX (HELLO's
		 * bounds): no wrap.
		 */
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
		memcpy(go->nccl_id, nccl_id, sizeof(go->nccl_id));
		for (i = 0; i < p->nodes; i++) {
			if (i == p->index)
				continue;
			m = (struct sn_fabric_msg){
				.type = SN_FMSG_GO, .nranks = rank,
				.rank_base = c->conns[i].hello.rank_base };
			memcpy(m.nccl_id, nccl_id, sizeof(m.nccl_id));
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
struct sn_deadline fabric_root_join_deadline(struct sn_deadline deadline)
{
	int64_t margin = sn_deadline_left_ms(deadline) / 5;

	return sn_deadline_earlier(deadline, margin > 1000 ? 1000 : margin);
}

/* Root: the node at fault after the collectives, from every DONE. */
void fabric_root_verdict(struct fabric_coord *c, uint32_t status,
			 const char *text, struct fabric_outcome *out)
{
	const struct fabric_plan *p = &c->plan;
	uint32_t i, pick = SN_FABRIC_NO_BLAME, order = UINT32_MAX;
	bool pick_timeout = true;

	/*
	 * A node that never reported hung or died: it is at fault first --
	 * unless the root stalled too (its own deadline passed in NCCL): then
	 * that node's silence is the same stall, shown to be no one's.
	 */
	for (i = 0; i < p->nodes && status != SN_WARMUP_TIMEOUT; i++) {
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
	/*
	 * Only deadlines passed (or nodes fell silent while the root's own
	 * NCCL stalled): nothing shows which node caused it -- one node's
	 * hang, the network, or a stranger stalling NCCL's bootstrap root
	 * (docs/security.md) all look alike.  Each node keeps its own
	 * timeout, no node is blamed; the plugin's root confirmation on
	 * each node decides whether one of them is at fault.
	 */
	if (pick_timeout) {
		fabric_set_outcome(out, SN_WARMUP_TIMEOUT, SN_FABRIC_NO_BLAME,
				   "timed out with every other node: no node shown at fault");
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
	int r = fabric_recv_msg(fc->fd, fc->rbuf, &fc->rlen, sn_deadline_in(0),
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
void fabric_root_collect(struct fabric_coord *c, struct sn_deadline deadline)
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
		if (!waiting ||
		    poll(pfd, p->nodes,
			 sn_deadline_poll_ms(deadline, FABRIC_POLL_MAX_MS)) <= 0)
			break;
		for (i = 0; i < p->nodes; i++)
			if (pfd[i].revents)
				fabric_root_read_done(c, i);
	}
	free(pfd);
}

/* SPDX-License-Identifier: MIT */
/* A member's side of the fabric coordination, and the entry points. */
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

/* A socket to the root's PORT from this node's own address, connected. */
static int dial(const struct fabric_plan *p, unsigned int port,
		struct sn_deadline until, struct sn_error *err)
{
	struct sockaddr_storage ss, self;
	socklen_t sl = fabric_make_addr(p->root_addr, port, &ss), el;
	struct pollfd pfd;
	int fd, r, soerr = 0;

	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		sn_error_set(err, "socket: %s", strerror(errno));
		return -2;
	}
	/*
	 * From the address of this node's name: the root accepts node I
	 * only from there.  An address this host does not have is left to
	 * the kernel's route (the root then says so in its REFUSE).
	 */
	if (p->self_addr[0]) {
		el = fabric_make_addr(p->self_addr, 0, &self);
		if (el && self.ss_family == ss.ss_family)
			bind(fd, (struct sockaddr *)&self, el);
	}
	r = connect(fd, (struct sockaddr *)&ss, sl);
	if (r < 0 && errno == EINPROGRESS) {
		el = sizeof(soerr);
		pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
		r = poll(&pfd, 1, sn_deadline_poll_ms(until,
						      FABRIC_POLL_MAX_MS)) == 1 &&
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &el) == 0 &&
		    soerr == 0 ? 0 : -1;
	}
	if (r == 0)
		r = fcntl(fd, F_SETFL, 0);	/* blocking from here */
	if (r < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * How long a member waits for a listener's first answer in its first
 * round, doubled each round up to TRY_REPLY_MS: a squatter that takes
 * connections and says nothing costs each member 0.5 s per port once
 * (not 2 s), and a root too busy to answer in time is waited for longer
 * in the next round.
 */
#define TRY_REPLY_FIRST_MS 500

/*
 * The pause after a round without the root, doubled each round up to
 * about 0.5 s: a root that starts to listen L ms after a member tried is
 * found about L ms later.  A first pause of 20 ms cost a member that was
 * ready before the root 20 ms: half of the 3-node warmups in
 * bench/fabric-auth.sh, under either mechanism.
 */
#define ROUND_FIRST_MS 1

/*
 * The candidates of one round, by attempt index: those that never kept
 * silent first, in their order, then the silent ones.  The root's own
 * port answers (or is not listening yet): it comes before the squatters.
 */
static void round_order(unsigned int attempts, uint64_t silent,
			unsigned char *order)
{
	unsigned int i, n = 0;

	for (i = 0; i < attempts; i++)
		if (!(silent & (1ULL << i)))
			order[n++] = (unsigned char)i;
	for (i = 0; i < attempts; i++)
		if (silent & (1ULL << i))
			order[n++] = (unsigned char)i;
}

/*
 * A member: tries the candidate ports in turn until the root answers
 * HELLO with a WELCOME it sealed for this connection.  A port where
 * nothing listens yet is tried again in the next round (the root took
 * the first one it could bind, so the rounds find it as soon as it
 * listens); a port whose listener answers without the job's seal is
 * another program, another user's, or a squatter: logged, never tried
 * again, and nothing it said is kept.  A listener that takes the
 * connection and says nothing is tried again (the root may be busy),
 * after the others, and waited for longer each round.
 * *SQUATTED: every port was taken by a listener that was not the root.
 */
static int member_connect(struct fabric_coord *c, const struct sn_fabric_msg *hello,
			  struct sn_deadline deadline, bool *squatted,
			  struct sn_error *err)
{
	const struct fabric_plan *p = &c->plan;
	unsigned int k, j = 0, round_ms = ROUND_FIRST_MS,
		     reply_ms = TRY_REPLY_FIRST_MS;
	uint64_t impostor = 0, silent = 0, all = (p->attempts >= 64) ? ~0ULL :
					      (1ULL << p->attempts) - 1;
	char refused[SN_FABRIC_TEXT_MAX] = "", root[SN_HOSTNAME_MAX];
	unsigned char order[64];

	*squatted = false;
	round_order(p->attempts, silent, order);
	while (!sn_deadline_expired(deadline) && impostor != all) {
		unsigned int port = sn_fabric_port(&p->ports, p->jobid,
						   p->stepid, k = order[j]);
		struct sn_deadline until =
			sn_deadline_min(sn_deadline_in(TRY_CONNECT_MS), deadline);
		struct sn_fabric_msg reply;
		struct sn_error e = { "" };
		char line[SN_FABRIC_MSG_MAX], where[FABRIC_ADDR_MAX + 8];
		int fd = -1, r;

		if (!(impostor & (1ULL << k)))
			fd = dial(p, port, until, err);
		if (fd == -2)
			return -1;
		/* Sealed for this connection: its endpoints are in the seal. */
		if (fd >= 0 && fabric_send_sealed(fd, (struct sn_fabric_msg *)hello,
						  p, &e) < 0) {
			close(fd);
			fd = -1;
		}
		if (fd >= 0) {
			c->rlen = 0;
			until = sn_deadline_min(sn_deadline_in((int64_t)reply_ms),
						deadline);
			r = fabric_recv_line(fd, c->rbuf, &c->rlen, until, line,
					     &e);
			if (r > 0 && fabric_open_sealed(fd, line, p, &reply, &e) ==
				     FABRIC_UNSEAL_OK) {
				if (reply.type == SN_FMSG_WELCOME) {
					c->fd = fd;
					c->port = port;
					return 0;
				}
				if (reply.type == SN_FMSG_REFUSE)
					snprintf(refused, sizeof(refused),
						 "port %u: %s", port, reply.text);
			} else if (r > 0) {
				snprintf(where, sizeof(where), "%s port %u",
					 p->root_addr, port);
				fabric_stranger(c, where, e.msg);
				impostor |= 1ULL << k;
			} else {
				silent |= 1ULL << k;
			}
			close(fd);
		}
		if (++j == p->attempts) {
			/* A full round without the root: it may not listen yet. */
			j = 0;
			round_order(p->attempts, silent, order);
			poll(NULL, 0, sn_deadline_poll_ms(deadline, (int)round_ms));
			if (round_ms < 500)
				round_ms *= 2;
			if (reply_ms < TRY_REPLY_MS)
				reply_ms *= 2;
		}
	}
	fabric_node_name(p, 0, root, sizeof(root));
	if ((impostor | silent) == all) {
		char ports[64];

		*squatted = true;
		fabric_candidates(p, ports, sizeof(ports));
		sn_error_set(err, "ports %s on %s are all taken by other processes (none answered as this step's root, sealed by the job's user)",
			     ports, root);
		return -1;
	}
	sn_error_set(err, "could not reach the fabric root at %s on its ports for step %u.%u (%u-%u)%s%s",
		     p->root_addr, p->jobid, p->stepid, p->ports.lo, p->ports.hi,
		     refused[0] ? "; refused: " : "", refused);
	return -1;
}

/* Root and members: MUNGE answers here, before anyone is waited for. */
static int auth_works(const struct fabric_plan *p, struct sn_error *err)
{
	char cred[SN_FABRIC_CRED_MAX];

	if (!p->auth) {
		sn_error_set(err, "no MUNGE context for the fabric coordination");
		return -1;
	}
	return fabric_auth_seal(p->auth, "SNFB2 check", 11, cred, sizeof(cred),
				err);
}

/* The member's view of what the root said: bounded by its own plan. */
static bool root_says_sense(const struct fabric_plan *p,
			    const struct sn_fabric_msg *m)
{
	if (m->type == SN_FMSG_GO)
		return (uint64_t)m->rank_base + p->gpus <= m->nranks;
	if (m->type == SN_FMSG_ABORT || m->type == SN_FMSG_VERDICT)
		return m->blame == SN_FABRIC_NO_BLAME || m->blame < p->nodes;
	return true;
}

int fabric_coord_join(struct fabric_coord *c, const struct fabric_plan *plan,
		      uint32_t local_status, const char *local_text,
		      const unsigned char *nccl_id,
		      struct sn_deadline deadline, struct fabric_go *go,
		      struct fabric_outcome *out, struct sn_error *err)
{
	struct sn_fabric_msg m = { .type = SN_FMSG_HELLO };
	bool squatted;
	uint32_t i;
	int r;

	memset(c, 0, sizeof(*c));
	c->plan = *plan;
	c->fd = -1;
	c->listen_fd = -1;
	memset(go, 0, sizeof(*go));
	fabric_set_outcome(out, 0, SN_FABRIC_NO_BLAME, "%s", "");
	if (plan->nodes == 0 || plan->index >= plan->nodes ||
	    plan->attempts == 0) {
		sn_error_set(err, "fabric plan: node index %u of %u nodes, %u ports",
			     plan->index, plan->nodes, plan->attempts);
		return -1;
	}
	if (plan->attempts > 64 || plan->nodes > SN_FABRIC_NODES_MAX ||
	    plan->gpus > SN_FABRIC_GPUS_MAX) {
		sn_error_set(err, "fabric plan: %u nodes, %u GPUs, %u ports: beyond the protocol's bounds",
			     plan->nodes, plan->gpus, plan->attempts);
		return -1;
	}
	if (auth_works(plan, err) < 0) {
		fabric_set_outcome(out, SN_WARMUP_FABRIC_SETUP, plan->index,
				   "failed: %s", err->msg);
		return -1;
	}
	if (plan->index == 0) {
		c->conns = calloc(plan->nodes, sizeof(*c->conns));
		if (!c->conns) {
			sn_error_set(err, "out of memory for %u nodes",
				     plan->nodes);
			return -1;
		}
		for (i = 0; i < plan->nodes; i++)
			c->conns[i].fd = -1;
		if (fabric_root_listen(c, err) < 0) {
			/* Taken ports are not this node's GPUs' or NCCL's fault. */
			fabric_set_outcome(out, SN_WARMUP_FABRIC_SETUP, plan->index,
					   "failed: %s", err->msg);
			return -1;
		}
		fabric_root_gather(c, fabric_root_join_deadline(deadline));
		/* Late or stray connections are not ours to serve. */
		close(c->listen_fd);
		c->listen_fd = -1;
		return fabric_root_decide(c, local_status, local_text ? local_text : "",
					  nccl_id, go, out, err);
	}
	m.index = plan->index;
	m.nodes = plan->nodes;
	m.gpus = plan->gpus;
	m.status = local_status;
	snprintf(m.node, sizeof(m.node), "%s", plan->node);
	snprintf(m.text, sizeof(m.text), "%s", local_text ? local_text : "");
	/*
	 * The root stops taking nodes at its join deadline and closes its
	 * port: trying longer cannot succeed, and stopping there leaves this
	 * node the time to name the root before the watchdog's hard deadline.
	 */
	if (member_connect(c, &m, fabric_root_join_deadline(deadline),
			   &squatted, err) < 0) {
		fabric_set_outcome(out, squatted ? SN_WARMUP_FABRIC_SETUP :
				   SN_WARMUP_TIMEOUT, 0,
				   "could not be reached: %s", err->msg);
		return -1;
	}
	r = fabric_recv_msg(c->fd, c->rbuf, &c->rlen, deadline, &m, err);
	if (r > 0 && !root_says_sense(plan, &m)) {
		sn_error_set(err, "the fabric root sent %s outside the step's bounds",
			     sn_fabric_msg_name(m.type));
		r = -1;
	}
	if (r > 0 && m.type == SN_FMSG_GO) {
		go->rank_base = m.rank_base;
		go->nranks = m.nranks;
		memcpy(go->nccl_id, m.nccl_id, sizeof(go->nccl_id));
		return 0;
	}
	if (r > 0 && m.type == SN_FMSG_ABORT) {
		out->status = 1;
		out->blame = m.blame;
		snprintf(out->text, sizeof(out->text), "%s", m.text);
		return 1;
	}
	if (r == 0)
		sn_error_set(err, "the fabric root sent neither GO nor ABORT by the deadline");
	fabric_set_outcome(out, SN_WARMUP_TIMEOUT, 0, "did not answer: %s",
			   err->msg);
	return -1;
}

int fabric_coord_watch(struct fabric_coord *c, struct fabric_outcome *out)
{
	struct pollfd pfd;
	uint32_t i;

	if (c->plan.index == 0) {
		for (i = 0; i < c->plan.nodes && !c->verdict_known; i++) {
			if (i == c->plan.index || c->conns[i].state != CONN_JOINED)
				continue;
			pfd = (struct pollfd){ .fd = c->conns[i].fd, .events = POLLIN };
			/* A line may already wait in the buffer (read with HELLO). */
			if (memchr(c->conns[i].rbuf, '\n', c->conns[i].rlen) ||
			    poll(&pfd, 1, 0) == 1)
				fabric_root_read_done(c, i);
		}
	} else if (!c->verdict_known && c->fd >= 0) {
		struct sn_fabric_msg m;
		struct sn_error e;
		int r;

		pfd = (struct pollfd){ .fd = c->fd, .events = POLLIN };
		/* The VERDICT may have come in one read with GO. */
		if (!memchr(c->rbuf, '\n', c->rlen) && poll(&pfd, 1, 0) != 1)
			return 0;
		r = fabric_recv_msg(c->fd, c->rbuf, &c->rlen, sn_deadline_in(0),
				    &m, &e);
		if (r > 0 && !root_says_sense(&c->plan, &m))
			r = -1;
		if (r > 0 && m.type == SN_FMSG_VERDICT) {
			fabric_set_outcome(&c->verdict, m.status, m.blame, "%s", m.text);
			c->verdict_known = true;
		} else if (r != 0) {
			fabric_set_outcome(&c->verdict, SN_WARMUP_TIMEOUT, 0,
					   "closed its connection before the verdict (its helper died or its network failed)");
			c->verdict_known = true;
		}
	}
	if (!c->verdict_known || !c->verdict.status)
		return 0;
	*out = c->verdict;
	return 1;
}

int fabric_coord_finish(struct fabric_coord *c, uint32_t status,
			double busbw, const char *text,
			struct sn_deadline deadline,
			struct fabric_outcome *out, struct sn_error *err)
{
	struct sn_fabric_msg m = { .type = SN_FMSG_DONE, .status = status,
				   .busbw = busbw };
	int r;

	snprintf(m.text, sizeof(m.text), "%s", text ? text : "");
	if (c->plan.index == 0) {
		/* The root's own failure: the others stop now, not later. */
		if (status && status != SN_WARMUP_PEER_FAILED &&
		    status != SN_WARMUP_TIMEOUT && !c->verdict_known) {
			fabric_set_outcome(&c->verdict, status, c->plan.index,
					   "failed: %s", m.text);
			c->verdict_known = true;
			fabric_root_tell(c);
		}
		fabric_root_collect(c, fabric_root_join_deadline(deadline));
		if (!c->verdict_known) {
			fabric_root_verdict(c, status, m.text, &c->verdict);
			c->verdict_known = true;
		}
		fabric_root_tell(c);
		*out = c->verdict;
		return 0;
	}
	if (fabric_send_msg(c->fd, &m, &c->plan, err) < 0 && !c->verdict_known)
		return -1;
	if (c->verdict_known) {
		*out = c->verdict;
		return 0;
	}
	r = fabric_recv_msg(c->fd, c->rbuf, &c->rlen, deadline, &m, err);
	if (r > 0 && m.type == SN_FMSG_VERDICT && root_says_sense(&c->plan, &m)) {
		fabric_set_outcome(out, m.status, m.blame, "%s", m.text);
		return 0;
	}
	if (r == 0)
		sn_error_set(err, "no verdict from the fabric root by the deadline");
	return -1;
}

void fabric_coord_close(struct fabric_coord *c)
{
	uint32_t i;

	if (c->conns) {
		for (i = 0; i < c->plan.nodes; i++)
			if (c->conns[i].fd >= 0)
				close(c->conns[i].fd);
		free(c->conns);
		c->conns = NULL;
	}
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	if (c->fd >= 0)
		close(c->fd);
	c->listen_fd = c->fd = -1;
}

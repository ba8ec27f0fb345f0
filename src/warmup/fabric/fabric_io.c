/* SPDX-License-Identifier: MIT */
/* Lines over TCP with deadlines, for the fabric coordination. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>

#include "fabric_io.h"
#include "fabric/hostlist.h"

socklen_t fabric_make_addr(const char *addr, unsigned int port,
			   struct sockaddr_storage *ss)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		return sizeof(*in4);
	}
	if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		return sizeof(*in6);
	}
	return 0;
}

void fabric_candidates(const struct fabric_plan *p, char *out, size_t len)
{
	unsigned int first = sn_fabric_port(&p->ports, p->jobid, p->stepid, 0);
	unsigned int last = sn_fabric_port(&p->ports, p->jobid, p->stepid,
					   p->attempts - 1);

	if (p->attempts >= p->ports.hi - p->ports.lo + 1)
		snprintf(out, len, "%u-%u", p->ports.lo, p->ports.hi);
	else if (first <= last)
		snprintf(out, len, "%u-%u", first, last);
	else
		snprintf(out, len, "%u-%u and %u-%u", first, p->ports.hi,
			 p->ports.lo, last);
}

/* Names node INDEX from the step's node list, or by its index. */
void fabric_node_name(const struct fabric_plan *p, uint32_t index,
		      char *out, size_t len)
{
	struct sn_error ignored;

	if (index == p->index) {
		snprintf(out, len, "%s", p->node);
		return;
	}
	if (!p->nodelist ||
	    sn_hostlist_nth(p->nodelist, index, out, len, &ignored) < 0)
		snprintf(out, len, "node index %u", index);
}

static int send_all(int fd, const char *line, size_t len, const char *what,
		    struct sn_error *err)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = send(fd, line + off, len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			sn_error_set(err, "sending %s: %s", what,
				     n < 0 ? strerror(errno) : "closed");
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

int fabric_send_msg(int fd, struct sn_fabric_msg *m, const struct fabric_plan *p,
		    struct sn_error *err)
{
	char line[SN_FABRIC_MSG_MAX];

	m->jobid = p->jobid;
	m->stepid = p->stepid;
	if (sn_fabric_msg_encode(m, line, sizeof(line), err) < 0)
		return -1;
	return send_all(fd, line, strlen(line), sn_fabric_msg_name(m->type),
			err);
}

/* ADDR:PORT of a socket address, as sn_fabric_endpoint writes it. */
static int endpoint_of(const struct sockaddr_storage *ss, socklen_t sl,
		       char *out, size_t len)
{
	char host[FABRIC_ADDR_MAX], serv[16];
	struct sn_error ignored;

	if (getnameinfo((const struct sockaddr *)ss, sl, host, sizeof(host),
			serv, sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
		return -1;
	return sn_fabric_endpoint(out, len, host, (unsigned int)atoi(serv),
				  &ignored);
}

int fabric_endpoints(int fd, char *local, char *peer, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 ||
	    endpoint_of(&ss, sl, local, len) < 0)
		return -1;
	sl = sizeof(ss);
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0 ||
	    endpoint_of(&ss, sl, peer, len) < 0)
		return -1;
	return 0;
}

void fabric_peer_addr(int fd, char *addr, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0 ||
	    getnameinfo((const struct sockaddr *)&ss, sl, addr, (socklen_t)len,
			NULL, 0, NI_NUMERICHOST) != 0)
		snprintf(addr, len, "an unknown address");
}

int fabric_send_sealed(int fd, struct sn_fabric_msg *m,
		       const struct fabric_plan *p, struct sn_error *err)
{
	char local[SN_ENDPOINT_MAX], peer[SN_ENDPOINT_MAX];
	char payload[SN_FABRIC_PAYLOAD_MAX], cred[SN_FABRIC_CRED_MAX];
	char line[SN_FABRIC_MSG_MAX];

	m->jobid = p->jobid;
	m->stepid = p->stepid;
	if (fabric_endpoints(fd, local, peer, sizeof(local)) < 0) {
		sn_error_set(err, "the connection's addresses: %s",
			     strerror(errno));
		return -1;
	}
	if (sn_fabric_seal_text(m, local, peer, payload, sizeof(payload),
				err) < 0 ||
	    fabric_auth_seal(p->auth, payload, strlen(payload), cred,
			     sizeof(cred), err) < 0 ||
	    sn_fabric_auth_line(cred, line, sizeof(line), err) < 0)
		return -1;
	return send_all(fd, line, strlen(line), sn_fabric_msg_name(m->type),
			err);
}

enum fabric_unseal fabric_open_sealed(int fd, const char *line,
				      const struct fabric_plan *p,
				      struct sn_fabric_msg *m,
				      struct sn_error *err)
{
	char local[SN_ENDPOINT_MAX], peer[SN_ENDPOINT_MAX];
	char payload[SN_FABRIC_PAYLOAD_MAX], cred[SN_FABRIC_CRED_MAX];
	size_t len = sizeof(payload);
	enum fabric_unseal r;

	if (sn_fabric_auth_cred(line, cred, sizeof(cred), err) < 0)
		return FABRIC_UNSEAL_INVALID;
	r = fabric_auth_unseal(p->auth, cred, payload, &len, err);
	if (r != FABRIC_UNSEAL_OK)
		return r;
	/* Sealed by the other end: its FROM is our peer, its TO is us. */
	if (fabric_endpoints(fd, local, peer, sizeof(local)) < 0) {
		sn_error_set(err, "the connection's addresses: %s",
			     strerror(errno));
		return FABRIC_UNSEAL_INVALID;
	}
	if (sn_fabric_unseal_text(payload, len, peer, local, m, err) < 0)
		return FABRIC_UNSEAL_INVALID;
	if (m->jobid != p->jobid || m->stepid != p->stepid) {
		sn_error_set(err, "sealed for step %u.%u, not %u.%u",
			     m->jobid, m->stepid, p->jobid, p->stepid);
		return FABRIC_UNSEAL_INVALID;
	}
	return FABRIC_UNSEAL_OK;
}

/*
 * Takes one complete line out of BUF into LINE.  1: a line; 0: none yet;
 * -1: a line too long for the protocol.
 */
int fabric_take_line(char *buf, size_t *blen, char *line)
{
	char *nl = memchr(buf, '\n', *blen);
	size_t n;

	if (!nl)
		return *blen >= SN_FABRIC_MSG_MAX - 1 ? -1 : 0;
	n = (size_t)(nl - buf);
	memcpy(line, buf, n);
	line[n] = '\0';
	*blen -= n + 1;
	memmove(buf, nl + 1, *blen);
	return 1;
}

/* Reads what FD has into BUF: 1 read something, 0 EOF or error. */
int fabric_fill(int fd, char *buf, size_t *blen)
{
	ssize_t n;

	do
		n = recv(fd, buf + *blen, SN_FABRIC_MSG_MAX - 1 - *blen, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return 0;
	*blen += (size_t)n;
	return 1;
}

/* Waits for one message on FD: 1 got MSG, 0 timeout, -1 EOF/garbage. */
int fabric_recv_line(int fd, char *buf, size_t *blen,
		     struct sn_deadline deadline, char *line,
		     struct sn_error *err)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int r = fabric_take_line(buf, blen, line);

		if (r > 0)
			return 1;
		if (r < 0) {
			sn_error_set(err, "a line longer than %d bytes",
				     SN_FABRIC_MSG_MAX);
			return -1;
		}
		r = poll(&pfd, 1, sn_deadline_poll_ms(deadline,
						      FABRIC_POLL_MAX_MS));
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return 0;
		if (r < 0 || !fabric_fill(fd, buf, blen)) {
			sn_error_set(err, "connection closed");
			return -1;
		}
	}
}

int fabric_recv_msg(int fd, char *buf, size_t *blen,
		    struct sn_deadline deadline, struct sn_fabric_msg *msg,
		    struct sn_error *err)
{
	char line[SN_FABRIC_MSG_MAX];
	int r = fabric_recv_line(fd, buf, blen, deadline, line, err);

	if (r <= 0)
		return r;
	return sn_fabric_msg_decode(line, msg, err) < 0 ? -1 : 1;
}

void fabric_stranger(struct fabric_coord *c, const char *addr,
		     const char *why)
{
	struct fabric_strangers *s = &c->strangers;
	unsigned int i;

	s->refused++;
	for (i = 0; i < s->logged && i < FABRIC_LOG_PEERS; i++)
		if (strcmp(s->addr[i], addr) == 0)
			return;
	if (s->logged < FABRIC_LOG_PEERS)
		snprintf(s->addr[s->logged], sizeof(s->addr[0]), "%s", addr);
	else if (s->logged > FABRIC_LOG_PEERS)
		return;
	s->logged++;
	if (s->logged > FABRIC_LOG_PEERS)
		syslog(LOG_AUTHPRIV | LOG_WARNING,
		       "spank-nccl: fabric warmup of step %u.%u on %s: connections from more than %d addresses refused: the rest are not logged one by one",
		       c->plan.jobid, c->plan.stepid, c->plan.node,
		       FABRIC_LOG_PEERS);
	else
		syslog(LOG_AUTHPRIV | LOG_WARNING,
		       "spank-nccl: fabric warmup of step %u.%u on %s: refused a connection from %s: %s",
		       c->plan.jobid, c->plan.stepid, c->plan.node, addr, why);
}

void fabric_set_outcome(struct fabric_outcome *out, uint32_t status,
			uint32_t blame, const char *fmt, ...)
{
	va_list ap;

	out->status = status;
	out->blame = blame;
	va_start(ap, fmt);
	vsnprintf(out->text, sizeof(out->text), fmt, ap);
	va_end(ap);
}

static bool is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

bool fabric_is_loopback(const char *addr)
{
	struct sockaddr_storage ss;

	return fabric_make_addr(addr, 0, &ss) &&
	       is_loopback((const struct sockaddr *)&ss);
}

int fabric_resolve(const char *host, bool allow_loopback, char *addr,
		   size_t len, struct sn_error *err)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai, *pick = NULL;
	int rc = getaddrinfo(host, NULL, &hints, &res);

	if (rc != 0) {
		sn_error_set(err, "cannot resolve the step's first node %s: %s",
			     host, gai_strerror(rc));
		return -1;
	}
	/* IPv4 first, as NCCL's own bootstrap prefers; never loopback. */
	for (ai = res; ai && !pick; ai = ai->ai_next)
		if (ai->ai_family == AF_INET &&
		    (allow_loopback || !is_loopback(ai->ai_addr)))
			pick = ai;
	for (ai = res; ai && !pick; ai = ai->ai_next)
		if (ai->ai_family == AF_INET6 &&
		    (allow_loopback || !is_loopback(ai->ai_addr)))
			pick = ai;
	if (!pick) {
		freeaddrinfo(res);
		sn_error_set(err, "the step's first node %s resolves only to a loopback address, which the other nodes cannot reach: map the name to its NodeAddr in /etc/hosts or DNS (Debian's installer maps the host name to 127.0.1.1)",
			     host);
		return -1;
	}
	if (getnameinfo(pick->ai_addr, pick->ai_addrlen, addr, (socklen_t)len,
			NULL, 0, NI_NUMERICHOST) != 0) {
		freeaddrinfo(res);
		sn_error_set(err, "cannot write the address of %s", host);
		return -1;
	}
	freeaddrinfo(res);
	return 0;
}

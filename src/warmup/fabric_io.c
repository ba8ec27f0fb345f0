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
#include <unistd.h>

#include "clock.h"
#include "fabric_io.h"
#include "hostlist.h"

/* The project's one monotonic clock (core/clock.c), in whole ms. */
int64_t fabric_now_ms(void)
{
	return (int64_t)sn_clock_ms();
}

int fabric_ms_left(int64_t deadline_ms)
{
	int64_t left = deadline_ms - fabric_now_ms();

	return left <= 0 ? 0 : left > 60000 ? 60000 : (int)left;
}

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

int fabric_send_msg(int fd, struct sn_fabric_msg *m, const struct fabric_plan *p,
		    struct sn_error *err)
{
	char line[SN_FABRIC_MSG_MAX];
	size_t len, off = 0;

	m->jobid = p->jobid;
	m->stepid = p->stepid;
	if (sn_fabric_msg_encode(m, line, sizeof(line), err) < 0)
		return -1;
	len = strlen(line);
	while (off < len) {
		ssize_t n = send(fd, line + off, len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			sn_error_set(err, "sending %s: %s",
				     sn_fabric_msg_name(m->type),
				     strerror(errno));
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
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
int fabric_recv_msg(int fd, char *buf, size_t *blen, int64_t deadline_ms,
		    struct sn_fabric_msg *msg, struct sn_error *err)
{
	char line[SN_FABRIC_MSG_MAX];

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int r = fabric_take_line(buf, blen, line);

		if (r > 0)
			return sn_fabric_msg_decode(line, msg, err) < 0 ? -1 : 1;
		if (r < 0) {
			sn_error_set(err, "a line longer than %d bytes",
				     SN_FABRIC_MSG_MAX);
			return -1;
		}
		r = poll(&pfd, 1, fabric_ms_left(deadline_ms));
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

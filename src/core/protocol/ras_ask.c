/* SPDX-License-Identifier: MIT */
/* One question to NCCL's RAS (ras_ask.h). */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "protocol/ras_ask.h"

#define ANSWER_MAX (16u << 20)

/* Connects to ADDR ("host:port"), with send/receive timeouts. */
static int ras_connect(const char *addr, int timeout_ms, char *why,
		       size_t cap)
{
	char host[128];
	const char *port;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	struct timeval tv = { .tv_sec = timeout_ms / 1000,
			      .tv_usec = (timeout_ms % 1000) * 1000 };
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

/* The rest of F into A; false (errno set) if it stopped early. */
static bool read_rest(FILE *f, struct sn_ras_answer *a)
{
	size_t cap = 0;

	for (;;) {
		size_t n;

		if (cap - a->len < 4096) {
			char *t;

			if (cap >= ANSWER_MAX) {
				errno = EFBIG;
				return false;
			}
			cap = cap ? cap * 2 : 65536;
			t = realloc(a->text, cap + 1);
			if (!t)
				return false;
			a->text = t;
		}
		n = fread(a->text + a->len, 1, cap - a->len, f);
		a->len += n;
		a->text[a->len] = '\0';
		if (n == 0)
			return !ferror(f);
	}
}

int sn_ras_ask(const char *addr, int timeout_ms, struct sn_ras_answer *a,
	       char *why, size_t cap)
{
	char line[256];
	FILE *f;
	int fd = ras_connect(addr, timeout_ms, why, cap);

	memset(a, 0, sizeof(*a));
	if (fd < 0)
		return -1;
	f = fdopen(dup(fd), "r");
	if (!f || !send_all(fd, "CLIENT PROTOCOL 2\nSET FORMAT json\n") ||
	    !read_line(f, line, sizeof(line)) ||
	    strncmp(line, "SERVER PROTOCOL ", 16) != 0 ||
	    !read_line(f, line, sizeof(line))) {
		snprintf(why, cap, "%s did not answer as NCCL's RAS does", addr);
		goto fail;
	}
	a->json = strcmp(line, "OK") == 0;
	if (!send_all(fd, "VERBOSE STATUS\n")) {
		snprintf(why, cap, "%s: %s", addr, strerror(errno));
		goto fail;
	}
	if (!read_rest(f, a)) {
		a->cut = true;
		snprintf(why, cap, "%s: the answer stopped: %s", addr,
			 errno == EAGAIN ? "timed out" : strerror(errno));
	}
	if (!a->text) {
		a->text = strdup("");
		if (!a->text) {
			snprintf(why, cap, "out of memory");
			goto fail;
		}
	}
	fclose(f);
	close(fd);
	return 0;
fail:
	if (f)
		fclose(f);
	close(fd);
	sn_ras_answer_free(a);
	return -1;
}

void sn_ras_answer_free(struct sn_ras_answer *a)
{
	free(a->text);
	memset(a, 0, sizeof(*a));
}

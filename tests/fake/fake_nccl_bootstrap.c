/* SPDX-License-Identifier: MIT */
/*
 * The fake NCCL's bootstrap across processes (fake_nccl_net.h): the
 * process holding rank 0 is the root, as NCCL's bootstrap root
 * (src/bootstrap.cc, bootstrapRoot): it listens at NCCL_COMM_ID, or on
 * the socket ncclGetUniqueId opened for the id (fake_nccl_uid.c), until
 * every rank has checked in, then stops listening; every other process
 * connects there, retrying while it is not up yet, and names its ranks
 * (the hello of fake_nccl_net.c's wire format).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake_nccl_net.h"

bool fake_net_needed(ncclComm_t *comms, int n)
{
	unsigned long long clique = comms[0]->clique;

	/* FAKE_NCCL_HANG=init: the init never gets as far as the
	 * bootstrap, on every node (as a stalled bootstrap root leaves it). */
	if (!(fake_clique_comm_id(clique) || fake_clique_uid_addr(clique)) ||
	    n >= comms[0]->nranks || fake_env_has("FAKE_NCCL_HANG", "init"))
		return false;
	for (int i = 0; i < n; i++)
		if (comms[i]->state != ncclSuccess &&
		    comms[i]->state != ncclInProgress)
			return false;
	return true;
}

/* NCCL_COMM_ID: the bootstrap root listens there (bootstrapCreateRoot). */
static ncclResult_t root_listen(struct fake_net *net, struct addrinfo *ai)
{
	int one = 1;

	net->listen_fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (net->listen_fd < 0)
		return fake_nccl_error(ncclSystemError, "fake: socket: %s",
				       strerror(errno));
	setsockopt(net->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(net->listen_fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    listen(net->listen_fd, 4096) < 0)
		return fake_nccl_error(ncclSystemError,
				       "fake: bootstrap root cannot listen at %s: %s",
				       net->comm_id, strerror(errno));
	return ncclSuccess;
}

ncclResult_t fake_net_hub_rendezvous(struct fake_net *net,
				     struct addrinfo *ai)
{
	int covered = net->n;
	bool *taken = calloc((size_t)net->nranks, sizeof(*taken));
	ncclResult_t rc = ncclSuccess;

	if (!taken)
		return fake_nccl_error(ncclSystemError, "fake: out of memory");
	/* An id of ncclGetUniqueId: its listener is already open. */
	if (net->listen_fd < 0)
		rc = root_listen(net, ai);
	if (rc != ncclSuccess) {
		free(taken);
		return rc;
	}
	for (int i = 0; i < net->n; i++)
		taken[net->local[i]->rank] = true;
	net->peers = calloc((size_t)net->nranks, sizeof(*net->peers));
	while (net->peers && covered < net->nranks) {
		struct pollfd pfd = { .fd = net->listen_fd, .events = POLLIN };
		uint32_t hdr[3];
		struct peer *p = &net->peers[net->npeers];
		bool ok = true;

		if (atomic_load(&net->stop))
			break;
		if (poll(&pfd, 1, SLICE_MS) != 1)
			continue;
		p->fd = accept4(net->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (p->fd < 0)
			continue;
		fake_net_no_delay(p->fd);
		if (fake_net_io_all(net, p->fd, hdr, sizeof(hdr), false) < 0 ||
		    hdr[0] != NET_MAGIC || (int)hdr[1] != net->nranks ||
		    hdr[2] == 0 || hdr[2] > MAX_LOCAL ||
		    fake_net_io_all(net, p->fd, p->ranks, hdr[2] * sizeof(int),
				    false) < 0) {
			close(p->fd);
			continue;
		}
		p->n = (int)hdr[2];
		for (int k = 0; k < p->n; k++)
			ok &= p->ranks[k] >= 0 && p->ranks[k] < net->nranks &&
			      !taken[p->ranks[k]];
		if (!ok) {
			close(p->fd);
			continue;
		}
		for (int k = 0; k < p->n; k++)
			taken[p->ranks[k]] = true;
		covered += p->n;
		net->npeers++;
	}
	free(taken);
	/* Everyone is here: the root stops listening, as NCCL's does. */
	close(net->listen_fd);
	net->listen_fd = -1;
	if (!net->peers || covered < net->nranks)
		return ncclInternalError;
	for (int i = 0; i < net->npeers; i++) {
		uint32_t ack = 1;
		int r = fake_net_io_all(net, net->peers[i].fd, &ack,
					sizeof(ack), true);

		if (r < 0)
			return fake_net_io_fail(net, r, "bootstrap");
	}
	return ncclSuccess;
}

/* Non-blocking connect, retried until it works or we are stopped. */
static int connect_hub(struct fake_net *net, struct addrinfo *ai)
{
	int wait_ms = 10;

	while (!atomic_load(&net->stop)) {
		int fd = socket(ai->ai_family,
				SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		int r = fd < 0 ? -1 : connect(fd, ai->ai_addr, ai->ai_addrlen);

		while (r < 0 && fd >= 0 && errno == EINPROGRESS &&
		       !atomic_load(&net->stop)) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			int soerr = 0;
			socklen_t sl = sizeof(soerr);

			if (poll(&pfd, 1, SLICE_MS) == 0)
				continue;
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
			r = soerr ? -1 : 0;
			errno = soerr;
		}
		if (r == 0 && fcntl(fd, F_SETFL, 0) == 0) {
			fake_net_no_delay(fd);
			return fd;
		}
		if (fd >= 0)
			close(fd);
		/* Not listening yet: NCCL retries too (NCCL_SOCKET_RETRY_CNT). */
		fake_sleep(wait_ms / 1e3);
		if (wait_ms < 100)
			wait_ms *= 2;
	}
	return -1;
}

ncclResult_t fake_net_member_rendezvous(struct fake_net *net,
					struct addrinfo *ai)
{
	uint32_t hdr[3] = { NET_MAGIC, (uint32_t)net->nranks, (uint32_t)net->n };
	int ranks[MAX_LOCAL], r;
	uint32_t ack = 0;

	net->fd = connect_hub(net, ai);
	if (net->fd < 0)
		return ncclInternalError;
	for (int i = 0; i < net->n; i++)
		ranks[i] = net->local[i]->rank;
	r = fake_net_io_all(net, net->fd, hdr, sizeof(hdr), true);
	if (!r)
		r = fake_net_io_all(net, net->fd, ranks,
				    (size_t)net->n * sizeof(int), true);
	if (!r)
		r = fake_net_io_all(net, net->fd, &ack, sizeof(ack), false);
	return r ? fake_net_io_fail(net, r, "bootstrap") : ncclSuccess;
}

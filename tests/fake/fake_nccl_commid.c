/* SPDX-License-Identifier: MIT */
/*
 * The fake NCCL and NCCL_COMM_ID, as NCCL reads it: ncclGetUniqueId only
 * encodes the address (NCCL src/bootstrap.cc, bootstrapGetUniqueId), and
 * rank 0's init opens the bootstrap root there (src/init.cc,
 * ncclCommInitRankDev), for a communicator of one process too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake_nccl.h"

/* "host:port", "[v6]:port": the address the bootstrap root uses. */
int fake_comm_id_resolve(const char *id, struct addrinfo **res)
{
	char host[128], *port;
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };

	if (snprintf(host, sizeof(host), "%s", id) >= (int)sizeof(host))
		return -1;
	port = strrchr(host, ':');
	if (!port || port == host || !port[1])
		return -1;
	*port++ = '\0';
	if (host[0] == '[') {
		size_t len = strlen(host);

		if (len < 3 || host[len - 1] != ']')
			return -1;
		host[len - 1] = '\0';
		memmove(host, host + 1, len - 1);
	}
	return getaddrinfo(host, port, &hints, res) == 0 ? 0 : -1;
}

ncclResult_t fake_net_unique_id(unsigned long long *clique)
{
	const char *id = getenv("NCCL_COMM_ID");
	struct addrinfo *res;
	unsigned long long h = 1469598103934665603ULL;	/* FNV-1a */

	if (!id || !*id)
		return ncclSuccess;
	if (fake_comm_id_resolve(id, &res) < 0)
		return fake_nccl_error(ncclInvalidArgument,
				       "fake: Invalid NCCL_COMM_ID [%s], please use format: <ipv4>:<port> or [<ipv6>]:<port> or <hostname>:<port>",
				       id);
	freeaddrinfo(res);
	for (const char *p = id; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	*clique = h | COMM_ID_BIT;
	return ncclSuccess;
}

void fake_net_local_root(ncclComm_t *comms, int n)
{
	struct addrinfo *ai;
	int fd = -1, one = 1, err = 0;
	bool has_root = false;

	for (int i = 0; i < n; i++)
		has_root |= comms[i]->rank == 0;
	if (!has_root)
		return;
	/* An id's own root: its thread ends once every rank came (the fake
	 * needs no rendezvous here, and does not insist on the root). */
	if (fake_clique_uid_addr(comms[0]->clique)) {
		fake_uid_local_root(&comms[0]->id);
		return;
	}
	if (!fake_clique_comm_id(comms[0]->clique))
		return;
	/* NCCL: "if (env && myrank == 0) bootstrapCreateRoot(...)" (init.cc) */
	if (fake_comm_id_resolve(getenv("NCCL_COMM_ID"), &ai) < 0)
		return;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    listen(fd, 1) < 0)
		err = errno;
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	for (int i = 0; err && i < n; i++)
		comms[i]->state = fake_nccl_error(ncclSystemError,
						  "fake: bootstrap root cannot listen at NCCL_COMM_ID %s: %s",
						  getenv("NCCL_COMM_ID"), strerror(err));
}

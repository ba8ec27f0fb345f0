/* SPDX-License-Identifier: MIT */
/*
 * One network of a clique whose ranks are in several processes, shared
 * by fake_nccl_bootstrap.c (the rendezvous at the bootstrap root) and
 * fake_nccl_net.c (the worker thread, the data path and its wire format).
 */
#ifndef FAKE_NCCL_NET_H
#define FAKE_NCCL_NET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "fake_nccl.h"

#define NET_MAGIC 0x464e4554u	/* "FNET" */
#define SLICE_MS 50		/* how often a blocked worker checks stop */
#define MAX_LOCAL 64

struct peer {			/* hub: another process */
	int fd;
	int n;
	int ranks[MAX_LOCAL];
};

struct fake_net {
	int nranks;
	int n;				/* this process's ranks */
	ncclComm_t local[MAX_LOCAL];
	int refs;			/* local comms not yet released */
	bool hub;			/* holds rank 0 */
	char comm_id[128];		/* NCCL_COMM_ID, or the id's "ip<port>" */
	struct sockaddr_storage root;	/* the id's address (root_len > 0) */
	socklen_t root_len;
	int listen_fd, fd;		/* hub; member: to the hub */
	int npeers;
	struct peer *peers;
	pthread_t thread;
	bool running;			/* thread started, not joined */
	atomic_bool stop;
	pthread_mutex_t mu;		/* the job below; never with the nccl lock */
	pthread_cond_t cv;
	struct op *job;
	int job_n;
	double job_started;		/* fake_now() when it was queued */
};

/* FD's LEN bytes at BUF, in (OUT) or out, checking stop every SLICE_MS:
 * 0 done, -1 the connection failed or closed, -2 stopped. */
FAKE_HIDDEN int fake_net_io_all(struct fake_net *net, int fd, void *buf,
				size_t len, bool out);
/* Small messages, one round trip each: no Nagle (NCCL sets it too). */
FAKE_HIDDEN void fake_net_no_delay(int fd);
/* A failed fake_net_io_all (R) of WHAT, as NCCL reports a lost peer. */
FAKE_HIDDEN ncclResult_t fake_net_io_fail(struct fake_net *net, int r,
					  const char *what);

/* fake_nccl_bootstrap.c: every process's ranks checked in at the root
 * (AI); rank 0's process (listening there, or on net->listen_fd already
 * open) and the others (connecting there, retried). */
FAKE_HIDDEN ncclResult_t fake_net_hub_rendezvous(struct fake_net *net,
						 struct addrinfo *ai);
FAKE_HIDDEN ncclResult_t fake_net_member_rendezvous(struct fake_net *net,
						    struct addrinfo *ai);

#endif

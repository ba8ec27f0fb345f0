/* SPDX-License-Identifier: MIT */
/*
 * The fake NCCL across processes (and nodes): when a communicator has
 * ranks in other processes, they meet at the bootstrap root, rank 0's
 * process (fake_nccl_bootstrap.c: at NCCL_COMM_ID, or at the address of
 * the id ncclGetUniqueId made without it), and each collective or
 * send/recv batch sends every rank's real buffer to rank 0's process,
 * which computes the result (fake_move_data, fake_p2p_match) and sends
 * each process its ranks' part back.  A worker thread per communicator
 * does the I/O, so init and collectives stay ncclInProgress
 * (non-blocking) until every process took part, as with NCCL; a process
 * that never comes leaves the others InProgress, one that dies makes
 * them fail with ncclRemoteError.  ncclCommAbort stops it.
 *
 * Wire format (host byte order: a test double on one architecture):
 *   hello:   u32 magic, u32 nranks, u32 n, u32 rank[n]      -> u32 ack
 *   request: u32 n, then n x { u32 kind, u32 rank, i32 peer, u32 0,
 *            u64 count, float send[fake_op_send_floats] }
 *   reply:   u32 status, then per op float recv[fake_op_recv_floats]
 * where a buffer of more than 2 x SAMPLE floats per rank travels only in
 * the parts fake_move_data computes (the first and last SAMPLE of each
 * rank's slot), so a bandwidth-sized all-reduce costs little on the wire.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake_nccl_net.h"

/* 0 done, -1 the connection failed or closed, -2 stopped. */
int fake_net_io_all(struct fake_net *net, int fd, void *buf, size_t len,
		    bool out)
{
	char *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = out ? POLLOUT : POLLIN };
		int r = poll(&pfd, 1, SLICE_MS);
		ssize_t n;

		if (atomic_load(&net->stop))
			return -2;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			continue;
		n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void fake_net_no_delay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* The FLOATS floats at BUF, in slots of COUNT: sampled as fake_move_data. */
static int io_floats(struct fake_net *net, int fd, const void *buf,
		     size_t floats, size_t count, bool out)
{
	float *f = (float *)buf;
	int r = 0;

	if (!count || count <= 2 * SAMPLE)
		return fake_net_io_all(net, fd, f, floats * sizeof(float), out);
	for (size_t slot = 0; slot + count <= floats && !r; slot += count) {
		r = fake_net_io_all(net, fd, f + slot, SAMPLE * sizeof(float),
				    out);
		if (!r)
			r = fake_net_io_all(net, fd, f + slot + count - SAMPLE,
					    SAMPLE * sizeof(float), out);
	}
	return r;
}

ncclResult_t fake_net_io_fail(struct fake_net *net, int r, const char *what)
{
	if (r == -2)
		return ncclInternalError;	/* aborted: nobody looks */
	return fake_nccl_error(ncclRemoteError,
			       "fake: NET/Socket: %s with %s failed: remote process exited or there was a network error",
			       what, net->comm_id);
}

struct wire_op {
	uint32_t kind;
	uint32_t rank;
	int32_t peer;
	uint32_t pad;
	uint64_t count;
};

static int send_ops(struct fake_net *net, int fd, struct op *ops, int n)
{
	uint32_t count = (uint32_t)n;
	int r = fake_net_io_all(net, fd, &count, sizeof(count), true);

	for (int i = 0; i < n && !r; i++) {
		struct wire_op w = { .kind = ops[i].kind, .rank = (uint32_t)ops[i].rank,
				     .peer = ops[i].peer, .count = ops[i].count };

		r = fake_net_io_all(net, fd, &w, sizeof(w), true);
		if (!r)
			r = io_floats(net, fd, ops[i].send,
				      fake_op_send_floats(&ops[i], net->nranks),
				      ops[i].count, true);
	}
	return r;
}

/* Hub: one peer's ops into ALL (buffers malloc'd; recv sized). */
static int recv_ops(struct fake_net *net, int fd, struct op *all, int *n_all,
		    int max)
{
	uint32_t count;
	int r = fake_net_io_all(net, fd, &count, sizeof(count), false);

	if (!r && (int)count > max - *n_all)
		return -1;
	for (uint32_t i = 0; i < count && !r; i++) {
		struct wire_op w;
		struct op *o = &all[(*n_all)++];
		size_t sn, rn;

		*o = (struct op){ 0 };
		r = fake_net_io_all(net, fd, &w, sizeof(w), false);
		if (r)
			break;
		*o = (struct op){ .kind = (enum op_kind)w.kind, .rank = (int)w.rank,
				  .peer = w.peer, .count = (size_t)w.count };
		if (o->kind > OP_RECV || o->rank >= net->nranks)
			return -1;
		sn = fake_op_send_floats(o, net->nranks);
		rn = fake_op_recv_floats(o, net->nranks);
		o->send = malloc(sn * sizeof(float) + 1);
		o->recv = calloc(rn + 1, sizeof(float));
		if (!o->send || !o->recv)
			return -1;
		r = io_floats(net, fd, o->send, sn, o->count, false);
	}
	return r;
}

/* Hub: every rank's op, then the result. */
static ncclResult_t compute(struct fake_net *net, struct op *all, int n)
{
	char why[160];
	struct op **by_rank;

	if (all[0].kind == OP_SEND || all[0].kind == OP_RECV)
		return fake_p2p_match(all, n, why, sizeof(why)) ?
		       fake_nccl_error(ncclInvalidUsage, "%s", why) : ncclSuccess;
	by_rank = calloc((size_t)net->nranks, sizeof(*by_rank));
	if (!by_rank || n != net->nranks) {
		free(by_rank);
		return fake_nccl_error(ncclInvalidUsage,
				       "fake: %s with %d of %d ranks across the processes",
				       fake_op_func[all[0].kind], n, net->nranks);
	}
	for (int i = 0; i < n; i++)
		by_rank[all[i].rank] = &all[i];
	for (int i = 0; i < net->nranks; i++) {
		if (!by_rank[i] || by_rank[i]->kind != all[0].kind ||
		    by_rank[i]->count != all[0].count) {
			free(by_rank);
			return fake_nccl_error(ncclInvalidUsage,
					       "fake: ranks disagree on the %s",
					       fake_op_func[all[0].kind]);
		}
	}
	fake_move_data(all[0].kind, by_rank, net->nranks);
	free(by_rank);
	return ncclSuccess;
}

static ncclResult_t hub_exchange(struct fake_net *net, struct op *job, int n)
{
	int max = 2 * net->nranks + n, n_all = n, r = 0;
	struct op *all = calloc((size_t)max, sizeof(*all));
	int *first = calloc((size_t)net->npeers + 1, sizeof(*first));
	ncclResult_t rc = ncclSuccess;

	if (!all || !first) {
		free(all);
		free(first);
		return fake_nccl_error(ncclSystemError, "fake: out of memory");
	}
	memcpy(all, job, (size_t)n * sizeof(*job));
	for (int p = 0; p < net->npeers && !r; p++) {
		first[p] = n_all;
		r = recv_ops(net, net->peers[p].fd, all, &n_all, max);
	}
	first[net->npeers] = n_all;
	if (r)
		rc = fake_net_io_fail(net, r, "a collective");
	else
		rc = compute(net, all, n_all);
	for (int p = 0; p < net->npeers && !r; p++) {
		uint32_t status = (uint32_t)rc;

		r = fake_net_io_all(net, net->peers[p].fd, &status,
				    sizeof(status), true);
		for (int i = first[p]; i < first[p + 1] && !r && !rc; i++)
			r = io_floats(net, net->peers[p].fd, all[i].recv,
				      fake_op_recv_floats(&all[i], net->nranks),
				      all[i].count, true);
	}
	if (r && rc == ncclSuccess)
		rc = fake_net_io_fail(net, r, "a collective");
	for (int i = n; i < n_all; i++) {
		free((void *)all[i].send);
		free(all[i].recv);
	}
	free(all);
	free(first);
	return rc;
}

static ncclResult_t member_exchange(struct fake_net *net, struct op *job, int n)
{
	uint32_t status = 0;
	int r = send_ops(net, net->fd, job, n);

	if (!r)
		r = fake_net_io_all(net, net->fd, &status, sizeof(status),
				    false);
	for (int i = 0; i < n && !r && !status; i++)
		r = io_floats(net, net->fd, job[i].recv,
			      fake_op_recv_floats(&job[i], net->nranks),
			      job[i].count, false);
	if (r)
		return fake_net_io_fail(net, r, "a collective");
	if (status)
		return fake_nccl_error((ncclResult_t)status,
				       "fake: rank 0's process refused the %s",
				       fake_op_func[job[0].kind]);
	return ncclSuccess;
}

/*
 * The comms' new state; the streams complete when FAKE_NCCL_BUSBW_GBPS
 * says, counted from STARTED (the exchange's own time included).
 */
static void complete(struct fake_net *net, struct op *job, int n,
		     ncclResult_t rc, double started)
{
	double secs = n && job[0].kind != OP_SEND && job[0].kind != OP_RECV ?
		      fake_coll_seconds(job[0].count * sizeof(float), net->nranks) -
		      (fake_now() - started) : 0;

	if (atomic_load(&net->stop))
		return;		/* aborted: the comms are going away */
	fake_nccl_lock();
	for (int i = 0; i < net->n; i++)
		net->local[i]->state = rc;
	for (int i = 0; i < n && rc == ncclSuccess; i++)
		fake_nccl_stream_done(job[i].stream, secs);
	fake_nccl_unlock();
}

static void *worker(void *arg)
{
	struct fake_net *net = arg;
	struct addrinfo *ai = NULL;
	struct addrinfo id_ai = { .ai_socktype = SOCK_STREAM };
	ncclResult_t rc;

	if (net->root_len) {
		/* The address in the id (fake_uid_root). */
		id_ai.ai_family = net->root.ss_family;
		id_ai.ai_addr = (struct sockaddr *)&net->root;
		id_ai.ai_addrlen = net->root_len;
		rc = net->hub ? fake_net_hub_rendezvous(net, &id_ai) :
				fake_net_member_rendezvous(net, &id_ai);
	} else if (fake_comm_id_resolve(net->comm_id, &ai) < 0) {
		rc = fake_nccl_error(ncclInvalidArgument, "fake: cannot resolve NCCL_COMM_ID %s",
				     net->comm_id);
	} else {
		rc = net->hub ? fake_net_hub_rendezvous(net, ai) :
				fake_net_member_rendezvous(net, ai);
	}
	if (ai)
		freeaddrinfo(ai);
	complete(net, NULL, 0, rc, 0);
	while (rc == ncclSuccess) {
		struct op *job;
		double started;
		int n;

		pthread_mutex_lock(&net->mu);
		while (!net->job && !atomic_load(&net->stop))
			pthread_cond_wait(&net->cv, &net->mu);
		job = net->job;
		n = net->job_n;
		started = net->job_started;
		net->job = NULL;
		pthread_mutex_unlock(&net->mu);
		if (!job)
			break;
		rc = net->hub ? hub_exchange(net, job, n) : member_exchange(net, job, n);
		complete(net, job, n, rc, started);
		free(job);
	}
	return NULL;
}

static void start_failed(ncclComm_t *comms, int n, ncclResult_t rc)
{
	for (int i = 0; i < n; i++)
		comms[i]->state = rc;
}

void fake_net_start(ncclComm_t *comms, int n)
{
	struct fake_net *net = calloc(1, sizeof(*net));
	const char *id = getenv("NCCL_COMM_ID");
	char bootstrap[160];
	ncclResult_t rc;

	if (!net || n > MAX_LOCAL) {
		free(net);
		start_failed(comms, n, fake_nccl_error(ncclSystemError,
						       "fake: cannot start the network"));
		return;
	}
	net->nranks = comms[0]->nranks;
	net->n = n;
	net->refs = n;
	net->listen_fd = net->fd = -1;
	for (int i = 0; i < n; i++)
		net->hub |= comms[i]->rank == 0;
	if (fake_clique_uid_addr(comms[0]->clique)) {
		/* NCCL: every rank meets at the root in the id (bootstrapInit) */
		rc = fake_uid_root(&comms[0]->id, net->hub, &net->root,
				   &net->root_len, &net->listen_fd,
				   net->comm_id, sizeof(net->comm_id));
		if (rc != ncclSuccess) {
			free(net);
			start_failed(comms, n, rc);
			return;
		}
		fake_uid_bootstrap_name(bootstrap, sizeof(bootstrap));
	} else {
		snprintf(net->comm_id, sizeof(net->comm_id), "%s", id ? id : "");
		snprintf(bootstrap, sizeof(bootstrap), "eth0:%s<0>", net->comm_id);
	}
	pthread_mutex_init(&net->mu, NULL);
	pthread_cond_init(&net->cv, NULL);
	for (int i = 0; i < n; i++) {
		net->local[i] = comms[i];
		comms[i]->net = net;
		comms[i]->state = ncclInProgress;
		comms[i]->ready_at = 0;
	}
	fake_nccl_info(comms[0]->device, "Bootstrap: Using %s", bootstrap);
	if (pthread_create(&net->thread, NULL, worker, net) != 0) {
		start_failed(comms, n, fake_nccl_error(ncclSystemError,
						       "fake: pthread_create failed"));
		return;
	}
	net->running = true;
}

ncclResult_t fake_net_run(struct op *ops, int n)
{
	struct fake_net *net = ops[0].comm->net;
	struct op *job = malloc((size_t)n * sizeof(*job));

	if (!job)
		return fake_nccl_error(ncclSystemError, "fake: out of memory");
	memcpy(job, ops, (size_t)n * sizeof(*job));
	for (int i = 0; i < net->n; i++)
		net->local[i]->state = ncclInProgress;
	pthread_mutex_lock(&net->mu);
	free(net->job);		/* only one at a time: the caller waits */
	net->job = job;
	net->job_n = n;
	net->job_started = fake_now();
	pthread_cond_signal(&net->cv);
	pthread_mutex_unlock(&net->mu);
	return ncclSuccess;
}

void fake_net_release(ncclComm_t comm)
{
	struct fake_net *net = comm->net;

	atomic_store(&net->stop, true);
	pthread_mutex_lock(&net->mu);
	pthread_cond_signal(&net->cv);
	pthread_mutex_unlock(&net->mu);
	if (net->running) {
		pthread_join(net->thread, NULL);
		net->running = false;
	}
	comm->net = NULL;
	if (--net->refs > 0)
		return;
	for (int i = 0; i < net->npeers; i++)
		close(net->peers[i].fd);
	if (net->listen_fd >= 0)
		close(net->listen_fd);
	if (net->fd >= 0)
		close(net->fd);
	free(net->peers);
	free(net->job);
	pthread_mutex_destroy(&net->mu);
	pthread_cond_destroy(&net->cv);
	free(net);
}

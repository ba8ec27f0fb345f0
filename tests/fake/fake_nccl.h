/* SPDX-License-Identifier: MIT */
/*
 * The fake libnccl.so.2's shared types: fake_nccl.c (communicators,
 * groups, the API) and fake_nccl_coll.c (NCCL_ALGO, data movement).
 */
#ifndef FAKE_NCCL_H
#define FAKE_NCCL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include <cuda.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "fake_common.h"

#define SAMPLE 4096

#ifndef FAKE_NCCL_DEFAULT_VERSION
#define FAKE_NCCL_DEFAULT_VERSION NCCL_VERSION_CODE
#endif

struct fake_net;

struct ncclComm {
	unsigned long long clique;	/* from the unique ID: fake_uid_clique */
	ncclUniqueId id;		/* as given to init */
	struct fake_net *net;		/* ranks in other processes */
	int rank;
	int nranks;
	int device;
	bool blocking;
	ncclResult_t state;		/* what ncclCommGetAsyncError says */
	double ready_at;		/* InProgress until then (0: forever) */
	CUdeviceptr reserved;		/* the device memory NCCL "takes" */
};

enum op_kind {
	OP_INIT, OP_ALLREDUCE, OP_BROADCAST, OP_ALLGATHER, OP_REDUCESCATTER,
	OP_SEND, OP_RECV,
};

/* NCCL's names of the operations, for messages. */
FAKE_HIDDEN extern const char *const fake_op_func[];

struct op {
	enum op_kind kind;
	ncclComm_t comm;		/* NULL: another process's rank */
	int rank;
	const void *send;
	void *recv;
	size_t count;
	int peer;			/* root (broadcast) or peer (p2p) */
	cudaStream_t stream;
};

/*
 * Whether NCCL_ALGO allows an algorithm that implements KIND, as NCCL
 * 2.24+ decides (older fakes: always).
 */
FAKE_HIDDEN bool fake_algo_allowed(enum op_kind kind);
/* The data movement of one collective over its ranks (ops by rank). */
FAKE_HIDDEN void fake_move_data(enum op_kind kind, struct op **by_rank,
				int n);
/*
 * Point-to-point: copies every send to its matching recv (by rank, peer
 * and count).  NULL, or what did not match (WHY, LEN bytes).
 */
FAKE_HIDDEN const char *fake_p2p_match(struct op *ops, int n, char *why,
				       size_t len);
/* Floats OP sends and receives in a communicator of NRANKS. */
FAKE_HIDDEN size_t fake_op_send_floats(const struct op *op, int nranks);
FAKE_HIDDEN size_t fake_op_recv_floats(const struct op *op, int nranks);
/* Seconds a collective of BYTES takes at FAKE_NCCL_BUSBW_GBPS. */
FAKE_HIDDEN double fake_coll_seconds(size_t bytes, int nranks);

/* fake_nccl.c, for the other files */
/* Queues OP (a collective or p2p), run at the group's end. */
FAKE_HIDDEN ncclResult_t fake_nccl_enqueue(struct op op);
FAKE_HIDDEN ncclResult_t fake_nccl_error(ncclResult_t rc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
FAKE_HIDDEN void fake_nccl_lock(void);
FAKE_HIDDEN void fake_nccl_unlock(void);
/* The fake libcuda's: STREAM completes SECONDS from now. */
FAKE_HIDDEN void fake_nccl_stream_done(cudaStream_t stream, double seconds);
/* An NCCL-style "host:pid:tid [dev] NCCL INFO ..." line, at NCCL_DEBUG=INFO,
 * to NCCL_DEBUG_FILE (else stdout), as NCCL writes them. */
FAKE_HIDDEN void fake_nccl_info(int dev, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * fake_nccl_net.c: ranks in other processes, reached over TCP at
 * NCCL_COMM_ID or at the address in the unique id, with rank 0's process
 * as the hub (the fake's stand-in for NCCL's bootstrap and network).
 *
 * A clique's top two bits say how its processes meet: 1x NCCL_COMM_ID,
 * 01 the address in the id (ncclGetUniqueId without NCCL_COMM_ID),
 * 00 nowhere (one process only).
 */
#define COMM_ID_BIT (1ULL << 63)	/* a clique id from NCCL_COMM_ID */
#define UID_ADDR_BIT (1ULL << 62)	/* ... from an id's address */

static inline bool fake_clique_comm_id(unsigned long long clique)
{
	return clique & COMM_ID_BIT;
}

static inline bool fake_clique_uid_addr(unsigned long long clique)
{
	return (clique & (COMM_ID_BIT | UID_ADDR_BIT)) == UID_ADDR_BIT;
}

/* fake_nccl_uid.c: ncclGetUniqueId's own bootstrap root */
/* Opens a listener on the bootstrap interface, kept by this process,
 * and writes NCCL's { magic, address } handle into ID. */
FAKE_HIDDEN ncclResult_t fake_uid_create(ncclUniqueId *id);
/* The clique of ID: a hash of magic and address (UID_ADDR_BIT) if it
 * names one, else its first 8 bytes (with COMM_ID_BIT, or bits 62-63
 * clear). */
FAKE_HIDDEN unsigned long long fake_uid_clique(const ncclUniqueId *id);
/* The rendezvous address in ID (LABEL: "ip<port>") and, for the HUB,
 * the listener ncclGetUniqueId kept for it, handed over (an error if
 * this process has none). */
FAKE_HIDDEN ncclResult_t fake_uid_root(const ncclUniqueId *id, bool hub,
				       struct sockaddr_storage *addr,
				       socklen_t *addr_len, int *listen_fd,
				       char *label, size_t label_len);
/* A communicator of this process only: closes ID's kept listener. */
FAKE_HIDDEN void fake_uid_local_root(const ncclUniqueId *id);
/* "ifname:ip<0>" of the bootstrap interface, for the INFO log. */
FAKE_HIDDEN void fake_uid_bootstrap_name(char *out, size_t len);

/* fake_nccl_commid.c */
struct addrinfo;
/* "host:port" or "[v6]:port" to its first address; -1 if malformed. */
FAKE_HIDDEN int fake_comm_id_resolve(const char *id, struct addrinfo **res);
/* The clique id every process derives from NCCL_COMM_ID (0: unset). */
FAKE_HIDDEN ncclResult_t fake_net_unique_id(unsigned long long *clique);
/* NCCL's "Using network NAME" lines (FAKE_NCCL_NET), once per process. */
FAKE_HIDDEN void fake_net_announce(void);
/* Whether COMMS (one clique, N of them here) span processes
 * (fake_nccl_bootstrap.c). */
FAKE_HIDDEN bool fake_net_needed(ncclComm_t *comms, int n);
/* A communicator of this process only, with NCCL_COMM_ID set: rank 0
 * still opens the bootstrap root there, as NCCL's does (a non-local
 * address fails its init); with an id's address, rank 0's process closes
 * the root ncclGetUniqueId opened.  Under the lock. */
FAKE_HIDDEN void fake_net_local_root(ncclComm_t *comms, int n);
/* fake_nccl_net.c: starts the rendezvous; the comms stay InProgress
 * until it is done (or fail at once: no root).  Under the lock. */
FAKE_HIDDEN void fake_net_start(ncclComm_t *comms, int n);
/* One collective or p2p batch of this process's ranks; the comms stay
 * InProgress until every process's part is exchanged.  Under the lock. */
FAKE_HIDDEN ncclResult_t fake_net_run(struct op *ops, int n);
/* Destroy/abort: stops the exchange, closes its sockets.  Not locked. */
FAKE_HIDDEN void fake_net_release(ncclComm_t comm);

/* fake_nccl_ras.c: NCCL's RAS (2.24+) over this process's comms. */
FAKE_HIDDEN void fake_ras_comm_add(ncclComm_t comm);
/* A collective of KIND launched on COMM (its RAS count). */
FAKE_HIDDEN void fake_ras_count(ncclComm_t comm, enum op_kind kind);
FAKE_HIDDEN void fake_ras_comm_remove(ncclComm_t comm);

#endif

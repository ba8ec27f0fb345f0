/* SPDX-License-Identifier: MIT */
/*
 * Coordination of a fabric warmup across the nodes of a step, beside
 * NCCL's own bootstrap (messages: src/core/fabric/fabric_msg.h).  The helper on
 * node index 0 (the root) listens on the first free port of the step's
 * candidates (src/core/fabric/fabric_addr.h); every other node's helper finds it
 * there, says who it is and how its node-local checks went (a HELLO
 * sealed with MUNGE, fabric_auth.h), and gets either GO (its NCCL rank
 * base, the rank count and NCCL's unique id) or ABORT naming the node at
 * fault.  After the collectives each node reports DONE and the root sends
 * one VERDICT naming the node at fault, if any.  Every wait ends at the
 * caller's deadline.
 *
 * Trust: the root acts only on a HELLO that a process of the job's user
 * sealed for that very connection, from an address of the node it
 * claims to be; a member acts only on a root that sealed its WELCOME the
 * same way.  Anything else is closed unanswered, counted and logged
 * (syslog, LOG_AUTHPRIV), never blamed on a node.
 */
#ifndef WU_FABRIC_COORD_H
#define WU_FABRIC_COORD_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/error.h"
#include "fabric/fabric_addr.h"
#include "fabric_auth.h"
#include "fabric/fabric_msg.h"
#include "protocol/helper_protocol.h"

#define FABRIC_ADDR_MAX 64	/* numeric IPv4/IPv6 text */
#define FABRIC_ATTEMPTS_DEFAULT 8
#define FABRIC_LOG_PEERS 16	/* addresses logged one by one, then a count */

struct fabric_plan {
	uint32_t jobid;
	uint32_t stepid;
	uint32_t index;		/* this node's index in the step */
	uint32_t nodes;		/* nodes in the step */
	uint32_t gpus;		/* this node's GPUs */
	char node[SN_HOSTNAME_MAX];
	const char *nodelist;	/* the step's, to name nodes; may be NULL */
	char root_addr[FABRIC_ADDR_MAX];	/* numeric, the root's NodeAddr */
	/* Numeric, this node's own address to connect from ("": any). */
	char self_addr[FABRIC_ADDR_MAX];
	struct sn_port_range ports;
	unsigned int attempts;	/* candidate ports tried */
	struct fabric_auth *auth;	/* MUNGE, open (fabric_auth.h) */
	/*
	 * Root: accept node I only from an address its name in NODELIST
	 * resolves to (off only in tests that have no such names).
	 */
	bool check_peer_addr;
	/*
	 * Root: makes NCCL's unique id into ID once every node has joined
	 * and none failed, so that NCCL's bootstrap listener (which
	 * ncclGetUniqueId opens, and which any local user can reach) opens
	 * only when the members are about to connect to it.  0, or the
	 * root's exit code with TEXT (LEN bytes) saying why.  NULL: the
	 * caller's NCCL_ID of fabric_coord_join.
	 */
	int (*make_id)(void *ctx, unsigned char *id, char *text, size_t len);
	void *make_id_ctx;
};

/* Connections the root or a member refused: not the step's. */
struct fabric_strangers {
	unsigned int refused;
	unsigned int logged;
	char addr[FABRIC_LOG_PEERS][FABRIC_ADDR_MAX];
};

struct fabric_conn;

/* What the root decided; blame is a node index or SN_FABRIC_NO_BLAME. */
struct fabric_outcome {
	uint32_t status;	/* 0 ok, else the failing node's exit code */
	uint32_t blame;
	char text[SN_FABRIC_TEXT_MAX];
};

struct fabric_coord {
	struct fabric_plan plan;
	int fd;			/* member: connection to the root */
	int listen_fd;		/* root */
	unsigned int port;	/* where the root listens (0: not known) */
	struct fabric_conn *conns;	/* root: one per node index */
	char rbuf[SN_FABRIC_MSG_MAX];
	size_t rlen;
	double join_started_ms;		/* root: sn_clock_ms() at listen */
	unsigned int arrived;		/* root: DONEs so far */
	/* The step's verdict, once known (early: a node failed). */
	bool verdict_known;
	struct fabric_outcome verdict;
	struct fabric_strangers strangers;
};

struct fabric_go {
	uint32_t rank_base;
	uint32_t nranks;
	/* NCCL's unique id, made by the root's ncclGetUniqueId */
	unsigned char nccl_id[SN_FABRIC_NCCL_ID_BYTES];
};

/*
 * Joins the step's fabric warmup with this node's LOCAL_STATUS (0 ok,
 * else the node-local check's exit code; LOCAL_TEXT says why).  The
 * root hands out NCCL_ID (ncclGetUniqueId's, made before), or when it is
 * NULL the one PLAN's make_id makes once all joined; NULL on the other
 * nodes.
 * Returns 0 with GO filled, 1 with OUT filled when the warmup is
 * aborted (OUT names the node at fault), -1 with ERR set when this node
 * could not take part (its own fault, e.g. the root unreachable: ERR says
 * so; OUT blames the root where it could not be reached).
 */
int fabric_coord_join(struct fabric_coord *c, const struct fabric_plan *plan,
		      uint32_t local_status, const char *local_text,
		      const unsigned char *nccl_id,
		      struct sn_deadline deadline, struct fabric_go *go,
		      struct fabric_outcome *out, struct sn_error *err);

/*
 * After the collectives: reports this node's STATUS/BUSBW/TEXT and
 * returns the step's verdict in OUT (0), or -1 with ERR set.  A status
 * of SN_WARMUP_PEER_FAILED (this node stopped because another failed) is
 * never blamed.
 */
int fabric_coord_finish(struct fabric_coord *c, uint32_t status,
			double busbw, const char *text,
			struct sn_deadline deadline,
			struct fabric_outcome *out, struct sn_error *err);

/*
 * While NCCL runs, between its polls: has another node failed?  Never
 * blocks.  The root reads the DONEs that arrived and, on the first
 * failure (or a member lost), sends every member the VERDICT at once, so
 * that nodes still waiting in NCCL for the failed one stop now instead of
 * at the deadline; a member reads that VERDICT.  Returns 1 with OUT set
 * when the step has failed, else 0.
 */
int fabric_coord_watch(struct fabric_coord *c, struct fabric_outcome *out);

/*
 * The numeric address of HOST (the step's first node, as named in its
 * node list) that the other nodes reach: IPv4 before IPv6, never a
 * loopback address unless ALLOW_LOOPBACK (a one-node step).
 */
int fabric_resolve(const char *host, bool allow_loopback, char *addr,
		   size_t len, struct sn_error *err);
/* Whether numeric ADDR is a loopback address (a test or one-host run). */
bool fabric_is_loopback(const char *addr);

/* Closes every socket; nothing is left listening. */
void fabric_coord_close(struct fabric_coord *c);

#endif

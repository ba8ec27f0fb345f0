/* SPDX-License-Identifier: MIT */
/*
 * Coordination of a fabric warmup across the nodes of a step, beside
 * NCCL's own bootstrap (messages: src/core/fabric_msg.h).  The helper on
 * node index 0 (the root) listens on the first free port of the step's
 * candidates (src/core/fabric_addr.h); every other node's helper finds it
 * there, says who it is and how its node-local checks went, and gets
 * either GO (its NCCL rank base, the rank count and the NCCL bootstrap
 * port) or ABORT naming the node at fault.  After the collectives each
 * node reports DONE and the root sends one VERDICT naming the node at
 * fault, if any.  Every wait ends at the caller's deadline.
 */
#ifndef WU_FABRIC_COORD_H
#define WU_FABRIC_COORD_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "fabric_addr.h"
#include "fabric_msg.h"
#include "helper_protocol.h"

#define FABRIC_ADDR_MAX 64	/* numeric IPv4/IPv6 text */
#define FABRIC_ATTEMPTS_DEFAULT 8

struct fabric_plan {
	uint32_t jobid;
	uint32_t stepid;
	uint32_t index;		/* this node's index in the step */
	uint32_t nodes;		/* nodes in the step */
	uint32_t gpus;		/* this node's GPUs */
	char node[SN_HOSTNAME_MAX];
	const char *nodelist;	/* the step's, to name nodes; may be NULL */
	char root_addr[FABRIC_ADDR_MAX];	/* numeric, the root's NodeAddr */
	struct sn_port_range ports;
	unsigned int attempts;	/* candidate ports tried */
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
	unsigned int port;	/* where the root listens */
	struct fabric_conn *conns;	/* root: one per node index */
	char rbuf[SN_FABRIC_MSG_MAX];
	size_t rlen;
	int64_t join_started_ms;	/* root: when it began to listen */
	unsigned int arrived;		/* root: DONEs so far */
	/* The step's verdict, once known (early: a node failed). */
	bool verdict_known;
	struct fabric_outcome verdict;
};

struct fabric_go {
	uint32_t rank_base;
	uint32_t nranks;
	unsigned int port;	/* NCCL bootstrap port on the root */
};

/* Milliseconds on the monotonic clock. */
int64_t fabric_now_ms(void);

/*
 * Joins the step's fabric warmup with this node's LOCAL_STATUS (0 ok,
 * else the node-local check's exit code; LOCAL_TEXT says why).
 * Returns 0 with GO filled, 1 with OUT filled when the warmup is
 * aborted (OUT names the node at fault), -1 with ERR set when this node
 * could not take part (its own fault, e.g. the root unreachable: ERR says
 * so; OUT blames the root where it could not be reached).
 */
int fabric_coord_join(struct fabric_coord *c, const struct fabric_plan *plan,
		      uint32_t local_status, const char *local_text,
		      int64_t deadline_ms, struct fabric_go *go,
		      struct fabric_outcome *out, struct sn_error *err);

/*
 * After the collectives: reports this node's STATUS/BUSBW/TEXT and
 * returns the step's verdict in OUT (0), or -1 with ERR set.  A status
 * of SN_WARMUP_PEER_FAILED (this node stopped because another failed) is
 * never blamed.
 */
int fabric_coord_finish(struct fabric_coord *c, uint32_t status,
			double busbw, const char *text, int64_t deadline_ms,
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

/* Closes every socket; nothing is left listening. */
void fabric_coord_close(struct fabric_coord *c);

#endif

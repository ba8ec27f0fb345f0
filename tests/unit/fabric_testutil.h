/* SPDX-License-Identifier: MIT */
/*
 * The fabric coordination over real TCP on loopback, for the unit tests:
 * a private munged (the coordination authenticates with MUNGE), and
 * "nodes" as forked processes running fabric_coord_join/finish from their
 * own 127.0.0.N address, as the helper on each node of a step would.
 * Waits end on events or on the protocol's own deadlines, never sleeps.
 */
#ifndef FABRIC_TESTUTIL_H
#define FABRIC_TESTUTIL_H

#include <stdint.h>

#include "fabric_coord.h"

#define MAX_NODES 8
#define DEADLINE_MS 4000
#define TEST_JOB 77
#define TEST_STEP 3

/* How node I behaves in a scenario. */
struct behaviour {
	uint32_t gpus;
	uint32_t local_status;	/* node-local checks */
	uint32_t done_status;	/* the collectives */
	int absent;		/* never starts */
	int die_before_done;	/* exits after GO, before DONE */
	int waits_for_peers;	/* after GO: "in NCCL" until fabric_coord_watch */
	uint32_t jobid;		/* 0: the step's */
	int gate_fd;		/* > 0: starts once a byte can be read there */
	/* Root: its id from plan.make_id once all joined (1), or a make_id
	 * that fails with exit code 4 (2). */
	int make_id;
};

struct node_result {
	int join_rc;
	struct fabric_go go;
	struct fabric_outcome joined;
	int finish_rc;
	struct fabric_outcome verdict;
	int watched;		/* fabric_coord_watch said the step failed */
	struct fabric_outcome early;
	int64_t waited_ms;
	unsigned int refused;	/* connections it refused as not the step's */
	int made_id;		/* root: calls of plan.make_id */
	char err[256];
};

/* CMocka group setup/teardown: a munged of the test's own. */
int fabric_test_munged_start(void **state);
int fabric_test_munged_stop(void **state);
const char *fabric_test_munge_socket(void);

/* A port range of this test process's own (parallel runs do not meet). */
struct sn_port_range fabric_test_ports(void);
/* 127.0.0.(I + 1): node I's address. */
void fabric_test_node_addr(uint32_t index, char *out, size_t len);
/* The id the root hands out in the tests. */
void fabric_test_nccl_id(unsigned char *id);

/* Runs NODES nodes as behaved; results by node index. */
void fabric_test_run_step(const struct behaviour *b, uint32_t nodes,
			  struct node_result *res, struct sn_port_range ports);

/*
 * A listening socket on the root's address and candidate ATTEMPT of the
 * test step, for squatters and fake roots.
 */
int fabric_test_listen(struct sn_port_range ports, unsigned int attempt);

#endif

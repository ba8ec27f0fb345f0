/* SPDX-License-Identifier: MIT */
/*
 * The fabric coordination between honest nodes over real TCP on
 * loopback (fabric_testutil.h): who joins, who is blamed, what the
 * others hear.  Strangers: test_fabric_hostile.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fabric_testutil.h"

#define run_step fabric_test_run_step
#define test_ports fabric_test_ports

static void all_joined(const struct node_result *r, const unsigned char *id)
{
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(r[i].join_rc, 0);
		/* rank = node index x local GPUs + local index */
		assert_int_equal(r[i].go.rank_base, 2 * i);
		assert_int_equal(r[i].go.nranks, 6);
		/* Every node got the root's NCCL unique id. */
		assert_memory_equal(r[i].go.nccl_id, id,
				    SN_FABRIC_NCCL_ID_BYTES);
		assert_int_equal(r[i].finish_rc, 0);
		assert_int_equal(r[i].verdict.status, 0);
		assert_int_equal(r[i].verdict.blame, SN_FABRIC_NO_BLAME);
		assert_int_equal(r[i].refused, 0);
	}
}

/* Twice: the root's id given to the join, then made by plan.make_id. */
static void test_all_join(void **state)
{
	struct behaviour b[3] = { { .gpus = 2 }, { .gpus = 2 }, { .gpus = 2 } };
	unsigned char id[SN_FABRIC_NCCL_ID_BYTES];
	struct node_result r[3];

	(void)state;
	fabric_test_nccl_id(id);
	run_step(b, 3, r, test_ports());
	all_joined(r, id);
	assert_int_equal(r[0].made_id, 0);
	b[0].make_id = 1;
	run_step(b, 3, r, test_ports());
	all_joined(r, id);
	assert_int_equal(r[0].made_id, 1);
}

static void test_uneven_gpus(void **state)
{
	struct behaviour b[3] = { { .gpus = 1 }, { .gpus = 4 }, { .gpus = 2 } };
	struct node_result r[3];

	(void)state;
	run_step(b, 3, r, test_ports());
	assert_int_equal(r[1].go.rank_base, 1);
	assert_int_equal(r[2].go.rank_base, 5);
	assert_int_equal(r[2].go.nranks, 7);
}

static void test_node_never_joins(void **state)
{
	struct behaviour b[4] = { { .gpus = 1 }, { .gpus = 1 },
				  { .gpus = 1, .absent = 1 }, { .gpus = 1 } };
	struct node_result r[4];
	uint32_t i;

	(void)state;
	run_step(b, 4, r, test_ports());
	for (i = 0; i < 4; i++) {
		if (i == 2)
			continue;
		assert_int_equal(r[i].join_rc, 1);
		assert_int_equal(r[i].joined.blame, 2);
		assert_non_null(strstr(r[i].joined.text, "never joined within"));
	}
}

static void test_member_local_failure(void **state)
{
	struct behaviour b[3] = { { .gpus = 2 }, { .gpus = 2, .local_status = 3 },
				  { .gpus = 2 } };
	struct node_result r[3];
	uint32_t i;

	(void)state;
	run_step(b, 3, r, test_ports());
	for (i = 0; i < 3; i++) {
		assert_int_equal(r[i].join_rc, 1);
		assert_int_equal(r[i].joined.blame, 1);
		assert_int_equal(r[i].joined.status, i == 0 ? 3 : 1);
		assert_non_null(strstr(r[i].joined.text,
				       "failed: duplicate PCI bus ID"));
	}
}

static void test_root_local_failure(void **state)
{
	struct behaviour b[2] = { { .gpus = 2, .local_status = 3 },
				  { .gpus = 2 } };
	struct node_result r[2];

	(void)state;
	run_step(b, 2, r, test_ports());
	assert_int_equal(r[1].join_rc, 1);
	assert_int_equal(r[1].joined.blame, 0);
	assert_non_null(strstr(r[1].joined.text, "failed: duplicate"));
}

static void test_collective_failure_blamed(void **state)
{
	struct behaviour b[3] = { { .gpus = 1 }, { .gpus = 1 },
				  { .gpus = 1, .done_status = 5 } };
	struct node_result r[3];
	uint32_t i;

	(void)state;
	run_step(b, 3, r, test_ports());
	for (i = 0; i < 3; i++) {
		assert_int_equal(r[i].finish_rc, 0);
		assert_int_equal(r[i].verdict.status, 5);
		assert_int_equal(r[i].verdict.blame, 2);
		assert_non_null(strstr(r[i].verdict.text, "failed: ncclAllReduce"));
	}
}

static void test_member_dies_before_done(void **state)
{
	struct behaviour b[3] = { { .gpus = 1 }, { .gpus = 1, .die_before_done = 1 },
				  { .gpus = 1 } };
	struct node_result r[3];

	(void)state;
	run_step(b, 3, r, test_ports());
	assert_int_equal(r[0].verdict.blame, 1);
	assert_non_null(strstr(r[0].verdict.text, "lost its connection to n1"));
	assert_int_equal(r[2].verdict.blame, 1);
}

/*
 * A node fails while the others wait in NCCL for it: they learn it from
 * fabric_coord_watch at once (the root from the DONE, the members from
 * the root's early VERDICT), not at their deadline, and the final verdict
 * still names the failed node, not the ones that stopped because of it.
 */
static void test_early_verdict(void **state)
{
	struct behaviour b[4] = { { .gpus = 1, .waits_for_peers = 1 },
				  { .gpus = 1, .waits_for_peers = 1 },
				  { .gpus = 1, .done_status = 5 },
				  { .gpus = 1, .waits_for_peers = 1 } };
	struct node_result r[4];
	uint32_t i;

	(void)state;
	run_step(b, 4, r, test_ports());
	for (i = 0; i < 4; i++) {
		assert_int_equal(r[i].join_rc, 0);
		assert_int_equal(r[i].finish_rc, 0);
		assert_int_equal(r[i].verdict.status, 5);
		assert_int_equal(r[i].verdict.blame, 2);
		assert_non_null(strstr(r[i].verdict.text, "failed: ncclAllReduce"));
		if (i == 2)
			continue;
		assert_int_equal(r[i].watched, 1);
		assert_int_equal(r[i].early.blame, 2);
		assert_true(r[i].waited_ms < DEADLINE_MS / 2);
	}
}

/*
 * The root's NCCL id (ncclGetUniqueId opens NCCL's bootstrap listener) is
 * made only once every node has joined (test_all_join): never while one
 * is missing; a failure to make it is the root's, told to every node.
 */
static void test_id_made_once_all_joined(void **state)
{
	struct behaviour b[3] = { { .gpus = 1, .make_id = 1 }, { .gpus = 1 },
				  { .gpus = 1, .absent = 1 } };
	struct node_result r[3];
	uint32_t i;

	(void)state;
	run_step(b, 3, r, test_ports());
	assert_int_equal(r[0].join_rc, 1);
	assert_int_equal(r[0].made_id, 0);
	b[0].make_id = 2;
	b[2].absent = 0;
	run_step(b, 3, r, test_ports());
	assert_int_equal(r[0].made_id, 1);
	for (i = 0; i < 3; i++) {
		assert_int_equal(r[i].join_rc, 1);
		assert_int_equal(r[i].joined.blame, 0);
		assert_non_null(strstr(r[i].joined.text,
				       "failed: ncclGetUniqueId: no bootstrap"));
	}
	assert_int_equal(r[0].joined.status, 4);
}

/*
 * Every node timed out (NCCL's bootstrap stalled by a stranger, the
 * network, or one node's hang: they look alike): no node is blamed, each
 * keeps its own timeout; the root's stall makes a silent member no
 * culprit either.  A real error still is one.
 */
static void test_timeouts_blame_no_node(void **state)
{
	struct behaviour b[3] = { { .gpus = 1, .done_status = SN_WARMUP_TIMEOUT },
				  { .gpus = 1, .done_status = SN_WARMUP_TIMEOUT },
				  { .gpus = 1, .done_status = SN_WARMUP_TIMEOUT } };
	struct node_result r[3];
	uint32_t i;

	(void)state;
	run_step(b, 3, r, test_ports());
	for (i = 0; i < 3; i++) {
		assert_int_equal(r[i].finish_rc, 0);
		assert_int_equal(r[i].verdict.status, SN_WARMUP_TIMEOUT);
		assert_int_equal(r[i].verdict.blame, SN_FABRIC_NO_BLAME);
	}
	/* Only the root timed out: still no one shown at fault. */
	b[1].done_status = b[2].done_status = 0;
	run_step(b, 3, r, test_ports());
	for (i = 0; i < 3; i++)
		assert_int_equal(r[i].verdict.blame, SN_FABRIC_NO_BLAME);
	/* A timeout beside a real error: the error's node. */
	b[2].done_status = 5;
	run_step(b, 3, r, test_ports());
	for (i = 0; i < 3; i++)
		assert_int_equal(r[i].verdict.blame, 2);
}

/* A listener of another program on the first candidate: it is skipped. */
static void test_taken_port(void **state)
{
	struct sn_port_range ports = test_ports();
	struct behaviour b[3] = { { .gpus = 1 }, { .gpus = 1 }, { .gpus = 1 } };
	struct node_result r[3];
	pid_t squatter;
	int fd, sv[2];
	char ready;

	(void)state;
	fd = fabric_test_listen(ports, 0);
	assert_true(fd >= 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	squatter = fork();
	if (squatter == 0) {
		/* Answers every connection with something that is not ours. */
		(void)!write(sv[1], "r", 1);
		for (;;) {
			int c = accept(fd, NULL, NULL);

			if (c >= 0) {
				(void)!write(c, "HTTP/1.0 400 Bad Request\r\n\r\n", 28);
				close(c);
			}
		}
	}
	assert_int_equal(read(sv[0], &ready, 1), 1);
	run_step(b, 3, r, ports);
	kill(squatter, SIGKILL);
	waitpid(squatter, NULL, 0);
	close(fd);
	assert_int_equal(r[0].join_rc, 0);
	assert_int_equal(r[1].join_rc, 0);
	assert_int_equal(r[2].join_rc, 0);
	assert_int_equal(r[2].verdict.status, 0);
	/* The members logged the squatter, once each, and blamed nobody. */
	assert_int_equal(r[1].refused, 1);
	assert_int_equal(r[2].verdict.blame, SN_FABRIC_NO_BLAME);
}

/* A member of another job reaching our root is refused, not admitted. */
static void test_foreign_step_refused(void **state)
{
	struct behaviour b[2] = { { .gpus = 1 }, { .gpus = 1, .jobid = 78 } };
	struct node_result r[2];

	(void)state;
	run_step(b, 2, r, test_ports());
	assert_int_equal(r[0].join_rc, 1);
	assert_int_equal(r[0].joined.blame, 1);	/* ours never came */
	assert_int_equal(r[1].join_rc, -1);
	assert_non_null(strstr(r[1].err, "could not reach the fabric root"));
}

static void test_bad_plan(void **state)
{
	struct fabric_plan plan = { .nodes = 2, .index = 2, .attempts = 1 };
	struct fabric_coord c;
	struct fabric_go go;
	struct fabric_outcome out;
	struct sn_error err = { "" };

	(void)state;
	assert_int_equal(fabric_coord_join(&c, &plan, 0, "", NULL,
					   sn_deadline_in(0), &go, &out, &err),
			 -1);
	assert_non_null(strstr(err.msg, "node index 2 of 2"));
	fabric_coord_close(&c);
}

static void test_resolve(void **state)
{
	char addr[FABRIC_ADDR_MAX];
	struct sn_error err = { "" };

	(void)state;
	assert_int_equal(fabric_resolve("10.250.0.11", false, addr,
					sizeof(addr), &err), 0);
	assert_string_equal(addr, "10.250.0.11");
	assert_int_equal(fabric_resolve("fd00::11", false, addr, sizeof(addr),
					&err), 0);
	assert_string_equal(addr, "fd00::11");
	/* The Debian trap: a node name that maps to 127.0.1.1. */
	assert_int_equal(fabric_resolve("127.0.1.1", false, addr, sizeof(addr),
					&err), -1);
	assert_non_null(strstr(err.msg, "loopback"));
	assert_int_equal(fabric_resolve("127.0.0.1", true, addr, sizeof(addr),
					&err), 0);
	assert_string_equal(addr, "127.0.0.1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_join),
		cmocka_unit_test(test_uneven_gpus),
		cmocka_unit_test(test_node_never_joins),
		cmocka_unit_test(test_member_local_failure),
		cmocka_unit_test(test_root_local_failure),
		cmocka_unit_test(test_collective_failure_blamed),
		cmocka_unit_test(test_member_dies_before_done),
		cmocka_unit_test(test_early_verdict),
		cmocka_unit_test(test_id_made_once_all_joined),
		cmocka_unit_test(test_timeouts_blame_no_node),
		cmocka_unit_test(test_taken_port),
		cmocka_unit_test(test_foreign_step_refused),
		cmocka_unit_test(test_bad_plan),
		cmocka_unit_test(test_resolve),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, fabric_test_munged_start,
				      fabric_test_munged_stop);
}

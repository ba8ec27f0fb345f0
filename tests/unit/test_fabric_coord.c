/* SPDX-License-Identifier: MIT */
/*
 * The fabric coordination over real TCP on loopback: each "node" is a
 * forked process running fabric_coord_join/finish, as the helper on each
 * node of a step would; the parent checks what every node concluded.
 * Waits end on events or on the protocol's own deadlines, never sleeps.
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

#include "fabric_coord.h"

#define NODELIST "n[1-4]"
#define MAX_NODES 8
#define DEADLINE_MS 4000

/* How node I behaves in a scenario. */
struct behaviour {
	uint32_t gpus;
	uint32_t local_status;	/* node-local checks */
	uint32_t done_status;	/* the collectives */
	int absent;		/* never starts */
	int die_before_done;	/* exits after GO, before DONE */
	int waits_for_peers;	/* after GO: "in NCCL" until fabric_coord_watch */
	uint32_t jobid;		/* 0: the step's */
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
	char err[256];
};

static struct sn_port_range test_ports(void)
{
	/* A range of its own per test process: parallel runs do not meet;
	 * below the ephemeral ports (32768-60999) that clients' sockets take. */
	unsigned int lo = 10000 + (unsigned int)(getpid() % 1000) * 10;

	return (struct sn_port_range){ lo, lo + 9 };
}

static void node_main(const struct behaviour *b, uint32_t index,
		      uint32_t nodes, struct sn_port_range ports, int out)
{
	struct fabric_plan plan = { .jobid = b->jobid ? b->jobid : 77,
				    .stepid = 3, .index = index,
				    .nodes = nodes, .gpus = b->gpus,
				    .nodelist = NODELIST, .ports = ports,
				    .attempts = 4 };
	struct fabric_coord c;
	struct node_result r;
	struct sn_error err = { "" };
	int64_t deadline = fabric_now_ms() + DEADLINE_MS;

	memset(&r, 0, sizeof(r));
	snprintf(plan.node, sizeof(plan.node), "n%u", index + 1);
	snprintf(plan.root_addr, sizeof(plan.root_addr), "127.0.0.1");
	r.join_rc = fabric_coord_join(&c, &plan, b->local_status,
				      b->local_status ? "duplicate PCI bus ID" : "",
				      deadline, &r.go, &r.joined, &err);
	if (r.join_rc == 0) {
		uint32_t status = b->done_status;

		if (b->die_before_done)
			_exit(0);
		if (b->waits_for_peers) {
			/* As comm.c's NCCL wait: poll, look at the others. */
			int64_t t0 = fabric_now_ms();

			while (!r.watched && fabric_now_ms() < deadline) {
				r.watched = fabric_coord_watch(&c, &r.early);
				poll(NULL, 0, 1);
			}
			r.waited_ms = fabric_now_ms() - t0;
			status = r.watched ? SN_WARMUP_PEER_FAILED : SN_WARMUP_TIMEOUT;
		}
		r.finish_rc = fabric_coord_finish(&c, status, 12.5,
						  b->done_status ? "ncclAllReduce: unhandled system error" : "",
						  deadline + DEADLINE_MS,
						  &r.verdict, &err);
	}
	snprintf(r.err, sizeof(r.err), "%s", err.msg);
	fabric_coord_close(&c);
	if (write(out, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(2);
	_exit(0);
}

/* Runs NODES nodes as behaved; results by node index. */
static void run_step(const struct behaviour *b, uint32_t nodes,
		     struct node_result *res, struct sn_port_range ports)
{
	int fds[MAX_NODES][2];
	pid_t pid[MAX_NODES];
	uint32_t i;

	memset(res, 0, sizeof(*res) * nodes);
	for (i = 0; i < nodes; i++) {
		res[i].join_rc = -99;
		if (b[i].absent) {
			pid[i] = -1;
			continue;
		}
		assert_int_equal(pipe(fds[i]), 0);
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			close(fds[i][0]);
			node_main(&b[i], i, nodes, ports, fds[i][1]);
		}
		close(fds[i][1]);
	}
	for (i = 0; i < nodes; i++) {
		int st;

		if (pid[i] < 0)
			continue;
		if (read(fds[i][0], &res[i], sizeof(res[i])) != (ssize_t)sizeof(res[i]))
			res[i].join_rc = -98;	/* died (die_before_done) */
		close(fds[i][0]);
		assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
	}
}

static void test_all_join(void **state)
{
	struct behaviour b[3] = { { .gpus = 2 }, { .gpus = 2 }, { .gpus = 2 } };
	struct node_result r[3];
	uint32_t i;

	(void)state;
	run_step(b, 3, r, test_ports());
	for (i = 0; i < 3; i++) {
		assert_int_equal(r[i].join_rc, 0);
		/* rank = node index x local GPUs + local index */
		assert_int_equal(r[i].go.rank_base, 2 * i);
		assert_int_equal(r[i].go.nranks, 6);
		assert_int_equal(r[i].go.port, r[0].go.port);
		assert_int_equal(r[i].finish_rc, 0);
		assert_int_equal(r[i].verdict.status, 0);
		assert_int_equal(r[i].verdict.blame, SN_FABRIC_NO_BLAME);
	}
	assert_true(r[0].go.port >= test_ports().lo &&
		    r[0].go.port <= test_ports().hi);
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

/* A listener of another program on the first candidate: it is skipped. */
static void test_taken_port(void **state)
{
	struct sn_port_range ports = test_ports();
	unsigned int first = sn_fabric_port(&ports, 77, 3, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)first) };
	struct behaviour b[3] = { { .gpus = 1 }, { .gpus = 1 }, { .gpus = 1 } };
	struct node_result r[3];
	pid_t squatter;
	int fd, sv[2], one = 1;
	char ready;

	(void)state;
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 16), 0);
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
	assert_int_equal(r[1].join_rc, 0);
	assert_int_equal(r[2].join_rc, 0);
	assert_int_equal(r[2].verdict.status, 0);
	assert_int_not_equal(r[0].go.port, first);
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
	assert_int_equal(fabric_coord_join(&c, &plan, 0, "", fabric_now_ms(),
					   &go, &out, &err), -1);
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
		cmocka_unit_test(test_taken_port),
		cmocka_unit_test(test_foreign_step_refused),
		cmocka_unit_test(test_bad_plan),
		cmocka_unit_test(test_resolve),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * Strangers against the fabric coordination (issue 20): processes that
 * are not the step's join as a node, hold the root's port with idle
 * connections, pose as the root, relay, or squat every port.  Each time
 * the honest step passes (or, with every port squatted, fails saying so,
 * as nobody's GPU or NCCL fault), no innocent node is blamed, and the
 * stranger hears nothing from the step.  Over real TCP and a real munged
 * (fabric_testutil.h); another user is uid 65534 (nobody).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <munge.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fabric_io.h"
#include "fabric_testutil.h"

#define NOBODY 65534
#define FLOOD 200

/* A connection to the test step's candidate ATTEMPT, once it listens. */
static int connect_port(struct sn_port_range ports, unsigned int attempt)
{
	unsigned int port = sn_fabric_port(&ports, TEST_JOB, TEST_STEP, attempt);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	struct sn_deadline until = sn_deadline_in(DEADLINE_MS);

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	while (!sn_deadline_expired(until)) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		close(fd);
		poll(NULL, 0, 2);	/* the root is not listening yet */
	}
	return -1;
}

/* Whether FD gets any byte before it is closed (or the deadline). */
static int hears_anything(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char c;

	return poll(&pfd, 1, DEADLINE_MS) == 1 && read(fd, &c, 1) == 1;
}

static void send_line(int fd, const char *line)
{
	(void)!write(fd, line, strlen(line));
}

/* Opens the gate of the gated nodes: one byte each. */
static void open_gate(int gate, int n)
{
	while (n-- > 0)
		(void)!write(gate, "g", 1);
}

static void become_nobody(void)
{
	if (setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
		_exit(90);
}

/* A sealed HELLO for index 2 made by the stranger's own uid. */
static int sealed_hello(int fd, bool restricted)
{
	struct fabric_auth auth;
	struct fabric_plan plan = { .jobid = TEST_JOB, .stepid = TEST_STEP };
	struct sn_fabric_msg m = { .type = SN_FMSG_HELLO, .index = 2,
				   .nodes = 3, .gpus = 1, .node = "n3" };
	char local[SN_ENDPOINT_MAX], peer[SN_ENDPOINT_MAX];
	char payload[SN_FABRIC_PAYLOAD_MAX], line[SN_FABRIC_MSG_MAX];
	struct sn_error e;
	char *cred = NULL;
	munge_ctx_t ctx;

	int rc = -1;

	if (restricted) {
		if (fabric_auth_open(&auth, fabric_test_munge_socket(), -1, &e) < 0)
			return -1;
		plan.auth = &auth;
		rc = fabric_send_sealed(fd, &m, &plan, &e);
		fabric_auth_close(&auth);
		return rc;
	}
	/* Without a uid restriction: anyone could decode it. */
	m.jobid = TEST_JOB;
	m.stepid = TEST_STEP;
	ctx = munge_ctx_create();
	munge_ctx_set(ctx, MUNGE_OPT_SOCKET, fabric_test_munge_socket());
	if (fabric_endpoints(fd, local, peer, sizeof(local)) == 0 &&
	    sn_fabric_seal_text(&m, local, peer, payload, sizeof(payload), &e) == 0 &&
	    munge_encode(&cred, ctx, payload, (int)strlen(payload)) == EMUNGE_SUCCESS &&
	    sn_fabric_auth_line(cred, line, sizeof(line), &e) == 0) {
		send_line(fd, line);
		rc = 0;
	}
	free(cred);
	munge_ctx_destroy(ctx);
	return rc;
}

enum stranger_kind { PLAIN_HELLO, NOBODY_HELLO, IDLE_FLOOD };

/*
 * The stranger: joins before node 2 (gated on it) as KIND; exits 0 if it
 * heard nothing from the root, 1 if the root answered it.
 */
static void stranger_main(enum stranger_kind kind, struct sn_port_range ports,
			  int gate)
{
	int fds[FLOOD], n = 0, heard = 0, i;

	if (kind == NOBODY_HELLO)
		become_nobody();
	if (kind == IDLE_FLOOD) {
		for (n = 0; n < FLOOD; n++) {
			fds[n] = connect_port(ports, 0);
			if (fds[n] < 0)
				_exit(91);
		}
		open_gate(gate, 2);
		for (i = 0; i < n; i++)
			heard |= hears_anything(fds[i]);
		_exit(heard);
	}
	fds[n] = connect_port(ports, 0);
	if (fds[n] < 0)
		_exit(91);
	if (kind == PLAIN_HELLO) {
		/* The measured attack: index 2 and a wrapping GPU count. */
		send_line(fds[n++], "SNFB2 HELLO job=77 step=3 index=2 nodes=3 gpus=4294967294 status=0 node=n3 text=\n");
		fds[n] = connect_port(ports, 0);
		send_line(fds[n++], "SNFB2 AUTH MUNGE:AwQDAAD3Uuch0d5pgnFjcgR5NzIi:\n");
		fds[n] = connect_port(ports, 0);
		send_line(fds[n++], "SNFB1 HELLO job=77 step=3 index=2 nodes=3 gpus=1 status=0 node=n3 text=\n");
	} else {
		if (sealed_hello(fds[n++], true) < 0)
			_exit(92);
		fds[n] = connect_port(ports, 0);
		if (sealed_hello(fds[n++], false) < 0)
			_exit(93);
	}
	for (i = 0; i < n; i++)
		heard |= hears_anything(fds[i]);
	open_gate(gate, 1);
	_exit(heard);
}

/* Nodes 0 and 1 honest; node 2 (or 1 and 2) waits for the stranger. */
static void step_beside_stranger(enum stranger_kind kind)
{
	struct sn_port_range ports = fabric_test_ports();
	struct behaviour b[3] = { { .gpus = 2 }, { .gpus = 2 }, { .gpus = 2 } };
	struct node_result r[3];
	int gate[2], st;
	pid_t stranger;
	uint32_t i;

	assert_int_equal(pipe(gate), 0);
	b[2].gate_fd = gate[0];
	if (kind == IDLE_FLOOD)
		b[1].gate_fd = gate[0];
	stranger = fork();
	if (stranger == 0)
		stranger_main(kind, ports, gate[1]);
	fabric_test_run_step(b, 3, r, ports);
	assert_int_equal(waitpid(stranger, &st, 0), stranger);
	close(gate[0]);
	close(gate[1]);
	/* The stranger heard nothing: not even a REFUSE. */
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(r[i].join_rc, 0);
		assert_int_equal(r[i].go.rank_base, 2 * i);
		assert_int_equal(r[i].go.nranks, 6);
		assert_int_equal(r[i].verdict.status, 0);
		assert_int_equal(r[i].verdict.blame, SN_FABRIC_NO_BLAME);
	}
	if (kind != IDLE_FLOOD)
		assert_true(r[0].refused >= 2);
}

static void test_unsealed_hello_claiming_a_node(void **state)
{
	(void)state;
	step_beside_stranger(PLAIN_HELLO);
}

static void test_hello_sealed_by_another_user(void **state)
{
	(void)state;
	if (getuid() != 0)
		skip();		/* another uid needs root; CI runs as root */
	step_beside_stranger(NOBODY_HELLO);
}

static void test_idle_connections(void **state)
{
	(void)state;
	step_beside_stranger(IDLE_FLOOD);
}

enum fake_root_kind { UNSEALED_ROOT, NOBODY_ROOT, RELAY, GARBAGE, SILENT };

/*
 * What listens on candidate ATTEMPT before the step: a fake root that
 * tells members GO and a framing VERDICT (unsealed, or sealed by
 * nobody), a relay to the real root on the next candidate, garbage, or
 * silence (it takes each connection and never answers).
 */
static void fake_root_main(enum fake_root_kind kind, int lfd,
			   struct sn_port_range ports, unsigned int attempt,
			   int ready)
{
	struct fabric_auth auth;
	struct fabric_plan plan = { .jobid = TEST_JOB, .stepid = TEST_STEP };
	struct sn_error e;
	char id[2 * SN_FABRIC_NCCL_ID_BYTES + 1];

	memset(id, '0', sizeof(id) - 1);
	id[sizeof(id) - 1] = '\0';
	if (kind == NOBODY_ROOT) {
		become_nobody();
		if (fabric_auth_open(&auth, fabric_test_munge_socket(), -1, &e) < 0)
			_exit(92);
		plan.auth = &auth;
	}
	(void)!write(ready, "r", 1);
	for (;;) {
		int c = accept(lfd, NULL, NULL), up;
		char buf[SN_FABRIC_MSG_MAX], go[600];
		struct sn_fabric_msg welcome = { .type = SN_FMSG_WELCOME };
		ssize_t n;

		if (c < 0)
			continue;
		snprintf(go, sizeof(go),
			 "SNFB2 GO job=77 step=3 rank_base=0 nranks=1 id=%s\n"
			 "SNFB2 VERDICT job=77 step=3 status=256 blame=2 text=framed\n",
			 id);
		switch (kind) {
		case UNSEALED_ROOT:
			send_line(c, "SNFB2 WELCOME job=77 step=3\n");
			send_line(c, go);
			break;
		case NOBODY_ROOT:
			fabric_send_sealed(c, &welcome, &plan, &e);
			send_line(c, go);
			break;
		case GARBAGE:
			send_line(c, "SSH-2.0-OpenSSH_9.2\r\n");
			break;
		case SILENT:
			/* Holds it until the member gives up. */
			(void)!read(c, buf, sizeof(buf));
			while (read(c, buf, sizeof(buf)) > 0)
				;
			break;
		case RELAY:
			/* Forwards both ways until either side closes. */
			up = connect_port(ports, attempt + 1);
			for (;;) {
				struct pollfd p[2] = { { .fd = c, .events = POLLIN },
						       { .fd = up, .events = POLLIN } };

				if (up < 0 || poll(p, 2, -1) <= 0)
					break;
				n = read(p[0].revents ? c : up, buf, sizeof(buf));
				if (n <= 0)
					break;
				(void)!write(p[0].revents ? up : c, buf, (size_t)n);
			}
			if (up >= 0)
				close(up);
			break;
		}
		/* A member that hears nothing more moves on. */
		close(c);
	}
}

/* Squats candidates 0..N-1 with KIND; the step runs beside them. */
static void step_beside_fake_roots(enum fake_root_kind kind, unsigned int n,
				   struct node_result *r)
{
	struct sn_port_range ports = fabric_test_ports();
	struct behaviour b[3] = { { .gpus = 1 }, { .gpus = 1 }, { .gpus = 1 } };
	pid_t pid[4];
	unsigned int k;
	int sv[2];
	char ready;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	for (k = 0; k < n; k++) {
		int lfd = fabric_test_listen(ports, k);

		assert_true(lfd >= 0);
		pid[k] = fork();
		if (pid[k] == 0)
			fake_root_main(kind, lfd, ports, k, sv[1]);
		close(lfd);
		assert_int_equal(read(sv[0], &ready, 1), 1);
	}
	fabric_test_run_step(b, 3, r, ports);
	for (k = 0; k < n; k++) {
		kill(pid[k], SIGKILL);
		waitpid(pid[k], NULL, 0);
	}
	close(sv[0]);
	close(sv[1]);
}

static void assert_honest_pass(const struct node_result *r)
{
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(r[i].join_rc, 0);
		assert_int_equal(r[i].go.nranks, 3);
		assert_int_equal(r[i].go.rank_base, i);
		assert_int_equal(r[i].finish_rc, 0);
		assert_int_equal(r[i].verdict.status, 0);
		assert_int_equal(r[i].verdict.blame, SN_FABRIC_NO_BLAME);
	}
}

static void test_unsealed_fake_root(void **state)
{
	struct node_result r[3];

	(void)state;
	step_beside_fake_roots(UNSEALED_ROOT, 1, r);
	assert_honest_pass(r);
	assert_int_equal(r[1].refused, 1);
	assert_int_equal(r[2].refused, 1);
}

static void test_fake_root_of_another_user(void **state)
{
	struct node_result r[3];

	(void)state;
	if (getuid() != 0)
		skip();
	step_beside_fake_roots(NOBODY_ROOT, 1, r);
	assert_honest_pass(r);
	assert_int_equal(r[1].refused, 1);
}

/* A relay passes on sealed lines unchanged: their endpoints give it away. */
static void test_relay_refused(void **state)
{
	struct node_result r[3];

	(void)state;
	step_beside_fake_roots(RELAY, 1, r);
	assert_honest_pass(r);
	/* The root refused each member's relayed HELLO. */
	assert_int_equal(r[0].refused, 2);
}

static void test_every_port_squatted(void **state)
{
	struct node_result r[3];
	uint32_t i;

	(void)state;
	step_beside_fake_roots(GARBAGE, 4, r);
	assert_int_equal(r[0].join_rc, -1);
	assert_int_equal(r[0].joined.status, SN_WARMUP_FABRIC_SETUP);
	assert_non_null(strstr(r[0].err, "are all taken by other processes"));
	for (i = 1; i < 3; i++) {
		assert_int_equal(r[i].join_rc, -1);
		assert_int_equal(r[i].joined.status, SN_WARMUP_FABRIC_SETUP);
		assert_int_equal(r[i].joined.blame, 0);
		assert_non_null(strstr(r[i].joined.text,
				       "are all taken by other processes"));
		/* Found out at once, not at the root's join deadline. */
		assert_int_equal(r[i].refused, 4);
	}
}

/*
 * Silent squatters on 3 of 4 candidates: each costs a member its first
 * round's short wait once (3 x 0.5 s, not 3 x 2 s, which outlasted the
 * root's join deadline of 3.2 s here), and the step passes.
 */
static void test_silent_squatters(void **state)
{
	struct node_result r[3];

	(void)state;
	step_beside_fake_roots(SILENT, 3, r);
	assert_honest_pass(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unsealed_hello_claiming_a_node),
		cmocka_unit_test(test_hello_sealed_by_another_user),
		cmocka_unit_test(test_idle_connections),
		cmocka_unit_test(test_unsealed_fake_root),
		cmocka_unit_test(test_fake_root_of_another_user),
		cmocka_unit_test(test_relay_refused),
		cmocka_unit_test(test_every_port_squatted),
		cmocka_unit_test(test_silent_squatters),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, fabric_test_munged_start,
				      fabric_test_munged_stop);
}

/* SPDX-License-Identifier: MIT */
/* The fabric coordination's test bench (fabric_testutil.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fabric_testutil.h"

#define NODELIST "127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4," \
		 "127.0.0.5,127.0.0.6,127.0.0.7,127.0.0.8"

/* The test process's munged (a test bench, not product code). */
static char munge_dir[64];
static char munge_socket[128];
static pid_t munged_pid = -1;

const char *fabric_test_munge_socket(void)
{
	return munge_socket;
}

static int run_wait(char *const argv[])
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Whether munged answers: a credential made and decoded (the event). */
static int munge_answers(void)
{
	struct fabric_auth a;
	struct sn_error e;
	char cred[SN_FABRIC_CRED_MAX], out[64];
	size_t len = sizeof(out);
	int ok;

	if (fabric_auth_open(&a, munge_socket, -1, &e) < 0)
		return 0;
	ok = fabric_auth_seal(&a, "ping", 4, cred, sizeof(cred), &e) == 0 &&
	     fabric_auth_unseal(&a, cred, out, &len, &e) == FABRIC_UNSEAL_OK;
	fabric_auth_close(&a);
	return ok;
}

int fabric_test_munged_start(void **state)
{
	char key[128], log[128], pidf[128], seed[128];
	char *keygen[] = { "mungekey", "-c", "-k", key, NULL };
	char *daemon[] = { "munged", "-F", "-S", munge_socket, "--key-file", key,
			   "--log-file", log, "--pid-file", pidf,
			   "--seed-file", seed, "--force", NULL };
	int i;

	(void)state;
	snprintf(munge_dir, sizeof(munge_dir), "/tmp/sn-fabric-munge.XXXXXX");
	if (!mkdtemp(munge_dir))
		return -1;
	/* Other uids (the stranger tests) reach the socket through it. */
	chmod(munge_dir, 0755);
	snprintf(munge_socket, sizeof(munge_socket), "%s/munge.socket", munge_dir);
	snprintf(key, sizeof(key), "%s/munge.key", munge_dir);
	snprintf(log, sizeof(log), "%s/munged.log", munge_dir);
	snprintf(pidf, sizeof(pidf), "%s/munged.pid", munge_dir);
	snprintf(seed, sizeof(seed), "%s/munged.seed", munge_dir);
	if (run_wait(keygen) != 0) {
		fprintf(stderr, "fabric tests: mungekey failed (apt-get install munge)\n");
		return -1;
	}
	munged_pid = fork();
	if (munged_pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		/* Its log is LOG; -F keeps it our child, to stop and reap. */
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		setsid();
		execvp(daemon[0], daemon);
		_exit(127);
	}
	if (munged_pid < 0)
		return -1;
	/* Ready when a credential round-trips; munged exiting ends it. */
	for (i = 0; i < 500; i++) {
		if (munge_answers())
			return 0;
		if (waitpid(munged_pid, NULL, WNOHANG) == munged_pid) {
			fprintf(stderr, "fabric tests: munged exited (see %s)\n", log);
			munged_pid = -1;
			return -1;
		}
		poll(NULL, 0, 10);
	}
	fprintf(stderr, "fabric tests: munged did not answer on %s\n", munge_socket);
	return -1;
}

int fabric_test_munged_stop(void **state)
{
	char *rm[] = { "rm", "-rf", munge_dir, NULL };

	(void)state;
	if (munged_pid > 0) {
		kill(munged_pid, SIGTERM);
		waitpid(munged_pid, NULL, 0);
		munged_pid = -1;
	}
	if (munge_dir[0])
		run_wait(rm);
	return 0;
}

struct sn_port_range fabric_test_ports(void)
{
	/* Below the ephemeral ports (32768-60999) that clients' sockets take. */
	unsigned int lo = 10000 + (unsigned int)(getpid() % 1000) * 10;

	return (struct sn_port_range){ lo, lo + 9 };
}

void fabric_test_node_addr(uint32_t index, char *out, size_t len)
{
	snprintf(out, len, "127.0.0.%u", index + 1);
}

void fabric_test_nccl_id(unsigned char *id)
{
	for (int i = 0; i < SN_FABRIC_NCCL_ID_BYTES; i++)
		id[i] = (unsigned char)(i * 7 + 3);
}

static void wait_gate(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char c;

	if (fd > 0 && poll(&pfd, 1, DEADLINE_MS) == 1)
		(void)!read(fd, &c, 1);
}

/* plan.make_id of the tests: CTX is the node's result; FAIL fails. */
static int test_make_id(struct node_result *r, unsigned char *id, char *text,
			size_t len, bool fail)
{
	r->made_id++;
	if (fail) {
		snprintf(text, len, "ncclGetUniqueId: no bootstrap interface");
		return 4;
	}
	fabric_test_nccl_id(id);
	return 0;
}

static int make_id_ok(void *ctx, unsigned char *id, char *text, size_t len)
{
	return test_make_id(ctx, id, text, len, false);
}

static int make_id_fail(void *ctx, unsigned char *id, char *text, size_t len)
{
	return test_make_id(ctx, id, text, len, true);
}

static void node_main(const struct behaviour *b, uint32_t index,
		      uint32_t nodes, struct sn_port_range ports, int out)
{
	struct fabric_plan plan = { .jobid = b->jobid ? b->jobid : TEST_JOB,
				    .stepid = TEST_STEP, .index = index,
				    .nodes = nodes, .gpus = b->gpus,
				    .nodelist = NODELIST, .ports = ports,
				    .attempts = 4, .check_peer_addr = true };
	unsigned char id[SN_FABRIC_NCCL_ID_BYTES];
	struct fabric_auth auth;
	struct fabric_coord c;
	struct node_result r;
	struct sn_error err = { "" };
	struct sn_deadline deadline;

	wait_gate(b->gate_fd);
	deadline = sn_deadline_in(DEADLINE_MS);
	memset(&r, 0, sizeof(r));
	memset(&c, 0, sizeof(c));
	fabric_test_nccl_id(id);
	snprintf(plan.node, sizeof(plan.node), "n%u", index + 1);
	snprintf(plan.root_addr, sizeof(plan.root_addr), "127.0.0.1");
	fabric_test_node_addr(index, plan.self_addr, sizeof(plan.self_addr));
	if (fabric_auth_open(&auth, munge_socket, -1, &err) < 0)
		_exit(3);
	plan.auth = &auth;
	if (b->make_id) {
		plan.make_id = b->make_id == 1 ? make_id_ok : make_id_fail;
		plan.make_id_ctx = &r;
	}
	r.join_rc = fabric_coord_join(&c, &plan, b->local_status,
				      b->local_status ? "duplicate PCI bus ID" : "",
				      index == 0 && !b->local_status &&
				      !b->make_id ? id : NULL,
				      deadline, &r.go, &r.joined, &err);
	if (r.join_rc == 0) {
		uint32_t status = b->done_status;

		if (b->die_before_done)
			_exit(0);
		if (b->waits_for_peers) {
			/* As comm.c's NCCL wait: poll, look at the others. */
			double t0 = sn_clock_ms();

			while (!r.watched && !sn_deadline_expired(deadline)) {
				r.watched = fabric_coord_watch(&c, &r.early);
				poll(NULL, 0, 1);
			}
			r.waited_ms = (int64_t)(sn_clock_ms() - t0);
			status = r.watched ? SN_WARMUP_PEER_FAILED : SN_WARMUP_TIMEOUT;
		}
		r.finish_rc = fabric_coord_finish(&c, status, 12.5,
						  b->done_status ? "ncclAllReduce: unhandled system error" : "",
						  (struct sn_deadline){
							  deadline.at_ms +
							  DEADLINE_MS },
						  &r.verdict, &err);
	}
	r.refused = c.strangers.refused;
	snprintf(r.err, sizeof(r.err), "%s", err.msg);
	fabric_coord_close(&c);
	fabric_auth_close(&auth);
	if (write(out, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(2);
	_exit(0);
}

void fabric_test_run_step(const struct behaviour *b, uint32_t nodes,
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

int fabric_test_listen(struct sn_port_range ports, unsigned int attempt)
{
	unsigned int port = sn_fabric_port(&ports, TEST_JOB, TEST_STEP, attempt);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 256) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

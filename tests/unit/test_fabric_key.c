/* SPDX-License-Identifier: MIT */
/*
 * The per-step key (src/warmup/fabric/fabric_key.h): what binds it to the
 * step, and the credentials it refuses: forged, tampered, replayed, made
 * with another step's key, sealed for other endpoints.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "fabric_auth.h"
#include "fabric_key.h"
#include "fabric/fabric_msg.h"
#include "protocol/helper_protocol.h"

static const unsigned char site[48] = "a site key of forty-eight bytes, for the tests.";

static void key_of(struct fabric_key *k, const char *cluster, uint32_t job,
		   uint32_t step, uint32_t uid)
{
	struct sn_error e;

	memset(k, 0, sizeof(*k));
	assert_int_equal(fabric_key_derive(site, sizeof(site), cluster, job,
					   step, uid, k->key, &e), 0);
}

static void test_derive_binds_the_step(void **state)
{
	struct fabric_key a, b;

	(void)state;
	key_of(&a, "c", 7, 0, 1000);
	key_of(&b, "c", 7, 0, 1000);
	assert_memory_equal(a.key, b.key, FABRIC_KEY_BYTES);
	key_of(&b, "c", 7, 1, 1000);		/* another step */
	assert_memory_not_equal(a.key, b.key, FABRIC_KEY_BYTES);
	key_of(&b, "c", 8, 0, 1000);		/* another job */
	assert_memory_not_equal(a.key, b.key, FABRIC_KEY_BYTES);
	key_of(&b, "c", 7, 0, 1001);		/* another user */
	assert_memory_not_equal(a.key, b.key, FABRIC_KEY_BYTES);
	key_of(&b, "d", 7, 0, 1000);		/* another cluster */
	assert_memory_not_equal(a.key, b.key, FABRIC_KEY_BYTES);
}

/* A sealed HELLO from one endpoint to another, as fabric_io.c makes it. */
static void sealed(struct fabric_key *k, const char *from, const char *to,
		   char *cred, size_t len)
{
	struct sn_fabric_msg m = { .type = SN_FMSG_HELLO, .jobid = 7,
				   .index = 1, .nodes = 2, .gpus = 4 };
	char payload[SN_FABRIC_PAYLOAD_MAX], line[SN_FABRIC_MSG_MAX];
	struct sn_error e;

	snprintf(m.node, sizeof(m.node), "n2");
	assert_int_equal(sn_fabric_seal_text(&m, from, to, payload,
					     sizeof(payload), &e), 0);
	assert_int_equal(fabric_key_seal(k, payload, strlen(payload), cred,
					 len, &e), 0);
	/* It travels in an AUTH line. */
	assert_int_equal(sn_fabric_auth_line(cred, line, sizeof(line), &e), 0);
}

static int opened(struct fabric_key *k, const char *cred, const char *from,
		  const char *to)
{
	char payload[SN_FABRIC_PAYLOAD_MAX];
	size_t len = sizeof(payload);
	struct sn_fabric_msg m;
	struct sn_error e;

	if (fabric_key_unseal(k, cred, payload, &len, &e) < 0)
		return -1;
	return sn_fabric_unseal_text(payload, len, from, to, &m, &e);
}

static void test_round_trip_once(void **state)
{
	struct fabric_key member, root;
	char cred[SN_FABRIC_CRED_MAX];

	(void)state;
	key_of(&member, "c", 7, 0, 1000);
	key_of(&root, "c", 7, 0, 1000);
	sealed(&member, "10.0.0.2:40000", "10.0.0.1:29400", cred, sizeof(cred));
	assert_int_equal(opened(&root, cred, "10.0.0.2:40000",
				"10.0.0.1:29400"), 0);
	/* The same credential again: a replay. */
	assert_int_equal(opened(&root, cred, "10.0.0.2:40000",
				"10.0.0.1:29400"), -1);
}

static void test_refused(void **state)
{
	struct fabric_key member, root, other_step;
	char cred[SN_FABRIC_CRED_MAX], forged[SN_FABRIC_CRED_MAX];
	char *p;

	(void)state;
	key_of(&member, "c", 7, 0, 1000);
	key_of(&root, "c", 7, 0, 1000);
	key_of(&other_step, "c", 7, 1, 1000);
	/* Another step of the same user. */
	sealed(&other_step, "10.0.0.2:40000", "10.0.0.1:29400", cred,
	       sizeof(cred));
	assert_int_equal(opened(&root, cred, "10.0.0.2:40000",
				"10.0.0.1:29400"), -1);
	/* Relayed: the root sees another peer. */
	sealed(&member, "10.0.0.2:40000", "10.0.0.1:29400", cred, sizeof(cred));
	assert_int_equal(opened(&root, cred, "10.0.0.9:41000",
				"10.0.0.1:29400"), -1);
	/* A forged MAC, a changed payload, a changed time, a changed nonce. */
	for (int what = 0; what < 4; what++) {
		sealed(&member, "10.0.0.2:40000", "10.0.0.1:29400", cred,
		       sizeof(cred));
		memcpy(forged, cred, sizeof(cred));
		p = what == 0 ? strrchr(forged, ':') + 1 :
		    what == 1 ? strrchr(forged, ':') - 4 :
		    what == 2 ? forged + strlen(FABRIC_KEY_TAG) + 33 :
		    forged + strlen(FABRIC_KEY_TAG);
		*p = *p == 'a' ? 'b' : 'a';
		assert_int_equal(opened(&root, forged, "10.0.0.2:40000",
					"10.0.0.1:29400"), -1);
		/* The original still opens: nothing was spent on a forgery. */
		assert_int_equal(opened(&root, cred, "10.0.0.2:40000",
					"10.0.0.1:29400"), 0);
	}
	assert_int_equal(opened(&root, "SNK1:00:1:AAAA:00", "a:1", "b:2"), -1);
	assert_int_equal(opened(&root, "MUNGE:AAAA:", "a:1", "b:2"), -1);
}

/* The root-run derivation writes the key on descriptor 3; the helper
 * reads the same key from its descriptor. */
static void test_derive_main_and_fd(void **state)
{
	char path[] = "/tmp/sn-fabric-key.XXXXXX", job[] = "7", step[] = "0";
	char uid[] = "1000", cluster[] = "c", mode[] = SN_HELPER_FABRIC_KEY_DERIVE;
	char prog[] = "nccl-warmup";
	char *argv[] = { prog, mode, path, cluster, job, step, uid, NULL };
	struct fabric_key want, got;
	struct sn_error e;
	int fd = mkstemp(path), p[2], status;
	pid_t pid;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, site, sizeof(site)), (int)sizeof(site));
	close(fd);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 3);
		_exit(fabric_key_derive_main(7, argv));
	}
	close(p[1]);
	waitpid(pid, &status, 0);
	assert_int_equal(WEXITSTATUS(status), 0);
	key_of(&want, "c", 7, 0, 1000);
	assert_int_equal(fabric_key_read_fd(&got, p[0], &e), 0);
	assert_memory_equal(want.key, got.key, FABRIC_KEY_BYTES);
	/* A short site key is refused. */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "short", 5), 5);
	close(fd);
	pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_WRONLY);

		dup2(nul, 2);
		_exit(fabric_key_derive_main(7, argv));
	}
	waitpid(pid, &status, 0);
	assert_int_not_equal(WEXITSTATUS(status), 0);
	unlink(path);
	assert_int_equal(pipe(p), 0);
	close(p[1]);
	assert_int_equal(fabric_key_read_fd(&got, p[0], &e), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_derive_binds_the_step),
		cmocka_unit_test(test_round_trip_once),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_derive_main_and_fd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

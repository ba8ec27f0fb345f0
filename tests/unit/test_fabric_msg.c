/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fabric/fabric_msg.h"

static void roundtrip(const struct sn_fabric_msg *in, const char *want)
{
	char line[SN_FABRIC_MSG_MAX];
	struct sn_fabric_msg out;
	struct sn_error err = { "" };

	assert_int_equal(sn_fabric_msg_encode(in, line, sizeof(line), &err), 0);
	assert_string_equal(line, want);
	line[strlen(line) - 1] = '\0';
	assert_int_equal(sn_fabric_msg_decode(line, &out, &err), 0);
	assert_int_equal(out.type, in->type);
	assert_int_equal(out.jobid, in->jobid);
	assert_int_equal(out.stepid, in->stepid);
	assert_int_equal(out.index, in->index);
	assert_int_equal(out.rank_base, in->rank_base);
	assert_int_equal(out.blame, in->blame);
	assert_string_equal(out.node, in->node);
	assert_string_equal(out.text, in->text);
}

static void test_roundtrip(void **state)
{
	struct sn_fabric_msg m = { .type = SN_FMSG_HELLO, .jobid = 12,
				   .stepid = 0, .index = 2, .nodes = 3,
				   .gpus = 8, .status = 0,
				   .blame = SN_FABRIC_NO_BLAME,
				   .node = "gpu-a07", .text = "" };

	(void)state;
	roundtrip(&m, "SNFB2 HELLO job=12 step=0 index=2 nodes=3 gpus=8 status=0 node=gpu-a07 text=\n");
	m = (struct sn_fabric_msg){ .type = SN_FMSG_GO, .jobid = 12,
				    .stepid = 4294967294u, .rank_base = 16,
				    .nranks = 24, .blame = SN_FABRIC_NO_BLAME };
	m.nccl_id[0] = 0xab;
	m.nccl_id[127] = 0x01;
	{
		char want[SN_FABRIC_MSG_MAX], line[SN_FABRIC_MSG_MAX];
		struct sn_fabric_msg out;
		struct sn_error err = { "" };

		snprintf(want, sizeof(want), "SNFB2 GO job=12 step=4294967294 rank_base=16 nranks=24 id=ab%0252d01\n", 0);
		roundtrip(&m, want);
		snprintf(line, sizeof(line), "%s", want);
		line[strlen(line) - 1] = '\0';
		assert_int_equal(sn_fabric_msg_decode(line, &out, &err), 0);
		assert_memory_equal(out.nccl_id, m.nccl_id, sizeof(m.nccl_id));
	}
	m = (struct sn_fabric_msg){ .type = SN_FMSG_ABORT, .jobid = 1,
				    .stepid = 2, .blame = 2,
				    .text = "n3 never joined the fabric warmup" };
	roundtrip(&m, "SNFB2 ABORT job=1 step=2 blame=2 text=n3 never joined the fabric warmup\n");
	m = (struct sn_fabric_msg){ .type = SN_FMSG_VERDICT, .jobid = 1,
				    .stepid = 2, .blame = SN_FABRIC_NO_BLAME };
	roundtrip(&m, "SNFB2 VERDICT job=1 step=2 status=0 blame=none text=\n");
}

static void test_encode_sanitizes_text(void **state)
{
	struct sn_fabric_msg m = { .type = SN_FMSG_DONE, .jobid = 1,
				   .stepid = 1, .status = 5, .busbw = 12.5,
				   .text = "bad\nSNFB2 VERDICT x\x1b" };
	char line[SN_FABRIC_MSG_MAX];
	struct sn_error err = { "" };

	(void)state;
	assert_int_equal(sn_fabric_msg_encode(&m, line, sizeof(line), &err), 0);
	assert_string_equal(line, "SNFB2 DONE job=1 step=1 status=5 busbw=12.500 text=bad?SNFB2 VERDICT x?\n");
	/* A node name that is not one is refused, not sent. */
	m = (struct sn_fabric_msg){ .type = SN_FMSG_HELLO, .nodes = 1,
				    .node = "n1 text=x" };
	assert_int_equal(sn_fabric_msg_encode(&m, line, sizeof(line), &err), -1);
	assert_non_null(strstr(err.msg, "not a Slurm node name"));
	m.node[0] = '\0';
	assert_int_equal(sn_fabric_msg_encode(&m, line, sizeof(line), &err), -1);
}

static void test_decode_strict(void **state)
{
	static const char *const bad[] = {
		"",
		"SNFB1 WELCOME job=1 step=1",
		"SNFB2 HELLO job=1 step=1 index=3 nodes=3 gpus=1 status=0 node=n1 text=",
		"SNFB2 HELLO job=1 step=1 index=0 nodes=0 gpus=1 status=0 node=n1 text=",
		"SNFB2 HELLO job=1 step=1 nodes=3 index=0 gpus=1 status=0 node=n1 text=",
		"SNFB2 WELCOME job=1 step=1 ",
		"SNFB2 WELCOME job=01 step=1",
		"SNFB2 WELCOME job=-1 step=1",
		"SNFB2 WELCOME job=4294967296 step=1",
		"SNFB2 WELCOME job=18446744073709551617 step=1",
		"SNFB2 WELCOME job=+1 step=1",
		"SNFB2 WELCOME job=1x step=1",
		"SNFB2 WELCOME job=1  step=1",
		"SNFB2 GO job=1 step=1 rank_base=0 nranks=2",
		"SNFB2 GO job=1 step=1 rank_base=0 nranks=2 port=29400",
		"SNFB2 GO job=1 step=1 rank_base=0 nranks=2 id=00",
		/* What a stranger sent (issue 20): a wrapping GPU count, an
		 * exit status that is exit 0 mod 256, ranks past the end. */
		"SNFB2 HELLO job=1 step=1 index=2 nodes=3 gpus=4294967294 status=0 node=n3 text=",
		"SNFB2 HELLO job=1 step=1 index=2 nodes=3 gpus=1025 status=0 node=n3 text=",
		"SNFB2 HELLO job=1 step=1 index=2 nodes=3 gpus=1 status=256 node=n3 text=",
		"SNFB2 HELLO job=1 step=1 index=2 nodes=65537 gpus=1 status=0 node=n3 text=",
		"SNFB2 VERDICT job=1 step=1 status=256 blame=1 text=",
		"SNFB2 VERDICT job=1 step=1 status=99 blame=none text=",
		"SNFB2 VERDICT job=1 step=1 status=6 blame=65536 text=",
		"SNFB2 DONE job=1 step=1 status=4294967295 busbw=0 text=",
		"SNFB2 ABORT job=1 step=1 blame=4294967295 text=x",
		"SNFB2 ABORT job=1 step=1 blame=nonex text=x",
		"SNFB2 DONE job=1 step=1 status=0 busbw=-1 text=",
		"SNFB2 DONE job=1 step=1 status=0 busbw=inf text=",
		"SNFB2 DONE job=1 step=1 status=0 busbw=1x text=",
		"SNFB2 REFUSE job=1 step=1 text=tab\there",
		"SNFB2 HELLO job=1 step=1 index=0 nodes=1 gpus=1 status=0 node=a;b text=",
		"SNFB2 BYE job=1 step=1",
	};
	struct sn_fabric_msg m;
	struct sn_error err = { "" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (sn_fabric_msg_decode(bad[i], &m, &err) != -1)
			fail_msg("accepted \"%s\"", bad[i]);
	}
	assert_int_equal(sn_fabric_msg_decode("SNFB2 ABORT job=1 step=1 blame=none text=x y", &m, &err), 0);
	assert_int_equal(m.blame, SN_FABRIC_NO_BLAME);
	assert_string_equal(m.text, "x y");
}

static void test_bounds_accepted(void **state)
{
	struct sn_fabric_msg m;
	struct sn_error err = { "" };
	char line[SN_FABRIC_MSG_MAX];

	(void)state;
	assert_int_equal(sn_fabric_msg_decode("SNFB2 HELLO job=1 step=1 index=65535 nodes=65536 gpus=1024 status=12 node=n3 text=", &m, &err), 0);
	assert_int_equal(m.gpus, SN_FABRIC_GPUS_MAX);
	assert_int_equal(sn_fabric_msg_decode("SNFB2 VERDICT job=1 step=1 status=12 blame=65535 text=", &m, &err), 0);
	/* Every NUL-free id byte survives the hex. */
	m = (struct sn_fabric_msg){ .type = SN_FMSG_GO, .nranks = 1 };
	memset(m.nccl_id, 0xff, sizeof(m.nccl_id));
	assert_int_equal(sn_fabric_msg_encode(&m, line, sizeof(line), &err), 0);
	line[strlen(line) - 1] = '\0';
	assert_int_equal(sn_fabric_msg_decode(line, &m, &err), 0);
	assert_int_equal(m.nccl_id[64], 0xff);
}

/* A seal binds the message to the connection's two endpoints. */
static void test_seal(void **state)
{
	struct sn_fabric_msg m = { .type = SN_FMSG_HELLO, .jobid = 7,
				   .stepid = 1, .index = 1, .nodes = 2,
				   .gpus = 4, .node = "n2" }, out;
	char payload[SN_FABRIC_PAYLOAD_MAX];
	struct sn_error err = { "" };
	const char *from = "10.0.0.2:41000", *to = "10.0.0.1:29400";

	(void)state;
	assert_int_equal(sn_fabric_seal_text(&m, from, to, payload,
					     sizeof(payload), &err), 0);
	assert_string_equal(payload, "SNFB2 SEAL 10.0.0.2:41000 10.0.0.1:29400\n"
			    "SNFB2 HELLO job=7 step=1 index=1 nodes=2 gpus=4 status=0 node=n2 text=");
	assert_int_equal(sn_fabric_unseal_text(payload, strlen(payload), from,
					       to, &out, &err), 0);
	assert_int_equal(out.index, 1);
	assert_int_equal(out.gpus, 4);
	/* Replayed on, or relayed to, another connection. */
	assert_int_equal(sn_fabric_unseal_text(payload, strlen(payload), to,
					       from, &out, &err), -1);
	assert_non_null(strstr(err.msg, "another connection"));
	assert_int_equal(sn_fabric_unseal_text(payload, strlen(payload),
					       "10.0.0.9:41000", to, &out,
					       &err), -1);
	assert_int_equal(sn_fabric_unseal_text(payload, strlen(payload), from,
					       "10.0.0.1:29401", &out, &err), -1);
	/* A prefix of the endpoint is not the endpoint. */
	assert_int_equal(sn_fabric_unseal_text(payload, strlen(payload),
					       "10.0.0.2:4100", to, &out,
					       &err), -1);
	/* A NUL inside, or a GO sealed (GO travels only after the seal). */
	assert_int_equal(sn_fabric_unseal_text(payload, 12, from, to, &out,
					       &err), -1);
	payload[5] = '\0';
	assert_int_equal(sn_fabric_unseal_text(payload, 60, from, to, &out,
					       &err), -1);
	m = (struct sn_fabric_msg){ .type = SN_FMSG_GO, .nranks = 2 };
	assert_int_equal(sn_fabric_seal_text(&m, from, to, payload,
					     sizeof(payload), &err), 0);
	assert_int_equal(sn_fabric_unseal_text(payload, strlen(payload), from,
					       to, &out, &err), -1);
}

static void test_auth_line(void **state)
{
	char line[SN_FABRIC_MSG_MAX], cred[SN_FABRIC_CRED_MAX];
	struct sn_error err = { "" };

	(void)state;
	assert_int_equal(sn_fabric_auth_line("MUNGE:AwQDAAB+x/y=:", line,
					     sizeof(line), &err), 0);
	assert_string_equal(line, "SNFB2 AUTH MUNGE:AwQDAAB+x/y=:\n");
	line[strlen(line) - 1] = '\0';
	assert_int_equal(sn_fabric_auth_cred(line, cred, sizeof(cred), &err), 0);
	assert_string_equal(cred, "MUNGE:AwQDAAB+x/y=:");
	assert_int_equal(sn_fabric_auth_line("MUNGE:a b", line, sizeof(line),
					     &err), -1);
	assert_int_equal(sn_fabric_auth_cred("SNFB2 AUTH MUNGE:ab\ncd", cred,
					     sizeof(cred), &err), -1);
	assert_int_equal(sn_fabric_auth_cred("SNFB2 AUTH xMUNGE:abcd", cred,
					     sizeof(cred), &err), -1);
	assert_int_equal(sn_fabric_auth_cred("SNFB2 HELLO job=1", cred,
					     sizeof(cred), &err), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_bounds_accepted),
		cmocka_unit_test(test_seal),
		cmocka_unit_test(test_auth_line),
		cmocka_unit_test(test_encode_sanitizes_text),
		cmocka_unit_test(test_decode_strict),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fabric_msg.h"

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
	roundtrip(&m, "SNFB1 HELLO job=12 step=0 index=2 nodes=3 gpus=8 status=0 node=gpu-a07 text=\n");
	m = (struct sn_fabric_msg){ .type = SN_FMSG_GO, .jobid = 12,
				    .stepid = 4294967294u, .rank_base = 16,
				    .nranks = 24, .port = 29411,
				    .blame = SN_FABRIC_NO_BLAME };
	roundtrip(&m, "SNFB1 GO job=12 step=4294967294 rank_base=16 nranks=24 port=29411\n");
	m = (struct sn_fabric_msg){ .type = SN_FMSG_ABORT, .jobid = 1,
				    .stepid = 2, .blame = 2,
				    .text = "n3 never joined the fabric warmup" };
	roundtrip(&m, "SNFB1 ABORT job=1 step=2 blame=2 text=n3 never joined the fabric warmup\n");
	m = (struct sn_fabric_msg){ .type = SN_FMSG_VERDICT, .jobid = 1,
				    .stepid = 2, .blame = SN_FABRIC_NO_BLAME };
	roundtrip(&m, "SNFB1 VERDICT job=1 step=2 status=0 blame=none text=\n");
}

static void test_encode_sanitizes_text(void **state)
{
	struct sn_fabric_msg m = { .type = SN_FMSG_DONE, .jobid = 1,
				   .stepid = 1, .status = 5, .busbw = 12.5,
				   .text = "bad\nSNFB1 VERDICT x\x1b" };
	char line[SN_FABRIC_MSG_MAX];
	struct sn_error err = { "" };

	(void)state;
	assert_int_equal(sn_fabric_msg_encode(&m, line, sizeof(line), &err), 0);
	assert_string_equal(line, "SNFB1 DONE job=1 step=1 status=5 busbw=12.500 text=bad?SNFB1 VERDICT x?\n");
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
		"SNFB2 WELCOME job=1 step=1",
		"SNFB1 HELLO job=1 step=1 index=3 nodes=3 gpus=1 status=0 node=n1 text=",
		"SNFB1 HELLO job=1 step=1 index=0 nodes=0 gpus=1 status=0 node=n1 text=",
		"SNFB1 HELLO job=1 step=1 nodes=3 index=0 gpus=1 status=0 node=n1 text=",
		"SNFB1 WELCOME job=1 step=1 ",
		"SNFB1 WELCOME job=01 step=1",
		"SNFB1 WELCOME job=-1 step=1",
		"SNFB1 WELCOME job=4294967296 step=1",
		"SNFB1 WELCOME job=1  step=1",
		"SNFB1 GO job=1 step=1 rank_base=0 nranks=2",
		"SNFB1 ABORT job=1 step=1 blame=4294967295 text=x",
		"SNFB1 ABORT job=1 step=1 blame=nonex text=x",
		"SNFB1 DONE job=1 step=1 status=0 busbw=-1 text=",
		"SNFB1 DONE job=1 step=1 status=0 busbw=inf text=",
		"SNFB1 DONE job=1 step=1 status=0 busbw=1x text=",
		"SNFB1 REFUSE job=1 step=1 text=tab\there",
		"SNFB1 HELLO job=1 step=1 index=0 nodes=1 gpus=1 status=0 node=a;b text=",
		"SNFB1 BYE job=1 step=1",
	};
	struct sn_fabric_msg m;
	struct sn_error err = { "" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (sn_fabric_msg_decode(bad[i], &m, &err) != -1)
			fail_msg("accepted \"%s\"", bad[i]);
	}
	assert_int_equal(sn_fabric_msg_decode("SNFB1 ABORT job=1 step=1 blame=none text=x y", &m, &err), 0);
	assert_int_equal(m.blame, SN_FABRIC_NO_BLAME);
	assert_string_equal(m.text, "x y");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_encode_sanitizes_text),
		cmocka_unit_test(test_decode_strict),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

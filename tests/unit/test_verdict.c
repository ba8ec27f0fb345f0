/* SPDX-License-Identifier: MIT */
/*
 * Who is blamed (src/core/protocol/verdict.c): the job's helper outcome
 * (its class and what its JSON claimed) by the root confirmation's
 * outcome gives the fault.  Only a failed confirmation blames the node.
 */
#include "core_testutil.h"

#include "protocol/verdict.h"

#define N SN_FAULT_NODE
#define J SN_FAULT_JOB
#define E SN_FAULT_ENVIRONMENT
#define NONE SN_FAULT_NONE

static void test_decision_table(void **state)
{
	static const struct {
		struct sn_verdict_facts facts;
		enum sn_fault fault;
	} cases[] = {
		/* A pass: no fault, whatever anything else says. */
		{ { SN_CLASS_OK, N, false, SN_CONFIRM_NOT_RUN }, NONE },
		/* Forged: wrong data and "fault":"node", exit 6; clean check
		 * passes -> the job's.  Fails -> the node's. */
		{ { SN_CLASS_WRONG_RESULT, N, false, SN_CONFIRM_PASSED }, J },
		{ { SN_CLASS_WRONG_RESULT, N, false, SN_CONFIRM_FAILED }, N },
		/* pkill -SEGV of the job's helper: the job's unless the
		 * node's own check fails. */
		{ { SN_CLASS_CRASH, NONE, false, SN_CONFIRM_PASSED }, J },
		{ { SN_CLASS_CRASH, NONE, false, SN_CONFIRM_FAILED }, N },
		{ { SN_CLASS_TIMEOUT, NONE, false, SN_CONFIRM_PASSED }, J },
		{ { SN_CLASS_TIMEOUT, NONE, false, SN_CONFIRM_FAILED }, N },
		/* Issue 31 part 3: a node-side NCCL init failure with a
		 * job's NCCL_* (the helper says "job") is the node's when the
		 * clean check fails too. */
		{ { SN_CLASS_NCCL_ERROR, J, false, SN_CONFIRM_FAILED }, N },
		{ { SN_CLASS_NCCL_ERROR, J, false, SN_CONFIRM_PASSED }, J },
		{ { SN_CLASS_NCCL_ERROR, N, false, SN_CONFIRM_PASSED }, J },
		/* Real node faults found by the clean check. */
		{ { SN_CLASS_DUPLICATE_BUSID, N, false, SN_CONFIRM_FAILED }, N },
		{ { SN_CLASS_GPU_BUSY, N, false, SN_CONFIRM_FAILED }, N },
		{ { SN_CLASS_GPU_HEALTH, N, false, SN_CONFIRM_FAILED }, N },
		{ { SN_CLASS_CUDA_ERROR, N, false, SN_CONFIRM_PASSED }, J },
		/* No confirmation, or one without a word on the node: the
		 * helper's word never makes a node fault. */
		{ { SN_CLASS_CUDA_ERROR, N, false, SN_CONFIRM_NOT_RUN }, J },
		{ { SN_CLASS_CUDA_ERROR, N, false, SN_CONFIRM_INCONCLUSIVE }, J },
		{ { SN_CLASS_HELPER_START, NONE, false, SN_CONFIRM_FAILED }, N },
		/* A usage error is never confirmed, so never the node's. */
		{ { SN_CLASS_USAGE, N, false, SN_CONFIRM_FAILED }, J },
		{ { SN_CLASS_USAGE, NONE, true, SN_CONFIRM_NOT_RUN }, E },
		/* The helper may blame its job or the environment. */
		{ { SN_CLASS_NO_GPUS, J, false, SN_CONFIRM_PASSED }, J },
		{ { SN_CLASS_CONTAINER_NCCL, J, false, SN_CONFIRM_PASSED }, J },
		{ { SN_CLASS_TIMEOUT, E, false, SN_CONFIRM_PASSED }, E },
		/* Fabric (issue 30 part 4): a stall no node can be shown to
		 * have caused is the environment's; this node's own failed
		 * clean check still blames it. */
		{ { SN_CLASS_TIMEOUT, N, true, SN_CONFIRM_PASSED }, E },
		{ { SN_CLASS_NCCL_ERROR, N, true, SN_CONFIRM_PASSED }, E },
		{ { SN_CLASS_CRASH, NONE, true, SN_CONFIRM_PASSED }, E },
		{ { SN_CLASS_TIMEOUT, N, true, SN_CONFIRM_FAILED }, N },
		{ { SN_CLASS_PEER_FAILED, E, true, SN_CONFIRM_PASSED }, E },
		{ { SN_CLASS_PEER_FAILED, NONE, true, SN_CONFIRM_FAILED }, N },
		{ { SN_CLASS_FABRIC_SETUP, N, true, SN_CONFIRM_PASSED }, E },
		{ { SN_CLASS_TRANSPORT, J, true, SN_CONFIRM_PASSED }, J },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum sn_fault got = sn_verdict_decide(&cases[i].facts);

		if (got != cases[i].fault)
			print_message("case %zu: got %d, expected %d\n", i,
				      got, cases[i].fault);
		assert_int_equal(got, cases[i].fault);
	}
}

/* Which helper outcomes are confirmed; what a confirmation's class says. */
static void test_confirm_states(void **state)
{
	(void)state;
	assert_false(sn_verdict_needs_confirm(SN_CLASS_OK));
	assert_false(sn_verdict_needs_confirm(SN_CLASS_USAGE));
	for (int c = SN_CLASS_NO_GPUS; c < SN_CLASS_COUNT; c++)
		assert_true(sn_verdict_needs_confirm((enum sn_record_class)c));
	assert_int_equal(sn_confirm_state_of(SN_CLASS_OK), SN_CONFIRM_PASSED);
	assert_int_equal(sn_confirm_state_of(SN_CLASS_DUPLICATE_BUSID),
			 SN_CONFIRM_FAILED);
	assert_int_equal(sn_confirm_state_of(SN_CLASS_GPU_BUSY),
			 SN_CONFIRM_FAILED);
	assert_int_equal(sn_confirm_state_of(SN_CLASS_GPU_HEALTH),
			 SN_CONFIRM_FAILED);
	assert_int_equal(sn_confirm_state_of(SN_CLASS_TIMEOUT),
			 SN_CONFIRM_FAILED);
	assert_int_equal(sn_confirm_state_of(SN_CLASS_CRASH),
			 SN_CONFIRM_FAILED);
	assert_int_equal(sn_confirm_state_of(SN_CLASS_NO_GPUS),
			 SN_CONFIRM_INCONCLUSIVE);
	assert_int_equal(sn_confirm_state_of(SN_CLASS_USAGE),
			 SN_CONFIRM_INCONCLUSIVE);
	assert_int_equal(sn_confirm_state_of(SN_CLASS_PEER_FAILED),
			 SN_CONFIRM_INCONCLUSIVE);
	assert_string_equal(sn_confirm_state_name(SN_CONFIRM_PASSED), "passed");
	assert_null(sn_confirm_state_name(SN_CONFIRM_NOT_RUN));
}

/* confirm_env=: NAME=VALUE lines, comments, and what is refused. */
static void test_confirm_env_parse(void **state)
{
	char text[] = "# the fake driver\n\nLD_LIBRARY_PATH=/opt/a:/opt/b\n"
		      "  FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0\nEMPTY=\n";
	char bad[] = "OK=1\nnot a line\n";
	char bad_name[] = "1X=2\n";
	char many[] = "A=1\nB=2\nC=3\n";
	char *envp[4];
	struct sn_error err;

	(void)state;
	assert_int_equal(sn_confirm_env_parse(text, envp, 4, &err), 3);
	assert_string_equal(envp[0], "LD_LIBRARY_PATH=/opt/a:/opt/b");
	assert_string_equal(envp[1],
			    "FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0");
	assert_string_equal(envp[2], "EMPTY=");
	assert_null(envp[3]);
	assert_int_equal(sn_confirm_env_parse(bad, envp, 4, &err), -1);
	assert_contains(err.msg, "line 2: expected NAME=VALUE");
	assert_int_equal(sn_confirm_env_parse(bad_name, envp, 4, &err), -1);
	assert_int_equal(sn_confirm_env_parse(many, envp, 3, &err), -1);
	assert_contains(err.msg, "more than 2 variables");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decision_table),
		cmocka_unit_test(test_confirm_states),
		cmocka_unit_test(test_confirm_env_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

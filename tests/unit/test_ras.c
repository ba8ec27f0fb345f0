/* SPDX-License-Identifier: MIT */
/*
 * ras= (src/core/config/ras.c): the key, the per-step port, and what a
 * step's environment gets: its own NCCL_RAS_ADDR, the user's kept, a
 * batch step's inherited one replaced, a taken port skipped.
 */
#include "core_testutil.h"

#include <stdio.h>

#include "config/config.h"
#include "base/envlist.h"
#include "config/ras.h"

static const struct sn_port_range range = { SN_RAS_PORT_LO_DEFAULT,
					    SN_RAS_PORT_HI_DEFAULT };

/* Ports in TAKEN[] are in use on the "node". */
struct node {
	unsigned int taken[16];
	size_t n_taken;
	unsigned int asked;
};

static int port_free(void *ctx, unsigned int port)
{
	struct node *n = ctx;

	n->asked++;
	for (size_t i = 0; i < n->n_taken; i++)
		if (n->taken[i] == port)
			return 0;
	return 1;
}

static void apply(enum sn_ras_policy policy, struct sn_envlist *list,
		  struct node *node, uint32_t job, uint32_t step, char *done,
		  size_t len)
{
	struct sn_env env;
	struct sn_error err = { "" };

	sn_envlist_bind(list, &env);
	if (sn_ras_apply(policy, &range, job, step, &env, port_free, node,
			 done, len, &err) < 0)
		fail_msg("%s", err.msg);
}

static void want_addr(const struct sn_envlist *l, unsigned int port)
{
	char want[32];

	snprintf(want, sizeof(want), "127.0.0.1:%u", port);
	assert_string_equal(sn_envlist_get(l, "NCCL_RAS_ADDR"), want);
	assert_string_equal(sn_envlist_get(l, SN_ENV_RAS_MARK), want);
}

static void test_policy_key(void **state)
{
	struct sn_config cfg;
	struct sn_error err = { "" };
	char *good[] = { "ras=OFF", "ras_ports=30000-30009" };
	char *bad[] = { "ras=on", "ras=", "ras_ports=80-90",
			"ras_ports=30010-30000" };

	(void)state;
	sn_config_defaults(&cfg);
	assert_int_equal(cfg.ras, SN_RAS_STEP);
	assert_int_equal(cfg.ras_ports.lo, 28100);
	assert_int_equal(cfg.ras_ports.hi, 28999);
	if (sn_config_parse(&cfg, 2, good, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(cfg.ras, SN_RAS_OFF);
	assert_int_equal(cfg.ras_ports.lo, 30000);
	assert_int_equal(cfg.ras_ports.hi, 30009);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sn_config c;

		sn_config_defaults(&c);
		assert_int_equal(sn_config_parse(&c, 1, &bad[i], &err), -1);
		assert_non_null(strstr(err.msg, "plugstack.conf argument"));
	}
	sn_config_defaults(&cfg);
	assert_int_equal(sn_config_parse(&cfg, 1, (char *[]){ "ras=nccl" },
					 &err), 0);
	assert_int_equal(cfg.ras, SN_RAS_NCCL);
	assert_string_equal(sn_ras_policy_name(SN_RAS_NCCL), "nccl");
}

/* Steps of one job: consecutive ports; every port in the range. */
static void test_step_port(void **state)
{
	unsigned int p0 = sn_step_port(&range, 4242, 0, 0);
	unsigned int p1 = sn_step_port(&range, 4242, 1, 0);
	const struct sn_port_range one = { 30000, 30000 };

	(void)state;
	assert_int_equal(p1, p0 == range.hi ? range.lo : p0 + 1);
	assert_int_equal(sn_step_port(&range, 4242, 0, 1), p1);
	assert_int_not_equal(sn_step_port(&range, 4242, 0, 0),
			     sn_step_port(&range, 4243, 0, 0));
	for (uint32_t job = 1; job < 2000; job += 7) {
		/* 0xfffffffb: the batch step's id. */
		unsigned int p = sn_step_port(&range, job, 0xfffffffbu, 3);

		assert_true(p >= range.lo && p <= range.hi);
	}
	assert_int_equal(sn_step_port(&one, 9, 9, 9), 30000);
}

static void test_step_gets_its_own(void **state)
{
	struct sn_envlist a = { 0 }, b = { 0 };
	struct node node = { .n_taken = 0 };
	char done[160];

	(void)state;
	apply(SN_RAS_STEP, &a, &node, 77, 0, done, sizeof(done));
	apply(SN_RAS_STEP, &b, &node, 77, 1, done, sizeof(done));
	want_addr(&a, sn_step_port(&range, 77, 0, 0));
	want_addr(&b, sn_step_port(&range, 77, 1, 0));
	assert_string_not_equal(sn_envlist_get(&a, "NCCL_RAS_ADDR"),
				sn_envlist_get(&b, "NCCL_RAS_ADDR"));
	assert_non_null(strstr(done, "NCCL_RAS_ADDR=127.0.0.1:"));
	sn_envlist_free(&a);
	sn_envlist_free(&b);
}

static void test_user_value_kept(void **state)
{
	char *env[] = { "NCCL_RAS_ADDR=localhost:30500", NULL };
	/* The user's own, even beside a stale mark of another value. */
	char *env2[] = { "NCCL_RAS_ADDR=localhost:30500",
			 SN_ENV_RAS_MARK "=127.0.0.1:28123", NULL };
	char *env3[] = { "NCCL_RAS_ENABLE=1", NULL };
	struct sn_envlist l = { 0 };
	struct node node = { .n_taken = 0 };
	char done[160];

	(void)state;
	assert_int_equal(sn_envlist_init_from(&l, env), 0);
	apply(SN_RAS_STEP, &l, &node, 77, 3, done, sizeof(done));
	assert_string_equal(sn_envlist_get(&l, "NCCL_RAS_ADDR"),
			    "localhost:30500");
	assert_null(sn_envlist_get(&l, SN_ENV_RAS_MARK));
	assert_string_equal(done, "NCCL_RAS_ADDR set by the user, kept");
	assert_int_equal(node.asked, 0);
	sn_envlist_free(&l);
	assert_int_equal(sn_envlist_init_from(&l, env2), 0);
	apply(SN_RAS_STEP, &l, &node, 77, 3, done, sizeof(done));
	assert_string_equal(sn_envlist_get(&l, "NCCL_RAS_ADDR"),
			    "localhost:30500");
	sn_envlist_free(&l);
	/* off: the user's own NCCL_RAS_ENABLE wins too. */
	assert_int_equal(sn_envlist_init_from(&l, env3), 0);
	apply(SN_RAS_OFF, &l, &node, 77, 3, done, sizeof(done));
	assert_string_equal(sn_envlist_get(&l, "NCCL_RAS_ENABLE"), "1");
	sn_envlist_free(&l);
}

/* A batch step's address, inherited by the script's srun: replaced. */
static void test_inherited_replaced(void **state)
{
	struct sn_envlist l = { 0 };
	struct node node = { .n_taken = 0 };
	char done[160];

	(void)state;
	apply(SN_RAS_STEP, &l, &node, 88, 0xfffffffbu, done, sizeof(done));
	want_addr(&l, sn_step_port(&range, 88, 0xfffffffbu, 0));
	apply(SN_RAS_STEP, &l, &node, 88, 0, done, sizeof(done));
	want_addr(&l, sn_step_port(&range, 88, 0, 0));
	sn_envlist_free(&l);
}

static void test_taken_port_skipped(void **state)
{
	struct sn_envlist l = { 0 };
	struct node node = { .n_taken = 2 };
	char done[160];
	unsigned int k;

	(void)state;
	node.taken[0] = sn_step_port(&range, 99, 5, 0);
	node.taken[1] = sn_step_port(&range, 99, 5, 1);
	apply(SN_RAS_STEP, &l, &node, 99, 5, done, sizeof(done));
	want_addr(&l, sn_step_port(&range, 99, 5, 2));
	sn_envlist_free(&l);
	/* All taken: the derived port, said so (NCCL then warns). */
	for (k = 0; k < SN_RAS_ATTEMPTS; k++)
		node.taken[k] = sn_step_port(&range, 99, 5, k);
	node.n_taken = k;
	memset(&l, 0, sizeof(l));
	apply(SN_RAS_STEP, &l, &node, 99, 5, done, sizeof(done));
	want_addr(&l, sn_step_port(&range, 99, 5, 0));
	assert_non_null(strstr(done, "all taken"));
	sn_envlist_free(&l);
}

static void test_off_and_nccl(void **state)
{
	struct sn_envlist l = { 0 };
	struct node node = { .n_taken = 0 };
	char done[160];

	(void)state;
	apply(SN_RAS_OFF, &l, &node, 1, 0, done, sizeof(done));
	assert_string_equal(sn_envlist_get(&l, "NCCL_RAS_ENABLE"), "0");
	assert_null(sn_envlist_get(&l, "NCCL_RAS_ADDR"));
	sn_envlist_free(&l);
	memset(&l, 0, sizeof(l));
	apply(SN_RAS_NCCL, &l, &node, 1, 0, done, sizeof(done));
	assert_int_equal(l.n, 0);
	assert_int_equal(node.asked, 0);
	sn_envlist_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_key),
		cmocka_unit_test(test_step_port),
		cmocka_unit_test(test_step_gets_its_own),
		cmocka_unit_test(test_user_value_kept),
		cmocka_unit_test(test_inherited_replaced),
		cmocka_unit_test(test_taken_port_skipped),
		cmocka_unit_test(test_off_and_nccl),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gpu/nccl_log.h"

static void assert_transport(const char *log, const char *want)
{
	char got[SN_TRANSPORT_MAX] = "x";

	assert_int_equal(sn_nccl_transport(log, strlen(log), got, sizeof(got)),
			 0);
	assert_string_equal(got, want);
}

static void assert_none(const char *log)
{
	char got[SN_TRANSPORT_MAX] = "x";

	assert_int_equal(sn_nccl_transport(log, strlen(log), got, sizeof(got)),
			 -1);
	assert_string_equal(got, "");
}

/* Lines as NCCL 2.28 writes them (NCCL_DEBUG=INFO, NCCL_DEBUG_FILE). */
static void test_nccl_networks(void **state)
{
	(void)state;
	assert_transport("n1:4242:4242 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>\n"
			 "n1:4242:4242 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so.\n"
			 "n1:4242:4242 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n"
			 "n1:4242:4242 [0] NCCL INFO Using network IB\n",
			 "NET/IB");
	assert_transport("n2:77:77 [1] NCCL INFO NET/IB : No device found.\n"
			 "n2:77:77 [1] NCCL INFO Using network Socket\r\n",
			 "NET/Socket");
	assert_transport("n3:9:9 [0] NCCL INFO Using network IBext_v8\n",
			 "NET/Plugin IBext_v8");
	assert_transport("n3:9:9 [0] NCCL INFO Using network AWS Libfabric",
			 "NET/Plugin AWS Libfabric");
	/* The first line wins: one network per process. */
	assert_transport("a [0] NCCL INFO Using network Socket\n"
			 "a [1] NCCL INFO Using network IB\n", "NET/Socket");
}

/* A net plugin: its name, and the API version NCCL loaded it as. */
static void test_net_plugin(void **state)
{
	(void)state;
	/* aws-ofi-nccl as NCCL 2.27 logs it (NET/Plugin lines first). */
	assert_transport("n:188:585 [0] NCCL INFO NET/Plugin: Plugin name set by env to libnccl-net.so\n"
			 "n:188:585 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v10)\n"
			 "n:188:585 [0] NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v10 symbol.\n"
			 "n:188:585 [0] NCCL INFO Using network Libfabric\n",
			 "NET/Plugin Libfabric (v10)");
	assert_transport("h [0] NCCL INFO NET/Plugin: Loaded net plugin AWS Libfabric (v5)\r\n"
			 "h [0] NCCL INFO Using network AWS Libfabric\n",
			 "NET/Plugin AWS Libfabric (v5)");
	/* A plugin loaded but another network used: no version claimed. */
	assert_transport("h [0] NCCL INFO NET/Plugin: Loaded net plugin gIB (v11)\n"
			 "h [0] NCCL INFO Using network Socket\n", "NET/Socket");
	assert_transport("h [0] NCCL INFO NET/Plugin: Loaded net plugin gIB (v11)\n"
			 "h [0] NCCL INFO Using network Mesh\n", "NET/Plugin Mesh");
	/* Malformed versions are not versions. */
	assert_transport("h [0] NCCL INFO NET/Plugin: Loaded net plugin X (v)\n"
			 "h [0] NCCL INFO Using network X\n", "NET/Plugin X");
	assert_transport("h [0] NCCL INFO NET/Plugin: Loaded net plugin X(v3)\n"
			 "h [0] NCCL INFO Using network X\n", "NET/Plugin X");
	/* Control bytes never reach a message or the JSON. */
	assert_transport("h [0] NCCL INFO Using network a\tb\n", "NET/Plugin a?b");
}

static void test_plugin_name_cut(void **state)
{
	const char *log = "h [0] NCCL INFO NET/Plugin: Loaded net plugin ABCDEFGH (v7)\n"
			  "h [0] NCCL INFO Using network ABCDEFGH\n";
	char got[16] = "x";

	(void)state;
	/* "NET/Plugin " + 4 of the name: the version only when it fits. */
	assert_int_equal(sn_nccl_transport(log, strlen(log), got, sizeof(got)), 0);
	assert_string_equal(got, "NET/Plugin ABCD");
	assert_int_equal(sn_nccl_transport(log, strlen(log), got, 11), 0);
	assert_string_equal(got, "NET/Plugin");
	assert_int_equal(sn_nccl_transport(log, strlen(log), got, 10), -1);
	assert_string_equal(got, "");
}

static void test_no_network_line(void **state)
{
	(void)state;
	assert_none("");
	assert_none("n1:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n");
	assert_none("n1:1:1 [0] NCCL INFO Using network \n");
	assert_none("Using network IB\n");	/* not NCCL's line */
}

static void test_short_buffer(void **state)
{
	char got[4] = "x";
	const char *log = "h [0] NCCL INFO Using network Socket\n";

	(void)state;
	assert_int_equal(sn_nccl_transport(log, strlen(log), got, sizeof(got)),
			 -1);
	assert_string_equal(got, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nccl_networks),
		cmocka_unit_test(test_net_plugin),
		cmocka_unit_test(test_plugin_name_cut),
		cmocka_unit_test(test_no_network_line),
		cmocka_unit_test(test_short_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

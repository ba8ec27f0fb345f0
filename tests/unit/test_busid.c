/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "gpu/busid.h"

static void test_parse_valid(void **state)
{
	struct sn_pci_busid id;

	assert_int_equal(sn_busid_parse("0000:00:06.0", &id), 0);
	assert_int_equal(id.domain, 0);
	assert_int_equal(id.bus, 0);
	assert_int_equal(id.device, 6);
	assert_int_equal(id.function, 0);

	assert_int_equal(sn_busid_parse("0009:01:00.0", &id), 0);
	assert_int_equal(id.domain, 9);
	assert_int_equal(id.bus, 1);

	/* 8-digit domains and either hex case. */
	assert_int_equal(sn_busid_parse("0001000A:Ff:1f.7", &id), 0);
	assert_int_equal(id.domain, 0x1000a);
	assert_int_equal(id.bus, 0xff);
	assert_int_equal(id.device, 0x1f);
	assert_int_equal(id.function, 7);
	assert_int_equal(sn_busid_parse("ffffffff:00:00.0", &id), 0);
	assert_int_equal(id.domain, 0xffffffffu);
}

static void test_parse_invalid(void **state)
{
	static const char *const bad[] = {
		"", "0000", "000:01:00.0", "000000000:01:00.0",
		"0000:1:00.0", "0000:001:00.0", "0000:01:0.0", "0000:01:00",
		"0000:01:00.", "0000:01:00.8", "0000:01:20.0", "0000:01:00.00",
		"0000-01:00.0", "0000:01:00.0 ", " 0000:01:00.0", "g000:01:00.0",
		"0000:01:00.0\n", "+000:01:00.0", "0000:0x:00.0",
	};
	struct sn_pci_busid id = { 1, 2, 3, 4 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (sn_busid_parse(bad[i], &id) == 0)
			fail_msg("accepted bad bus ID '%s'", bad[i]);
	}
	/* A failed parse leaves the output alone. */
	assert_int_equal(id.domain, 1);
	assert_int_equal(sn_busid_parse(NULL, &id), -1);
	assert_int_equal(sn_busid_parse("0000:01:00.0", NULL), -1);
}

static void test_equal(void **state)
{
	struct sn_pci_busid a, b;

	assert_int_equal(sn_busid_parse("0000:01:00.0", &a), 0);
	assert_int_equal(sn_busid_parse("00000000:01:00.0", &b), 0);
	assert_true(sn_busid_equal(&a, &b));
	assert_int_equal(sn_busid_parse("0000:01:00.1", &b), 0);
	assert_false(sn_busid_equal(&a, &b));
	assert_int_equal(sn_busid_parse("0001:01:00.0", &b), 0);
	assert_false(sn_busid_equal(&a, &b));
}

static void set_gpu(struct sn_gpu_identity *g, int index, const char *busid,
		    const char *uuid, bool mig)
{
	memset(g, 0, sizeof(*g));
	g->index = index;
	strcpy(g->busid, busid);
	strcpy(g->uuid, uuid);
	g->mig = mig;
}

static void test_distinct(void **state)
{
	struct sn_gpu_identity g[4];
	size_t a = 99, b = 99;

	set_gpu(&g[0], 0, "0000:00:06.0", "GPU-a", false);
	set_gpu(&g[1], 1, "0000:00:07.0", "GPU-b", false);
	set_gpu(&g[2], 2, "0000:00:08.0", "GPU-c", false);
	set_gpu(&g[3], 3, "0000:00:09.0", "GPU-d", false);
	assert_false(sn_busid_find_duplicate(g, 4, &a, &b));
	assert_int_equal(a, 99);
	assert_false(sn_busid_find_duplicate(g, 0, &a, &b));
}

/* 4xGH200: same bus/device/function, only the domain differs. */
static void test_gh200_domains(void **state)
{
	struct sn_gpu_identity g[4];

	set_gpu(&g[0], 0, "0009:01:00.0", "GPU-a", false);
	set_gpu(&g[1], 1, "0019:01:00.0", "GPU-b", false);
	set_gpu(&g[2], 2, "0029:01:00.0", "GPU-c", false);
	set_gpu(&g[3], 3, "0039:01:00.0", "GPU-d", false);
	assert_false(sn_busid_find_duplicate(g, 4, NULL, NULL));
}

static void test_duplicate(void **state)
{
	struct sn_gpu_identity g[4];
	size_t a, b;

	set_gpu(&g[0], 0, "0000:01:00.0", "GPU-a", false);
	set_gpu(&g[1], 1, "0000:02:00.0", "GPU-b", false);
	set_gpu(&g[2], 2, "0000:03:00.0", "GPU-c", false);
	/* Same ID, different spelling: still the same device. */
	set_gpu(&g[3], 3, "00000000:02:00.0", "GPU-d", false);
	assert_true(sn_busid_find_duplicate(g, 4, &a, &b));
	assert_int_equal(a, 1);
	assert_int_equal(b, 3);
	/* NULL outputs are allowed. */
	assert_true(sn_busid_find_duplicate(g, 4, NULL, NULL));
}

static void test_duplicate_first_pair(void **state)
{
	struct sn_gpu_identity g[3];
	size_t a, b;

	set_gpu(&g[0], 0, "0000:05:00.0", "GPU-a", false);
	set_gpu(&g[1], 1, "0000:05:00.0", "GPU-b", false);
	set_gpu(&g[2], 2, "0000:05:00.0", "GPU-c", false);
	assert_true(sn_busid_find_duplicate(g, 3, &a, &b));
	assert_int_equal(a, 0);
	assert_int_equal(b, 1);
}

static void test_mig(void **state)
{
	struct sn_gpu_identity g[3];
	size_t a, b;

	set_gpu(&g[0], 0, "0000:01:00.0", "MIG-a", true);
	set_gpu(&g[1], 1, "0000:01:00.0", "MIG-b", true);
	assert_false(sn_busid_find_duplicate(g, 2, &a, &b));
	assert_true(sn_busid_any_mig(g, 2));
	/* A full GPU sharing an ID with a MIG instance is still a fault. */
	set_gpu(&g[2], 2, "0000:01:00.0", "GPU-c", false);
	assert_true(sn_busid_find_duplicate(g, 3, &a, &b));
	assert_int_equal(a, 0);
	assert_int_equal(b, 2);
	set_gpu(&g[0], 0, "0000:01:00.0", "GPU-a", false);
	assert_false(sn_busid_any_mig(g, 1));
}

static void test_unparseable_compared_as_text(void **state)
{
	struct sn_gpu_identity g[3];
	size_t a, b;

	set_gpu(&g[0], 0, "weird-id", "GPU-a", false);
	set_gpu(&g[1], 1, "other-id", "GPU-b", false);
	assert_false(sn_busid_find_duplicate(g, 2, &a, &b));
	set_gpu(&g[2], 2, "WEIRD-ID", "GPU-c", false);
	assert_true(sn_busid_find_duplicate(g, 3, &a, &b));
	assert_int_equal(a, 0);
	assert_int_equal(b, 2);
}

static void test_uuid_format(void **state)
{
	unsigned char bytes[16];
	char out[64];

	for (int i = 0; i < 16; i++)
		bytes[i] = (unsigned char)(0x10 * (i % 16) + i);
	assert_int_equal(sn_uuid_format(bytes, false, out, sizeof(out)), 0);
	assert_string_equal(out, "GPU-00112233-4455-6677-8899-aabbccddeeff");
	assert_int_equal(sn_uuid_format(bytes, true, out, sizeof(out)), 0);
	assert_string_equal(out, "MIG-00112233-4455-6677-8899-aabbccddeeff");
	assert_int_equal(sn_uuid_format(bytes, false, out, 41), 0);
	assert_int_equal(sn_uuid_format(bytes, false, out, 40), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_valid),
		cmocka_unit_test(test_parse_invalid),
		cmocka_unit_test(test_equal),
		cmocka_unit_test(test_distinct),
		cmocka_unit_test(test_gh200_domains),
		cmocka_unit_test(test_duplicate),
		cmocka_unit_test(test_duplicate_first_pair),
		cmocka_unit_test(test_mig),
		cmocka_unit_test(test_unparseable_compared_as_text),
		cmocka_unit_test(test_uuid_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

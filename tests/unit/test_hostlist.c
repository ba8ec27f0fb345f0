/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fabric/fabric_addr.h"
#include "fabric/hostlist.h"

/* Expands EXPR into one space-separated string. */
static int join_visit(const char *host, size_t index, void *arg,
		      struct sn_error *err)
{
	char *out = arg;

	(void)err;
	if (index)
		strcat(out, " ");
	strcat(out, host);
	return 0;
}

static void assert_expands(const char *expr, const char *want)
{
	char got[4096] = "";
	struct sn_error err = { "" };

	assert_int_equal(sn_hostlist_foreach(expr, join_visit, got, &err), 0);
	assert_string_equal(got, want);
}

static void assert_refused(const char *expr, const char *why)
{
	size_t n;
	struct sn_error err = { "" };

	assert_int_equal(sn_hostlist_count(expr, &n, &err), -1);
	if (!strstr(err.msg, why))
		fail_msg("\"%s\": error \"%s\" lacks \"%s\"", expr, err.msg,
			 why);
}

static void test_expand(void **state)
{
	(void)state;
	assert_expands("n1", "n1");
	assert_expands("n[1-3]", "n1 n2 n3");
	assert_expands("n[1-3,7]", "n1 n2 n3 n7");
	assert_expands("gpu-[08-11]", "gpu-08 gpu-09 gpu-10 gpu-11");
	assert_expands("a[1-2]b[3-4]", "a1b3 a1b4 a2b3 a2b4");
	assert_expands("x[1-2].ib,login", "x1.ib x2.ib login");
	assert_expands("n[009-010],m", "n009 n010 m");
	assert_expands("node[5]", "node5");
}

static void test_refused(void **state)
{
	(void)state;
	assert_refused("", "empty host list");
	assert_refused("n[1-3", "without ']'");
	assert_refused("n1-3]", "without '['");
	assert_refused("n[3-1]", "runs backwards");
	assert_refused("n[1-x]", "bad range");
	assert_refused("n[]", "bad range");
	assert_refused("n[1,]", "bad range");
	assert_refused("n[[1]]", "nested");
	assert_refused("a,,b", "empty host name");
	assert_refused("a,", "trailing comma");
	assert_refused("n 1", "not allowed");
	assert_refused("n;rm", "not allowed");
	assert_refused("n[1-1234567890]", "bad range");
	assert_refused("n[0-99999]", "more than 65536 hosts");
	assert_refused("a[1]b[1]c[1]d[1]e[1]f[1]g[1]h[1]i[1]",
		       "bracket groups");
}

static void test_nth_and_find(void **state)
{
	char host[SN_HOSTNAME_MAX];
	size_t idx, n;
	struct sn_error err = { "" };

	(void)state;
	assert_int_equal(sn_hostlist_count("n[1-3],gpu[01-02]", &n, &err), 0);
	assert_int_equal(n, 5);
	assert_int_equal(sn_hostlist_nth("n[1-3],gpu[01-02]", 0, host,
					 sizeof(host), &err), 0);
	assert_string_equal(host, "n1");
	assert_int_equal(sn_hostlist_nth("n[1-3],gpu[01-02]", 4, host,
					 sizeof(host), &err), 0);
	assert_string_equal(host, "gpu02");
	assert_int_equal(sn_hostlist_nth("n[1-3]", 3, host, sizeof(host),
					 &err), -1);
	assert_non_null(strstr(err.msg, "no host number 3"));
	assert_int_equal(sn_hostlist_find("n[1-3],gpu[01-02]", "gpu01", &idx,
					  &err), 0);
	assert_int_equal(idx, 3);
	assert_int_equal(sn_hostlist_find("n[1-3]", "n4", &idx, &err), -1);
	assert_non_null(strstr(err.msg, "not in the host list"));
	/* A short buffer is an error, not a truncated name. */
	assert_int_equal(sn_hostlist_nth("longname1", 0, host, 4, &err), -1);
}

static void test_port_range(void **state)
{
	struct sn_port_range r;
	struct sn_error err = { "" };

	(void)state;
	assert_int_equal(sn_port_range_parse("29400-29499", &r, &err), 0);
	assert_int_equal(r.lo, 29400);
	assert_int_equal(r.hi, 29499);
	assert_int_equal(sn_port_range_parse("30000", &r, &err), 0);
	assert_int_equal(r.lo, 30000);
	assert_int_equal(r.hi, 30000);
	assert_int_equal(sn_port_range_parse("80-90", &r, &err), -1);
	assert_int_equal(sn_port_range_parse("2000-1999", &r, &err), -1);
	assert_non_null(strstr(err.msg, "backwards"));
	assert_int_equal(sn_port_range_parse("2000-70000", &r, &err), -1);
	assert_int_equal(sn_port_range_parse("2000-", &r, &err), -1);
	assert_int_equal(sn_port_range_parse("-2000", &r, &err), -1);
	assert_int_equal(sn_port_range_parse("2000x", &r, &err), -1);
	assert_int_equal(sn_port_range_parse("2000- 2001", &r, &err), -1);
	assert_int_equal(sn_port_range_parse("2000-+2001", &r, &err), -1);
	assert_int_equal(sn_port_range_parse("18446744073709553616", &r, &err),
			 -1);
	assert_int_equal(sn_port_range_parse("02000-002001", &r, &err), 0);
	assert_int_equal(r.lo, 2000);
	assert_int_equal(r.hi, 2001);
	assert_int_equal(sn_port_range_parse(NULL, &r, &err), -1);
}

static void test_port_derivation(void **state)
{
	struct sn_port_range r = { 29400, 29499 };
	unsigned int p0, p1;
	uint32_t job;

	(void)state;
	/* Same inputs, same port: every node agrees without talking. */
	assert_int_equal(sn_fabric_port(&r, 1234, 0, 0),
			 sn_fabric_port(&r, 1234, 0, 0));
	/* Concurrent steps of one job never share a port. */
	p0 = sn_fabric_port(&r, 1234, 0, 0);
	p1 = sn_fabric_port(&r, 1234, 1, 0);
	assert_int_not_equal(p0, p1);
	/* The next attempt is the next port, wrapping inside the range. */
	for (job = 0; job < 2000; job++) {
		unsigned int a = sn_fabric_port(&r, job, 7, 0);
		unsigned int b = sn_fabric_port(&r, job, 7, 1);

		assert_true(a >= r.lo && a <= r.hi);
		assert_true(b >= r.lo && b <= r.hi);
		assert_int_equal(b, a == r.hi ? r.lo : a + 1);
	}
	/* Consecutive job ids are spread, not packed side by side. */
	assert_int_not_equal(sn_fabric_port(&r, 100, 0, 0) + 1,
			     sn_fabric_port(&r, 101, 0, 0));
	r.lo = r.hi = 40000;
	assert_int_equal(sn_fabric_port(&r, 99, 5, 3), 40000);
}

static void test_endpoint(void **state)
{
	char id[SN_ENDPOINT_MAX];
	struct sn_error err = { "" };

	(void)state;
	assert_int_equal(sn_fabric_endpoint(id, sizeof(id), "10.250.0.11",
					   29401, &err), 0);
	assert_string_equal(id, "10.250.0.11:29401");
	assert_int_equal(sn_fabric_endpoint(id, sizeof(id), "fd00::1", 29401,
					   &err), 0);
	assert_string_equal(id, "[fd00::1]:29401");
	assert_int_equal(sn_fabric_endpoint(id, sizeof(id), "n1", 29401, &err),
			 -1);
	assert_non_null(strstr(err.msg, "numeric"));
	assert_int_equal(sn_fabric_endpoint(id, sizeof(id), "10.0.0.1;x", 1,
					   &err), -1);
	assert_int_equal(sn_fabric_endpoint(id, 8, "10.250.0.11", 29401, &err),
			 -1);
}

/* ncclGetUniqueId's id: a magic, then NCCL's bootstrap root address. */
static void test_nccl_id_endpoint(void **state)
{
	unsigned char nid[128] = { 0 };
	struct sockaddr_in in4 = { .sin_family = AF_INET,
				   .sin_port = htons(43567) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6,
				    .sin6_port = htons(1) };
	char out[SN_ENDPOINT_MAX];

	(void)state;
	memset(nid, 0x5a, 8);
	inet_pton(AF_INET, "10.250.0.11", &in4.sin_addr);
	memcpy(nid + 8, &in4, sizeof(in4));
	assert_int_equal(sn_nccl_id_endpoint(nid, sizeof(nid), out, sizeof(out)), 0);
	assert_string_equal(out, "10.250.0.11:43567");
	inet_pton(AF_INET6, "fd00::11", &in6.sin6_addr);
	memcpy(nid + 8, &in6, sizeof(in6));
	assert_int_equal(sn_nccl_id_endpoint(nid, sizeof(nid), out, sizeof(out)), 0);
	assert_string_equal(out, "[fd00::11]:1");
	/* An id without an address (a counter, an older layout). */
	memset(nid + 8, 0, sizeof(nid) - 8);
	assert_int_equal(sn_nccl_id_endpoint(nid, sizeof(nid), out, sizeof(out)), -1);
	assert_int_equal(sn_nccl_id_endpoint(nid, 16, out, sizeof(out)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_nccl_id_endpoint),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_nth_and_find),
		cmocka_unit_test(test_port_range),
		cmocka_unit_test(test_port_derivation),
		cmocka_unit_test(test_endpoint),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

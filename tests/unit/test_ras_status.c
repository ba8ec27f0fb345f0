/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "protocol/ras_status.h"

static struct sn_ras_status st;

static char *slurp(const char *name)
{
	char path[1024];
	FILE *f;
	static char buf[65536];
	size_t n;

	snprintf(path, sizeof(path), "%s/fuzz/corpus/ras_status/%s",
		 SN_SRCDIR, name);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static int parse(const char *text, struct sn_error *err)
{
	return sn_ras_parse(&st, text, strlen(text), err);
}

/* The document as NCCL 2.28.7+ writes it: a rank behind, one dead. */
static void test_ras_behind_and_dead(void **state)
{
	struct sn_error err;
	struct sn_ras_verdict v;

	(void)state;
	assert_int_equal(parse(slurp("behind-and-dead.json"), &err), 0);
	assert_string_equal(st.version, "2.28.9");
	assert_int_equal(st.n_comms, 1);
	assert_int_equal(st.comms[0].size, 4);
	assert_string_equal(st.comms[0].hash, "0x44242b96028948c1");
	assert_int_equal(st.comms[0].n, 4);
	assert_int_equal(st.n_colls, 5);
	assert_string_equal(st.colls[4], "AllReduce");
	assert_string_equal(st.ranks[1].host, "10.0.0.12");
	assert_int_equal(st.ranks[1].pid, 1114);
	assert_int_equal(st.ranks[1].nvml_dev, 1);
	assert_true(st.ranks[3].missing && st.ranks[3].dead);
	sn_ras_verdict(&st, 0, &v);
	assert_int_equal(v.missing, 1);
	assert_int_equal(v.dead, 1);
	assert_int_equal(v.coll, 4);
	assert_int_equal(v.n_odd, 1);
	assert_int_equal(v.n_rest, 2);
	assert_int_equal(v.odd_count, 1);
	assert_int_equal(v.rest_count, 2);
	assert_false(v.odd_mixed);
	assert_true(st.ranks[1].odd);
	assert_false(st.ranks[0].odd || st.ranks[2].odd || st.ranks[3].odd);
}

#define RANK(r, n) "{\"rank\":" #r ",\"collective_counts\":{\"AllReduce\":" #n "}}"
#define DOC(ranks) "{\"communicators\":[{\"hash\":\"0x1\",\"size\":4,\"ranks\":[" ranks "],\"missing_ranks\":[]}]}"

/* Two ranks, one count apart: the one behind is named (the case);
 * one rank ahead of three: that one is the odd one. */
static void test_ras_odd_rank(void **state)
{
	struct sn_error err;
	struct sn_ras_verdict v;

	(void)state;
	assert_int_equal(parse(DOC(RANK(0, 2) "," RANK(1, 1)), &err), 0);
	sn_ras_verdict(&st, 0, &v);
	assert_int_equal(v.coll, 0);
	assert_true(st.ranks[1].odd && !st.ranks[0].odd);
	assert_int_equal(v.odd_count, 1);
	assert_int_equal(v.rest_count, 2);

	assert_int_equal(parse(DOC(RANK(0, 1) "," RANK(1, 1) "," RANK(2, 2) ","
				   RANK(3, 1)), &err), 0);
	sn_ras_verdict(&st, 0, &v);
	assert_true(st.ranks[2].odd);
	assert_int_equal(v.n_odd, 1);
	assert_int_equal(v.n_rest, 3);
	assert_int_equal(v.odd_count, 2);

	assert_int_equal(parse(DOC(RANK(0, 3) "," RANK(1, 3) "," RANK(2, 3) ","
				   RANK(3, 3)), &err), 0);
	sn_ras_verdict(&st, 0, &v);
	assert_int_equal(v.coll, -1);
	assert_int_equal(v.n_odd, 0);
	assert_int_equal(v.missing, 0);

	assert_int_equal(parse(DOC(RANK(0, 5) "," RANK(1, 3) "," RANK(2, 5) ","
				   RANK(3, 4)), &err), 0);
	sn_ras_verdict(&st, 0, &v);
	assert_int_equal(v.n_odd, 2);
	assert_true(v.odd_mixed);
}

/* Untrusted input: malformed, out of range, too many, trailing text. */
static void test_ras_refused(void **state)
{
	static const char *const bad[] = {
		"",
		"[]",
		"{\"communicators\":{}}",
		DOC("{\"pid\":1}"),
		DOC("{\"rank\":-2}"),
		DOC("{\"rank\":0,\"collective_counts\":{\"AllReduce\":-1}}"),
		DOC("{\"rank\":0,\"collective_counts\":{\"AllReduce\":1.5}}"),
		DOC("{\"rank\":0,\"status\":{\"abort_flag\":1}}"),
		DOC("{\"rank\":0,\"collective_counts\":{\"a\":0,\"b\":0,\"c\":0,"
		    "\"d\":0,\"e\":0,\"f\":0,\"g\":0,\"h\":0,\"i\":0}}"),
		DOC(RANK(0, 1)) " x",
		"{\"nccl_version\":\"2.28.9-a-very-long-version-string\"}",
	};
	struct sn_error err;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.msg[0] = '\0';
		assert_int_equal(parse(bad[i], &err), -1);
		assert_true(err.msg[0] != '\0');
	}
	assert_int_equal(parse("{\"future\":[1,{\"x\":null}],\"communicators\":[]}",
			       &err), 0);
	assert_int_equal(st.n_comms, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ras_behind_and_dead),
		cmocka_unit_test(test_ras_odd_rank),
		cmocka_unit_test(test_ras_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

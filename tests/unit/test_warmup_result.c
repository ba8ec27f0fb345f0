/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "protocol/helper_protocol.h"
#include "protocol/json_write.h"
#include "protocol/warmup_result.h"

/* What nccl-warmup --json printed on the fake 4-GPU node. */
static const char helper_ok[] =
	"{\"version\":1,\"node\":\"node1\",\"mode\":\"comm\",\"status\":\"ok\","
	"\"exit_code\":0,\"message\":\"\",\"note\":\"\","
	"\"summary\":\"warmup ok on node1: 2 GPUs [0000:00:06.0 0000:00:07.0], NCCL 2.28.3, comm mode, total 1.66 s\","
	"\"nccl_version\":\"2.28.3\",\"cuda_visible_devices\":\"0,1\","
	"\"gpus\":[{\"index\":0,\"busid\":\"0000:00:06.0\",\"uuid\":\"GPU-fa4e0000-0000-0000-0000-000000000000\",\"mig\":false},"
	"{\"index\":1,\"busid\":\"0000:00:07.0\",\"uuid\":\"GPU-fa4e0000-0000-0000-0000-000000000001\",\"mig\":false}],"
	"\"timings_ms\":{\"cuda_init\":612.0,\"contexts\":120.5,\"comm_init\":480.0,"
	"\"allreduce\":50.0,\"bandwidth\":null,\"teardown\":400.0,\"total\":1662.5},"
	"\"busbw_gbps\":null,"
	"\"ids\":{\"uid\":[1000,1000,1000],\"gid\":[1000,1000,1000],\"groups\":[1000,27],\"groups_total\":2}}\n";

static struct sn_warmup_result res;
static struct sn_error err;

static int parse(const char *text)
{
	return sn_warmup_result_parse(text, strlen(text), &res, &err);
}

#define assert_rejects(text, what) do { \
	if (parse(text) != -1) \
		fail_msg("accepted: %s", text); \
	if (!strstr(err.msg, what)) \
		fail_msg("error \"%s\" lacks \"%s\" for %s", err.msg, what, \
			 text); \
	assert_int_equal(res.n_gpus, 0); \
	assert_string_equal(res.status, ""); \
} while (0)

static void test_helper_output(void **state)
{
	assert_int_equal(parse(helper_ok), 0);
	assert_string_equal(err.msg, "");
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.status, "ok");
	/* "mode" is the plugin's own (it chose it): not read, any value. */
	assert_int_equal(parse("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
			       "\"mode\":{\"x\":[1]},\"mode\":7}"), 0);
	assert_int_equal(parse(helper_ok), 0);
	assert_string_equal(res.message, "");
	assert_string_equal(res.nccl_version, "2.28.3");
	assert_true(strstr(res.summary, "warmup ok on node1") != NULL);
	assert_int_equal(res.n_gpus, 2);
	assert_int_equal(res.gpus[1].index, 1);
	assert_string_equal(res.gpus[1].busid, "0000:00:07.0");
	assert_string_equal(res.gpus[1].uuid,
			    "GPU-fa4e0000-0000-0000-0000-000000000001");
	assert_true(res.total_ms > 1662.4 && res.total_ms < 1662.6);
	assert_true(res.busbw_gbps == 0);
}

static void test_failure_and_bandwidth(void **state)
{
	assert_int_equal(parse("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
			       "\"note\":\"MIG: NCCL communicator check skipped\"}"), 0);
	assert_string_equal(res.note, "MIG: NCCL communicator check skipped");
	assert_int_equal(parse("{\"version\":1,\"status\":\"low_bandwidth\","
			       "\"exit_code\":7,\"mode\":\"bandwidth\","
			       "\"message\":\"bus bandwidth 50.2 GB/s is below\","
			       "\"busbw_gbps\":50.25,\"nccl_version\":null,"
			       "\"gpus\":[],\"timings_ms\":null}"), 0);
	assert_int_equal(res.exit_code, 7);
	assert_string_equal(res.status, "low_bandwidth");
	assert_true(res.busbw_gbps > 50.24 && res.busbw_gbps < 50.26);
	assert_string_equal(res.nccl_version, "");
	assert_int_equal(res.n_gpus, 0);
}

static void test_minimal_and_whitespace(void **state)
{
	assert_int_equal(parse(" \t\r\n{ \"exit_code\" : 3 , \"status\" : "
			       "\"duplicate_busid\", \"version\" : 1 } \n"), 0);
	assert_int_equal(res.exit_code, 3);
}

static void test_unknown_keys_skipped(void **state)
{
	assert_int_equal(parse("{\"future\":{\"a\":[1,2,{\"b\":[true,false,null]}],"
			       "\"c\":\"x\\\"y\"},\"version\":1,\"x\":-0.5e-3,"
			       "\"status\":\"ok\",\"exit_code\":0,"
			       "\"gpus\":[{\"index\":0,\"busid\":\"0000:01:00.0\","
			       "\"extra\":{\"deep\":[[]]}}],"
			       "\"timings_ms\":{\"other\":{},\"total\":5}}"), 0);
	assert_int_equal(res.n_gpus, 1);
	assert_string_equal(res.gpus[0].uuid, "");
	assert_true(res.total_ms == 5);
}

/* Mode fabric: only "fabric.blame_node" is read, for the fleet record. */
static void test_fabric_blame(void **state)
{
	assert_int_equal(parse("{\"version\":1,\"status\":\"peer_failed\","
			       "\"exit_code\":10,\"mode\":\"fabric\","
			       "\"transport\":\"NET/Socket\",\"fabric\":{\"nodes\":3,"
			       "\"node_index\":0,\"ranks\":6,\"rank_base\":0,"
			       "\"comm_id\":null,\"blame_index\":1,"
			       "\"blame_node\":\"n2\"}}"), 0);
	assert_string_equal(res.blame_node, "n2");
	assert_string_equal(res.transport, "NET/Socket");
	assert_int_equal(parse("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
			       "\"fabric\":{\"blame_node\":null,\"ranks\":6}}"), 0);
	assert_string_equal(res.blame_node, "");
	assert_int_equal(parse("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
			       "\"fabric\":null}"), 0);
	assert_string_equal(res.blame_node, "");
	assert_rejects("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		       "\"fabric\":{\"blame_node\":1}}", "expected");
	assert_rejects("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		       "\"fabric\":{\"blame_node\":\"a\",\"blame_node\":\"b\"}}",
		       "duplicate key \"blame_node\"");
	assert_rejects("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		       "\"fabric\":{},\"fabric\":{}}", "duplicate key \"fabric\"");
	assert_rejects("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		       "\"fabric\":[]}", "expected '{'");
}

static void test_escapes(void **state)
{
	assert_int_equal(parse("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
			       "\"message\":\"a\\\"b\\\\c\\/d\\n\\t\\u00e9\\ud83d\\ude00\"}"),
			 0);
	assert_string_equal(res.message,
			    "a\"b\\c/d\n\t\xc3\xa9\xf0\x9f\x98\x80");
}

static void test_required_keys(void **state)
{
	assert_rejects("{}", "lacks");
	assert_rejects("{\"version\":1,\"status\":\"ok\"}", "lacks");
	assert_rejects("{\"version\":1,\"exit_code\":0}", "lacks");
	assert_rejects("{\"status\":\"ok\",\"exit_code\":0}", "lacks");
}

static void test_wrong_types(void **state)
{
	assert_rejects("{\"version\":\"1\",\"status\":\"ok\",\"exit_code\":0}",
		       "expected a number");
	assert_rejects("{\"version\":1,\"status\":0,\"exit_code\":0}",
		       "expected '\"'");
	assert_rejects("{\"version\":1,\"status\":\"ok\",\"exit_code\":\"0\"}",
		       "expected a number");
	assert_rejects("{\"version\":1,\"status\":\"ok\",\"exit_code\":0.5}",
		       "integer");
	assert_rejects("{\"version\":1,\"status\":\"ok\",\"exit_code\":256}",
		       "integer");
	assert_rejects("{\"version\":1,\"status\":\"ok\",\"exit_code\":-1}",
		       "integer");
	assert_rejects("{\"version\":2,\"status\":\"ok\",\"exit_code\":0}",
		       "unsupported version");
	assert_rejects("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		       "\"gpus\":{}}", "expected '['");
	assert_rejects("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		       "\"gpus\":[1]}", "expected '{'");
	assert_rejects("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		       "\"gpus\":[{\"index\":0}]}", "lacks");
	assert_rejects("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		       "\"gpus\":[{\"index\":-1,\"busid\":\"x\"}]}", "integer");
	assert_rejects("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		       "\"busbw_gbps\":\"fast\"}", "expected a number");
	assert_rejects("[1,2]", "expected '{'");
	assert_rejects("\"ok\"", "expected '{'");
}

static void test_malformed(void **state)
{
	static const struct { const char *text, *what; } cases[] = {
		{ "{\"version\":1,\"status\":\"ok\",\"exit_code\":0",
		  "expected '}'" },
		{ "{\"version\":1,\"status\":\"ok\",\"exit_code\":0,}",
		  "expected '\"'" },
		{ "{\"version\":1 \"status\":\"ok\",\"exit_code\":0}",
		  "expected '}'" },
		{ "{\"version\":1,\"status\":\"ok\",\"exit_code\":0}}",
		  "trailing data" },
		{ "{\"version\":1,\"status\":\"ok\",\"exit_code\":0}{}",
		  "trailing data" },
		{ "{\"version\":1,\"status\":\"ok", "unterminated string" },
		{ "{\"version\":1,\"status\":\"ok\",\"exit_code\":01}",
		  "expected '}'" },
		{ "{\"version\":1.,\"status\":\"ok\",\"exit_code\":0}",
		  "digit expected" },
		{ "{\"version\":1e,\"status\":\"ok\",\"exit_code\":0}",
		  "digit expected" },
		{ "{\"version\":+1,\"status\":\"ok\",\"exit_code\":0}",
		  "expected a number" },
		{ "{\"version\":1,\"x\":tru,\"status\":\"ok\",\"exit_code\":0}",
		  "invalid literal" },
		{ "{\"version\":1,\"x\":nul", "invalid literal" },
		{ "{\"version\":1,\"x\":NaN,\"status\":\"ok\",\"exit_code\":0}",
		  "expected a number" },
		{ "{version:1}", "expected '\"'" },
		{ "{'version':1}", "expected '\"'" },
		{ "{\"version\":1,\"status\":\"o\x01k\",\"exit_code\":0}",
		  "control character" },
		{ "{\"version\":1,\"status\":\"o\nk\",\"exit_code\":0}",
		  "control character" },
		{ "{\"version\":1,\"status\":\"\\x41\",\"exit_code\":0}",
		  "invalid escape" },
		{ "{\"version\":1,\"status\":\"\\u12\",\"exit_code\":0}",
		  "bad hex digit" },
		{ "{\"version\":1,\"status\":\"\\u12", "truncated" },
		{ "{\"version\":1,\"status\":\"\\", "truncated escape" },
		{ "{\"version\":1,\"status\":\"\\u0000\",\"exit_code\":0}",
		  "\\u0000" },
		{ "{\"version\":1,\"status\":\"\\ud800\",\"exit_code\":0}",
		  "surrogate" },
		{ "{\"version\":1,\"status\":\"\\udc00\",\"exit_code\":0}",
		  "surrogate" },
		{ "{\"version\":1,\"status\":\"\\ud800\\u0041\",\"exit_code\":0}",
		  "surrogate" },
		{ "{\"version\":1,\"version\":1,\"status\":\"ok\",\"exit_code\":0}",
		  "duplicate key" },
		{ "{\"version\":1,\"status\":\"ok\",\"exit_code\":0,\"exit_code\":4}",
		  "duplicate key" },
		{ "   ", "empty" },
		{ "", "empty" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_rejects(cases[i].text, cases[i].what);
}

static void test_huge_numbers(void **state)
{
	char digits[200];

	assert_rejects("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		       "\"busbw_gbps\":1e999}", "out of range");
	assert_rejects("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		       "\"busbw_gbps\":-1e400}", "out of range");
	assert_rejects("{\"version\":1,\"status\":\"ok\","
		       "\"exit_code\":99999999999999999999999}", "integer");
	assert_rejects("{\"version\":1e300,\"status\":\"ok\",\"exit_code\":0}",
		       "integer");
	memset(digits, '1', sizeof(digits) - 1);
	digits[sizeof(digits) - 1] = '\0';
	{
		char text[400];

		snprintf(text, sizeof(text),
			 "{\"version\":1,\"status\":\"ok\",\"exit_code\":0,\"x\":%s}",
			 digits);
		assert_rejects(text, "number too long");
	}
	/* Tiny numbers underflow to 0: ERANGE, rejected as well. */
	assert_rejects("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		       "\"busbw_gbps\":1e-400}", "out of range");
}

static char *nested(int depth, const char *open, const char *close)
{
	size_t len = strlen("{\"version\":1,\"status\":\"ok\",\"exit_code\":0,\"x\":}") +
		     (size_t)depth * (strlen(open) + strlen(close)) + 1;
	char *text = malloc(len);
	size_t o;

	assert_non_null(text);
	o = (size_t)sprintf(text, "{\"version\":1,\"status\":\"ok\",\"exit_code\":0,\"x\":");
	for (int i = 0; i < depth; i++)
		o += (size_t)sprintf(text + o, "%s", open);
	for (int i = 0; i < depth; i++)
		o += (size_t)sprintf(text + o, "%s", close);
	sprintf(text + o, "}");
	return text;
}

static void test_deep_nesting(void **state)
{
	char *text;

	text = nested(10, "[", "]");
	assert_int_equal(parse(text), 0);
	free(text);
	text = nested(10000, "[", "]");
	assert_rejects(text, "nesting too deep");
	free(text);
	text = nested(10000, "{\"a\":", "}");
	assert_rejects(text, "nesting too deep");
	free(text);
	/* Unterminated deep nesting ends at the limit too, not the stack. */
	text = nested(30000, "[", "");
	assert_rejects(text, "nesting too deep");
	free(text);
}

static void test_size_limit(void **state)
{
	size_t len = SN_RESULT_MAX_BYTES + 1;
	char *text = malloc(len + 1);

	assert_non_null(text);
	memset(text, ' ', len);
	memcpy(text, "{\"version\":1,\"status\":\"ok\",\"exit_code\":0}", 41);
	text[len] = '\0';
	assert_int_equal(sn_warmup_result_parse(text, len, &res, &err), -1);
	assert_true(strstr(err.msg, "limit") != NULL);
	/* Exactly the limit is fine. */
	assert_int_equal(sn_warmup_result_parse(text, len - 1, &res, &err), 0);
	free(text);
}

static void test_embedded_nul_and_length(void **state)
{
	static const char text[] = "{\"version\":1,\"status\":\"ok\",\"exit_code\":0}\0junk";

	assert_int_equal(sn_warmup_result_parse(text, sizeof(text) - 1, &res,
						&err), -1);
	assert_true(strstr(err.msg, "NUL") != NULL);
	/* LEN bounds the read: a truncated buffer is a truncated object. */
	assert_int_equal(sn_warmup_result_parse(text, 20, &res, &err), -1);
	assert_int_equal(sn_warmup_result_parse(NULL, 0, &res, &err), -1);
}

static void test_field_lengths(void **state)
{
	char text[4096];
	char long_status[100];
	char long_key[200];

	memset(long_status, 's', sizeof(long_status) - 1);
	long_status[sizeof(long_status) - 1] = '\0';
	snprintf(text, sizeof(text),
		 "{\"version\":1,\"status\":\"%s\",\"exit_code\":0}",
		 long_status);
	assert_rejects(text, "\"status\" is longer than 31 bytes");

	snprintf(text, sizeof(text),
		 "{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
		 "\"gpus\":[{\"index\":0,\"busid\":\"%s\"}]}", long_status);
	assert_rejects(text, "busid");

	/* Over-long unknown keys are skipped, not fatal. */
	memset(long_key, 'k', sizeof(long_key) - 1);
	long_key[sizeof(long_key) - 1] = '\0';
	snprintf(text, sizeof(text),
		 "{\"%s\":[1],\"version\":1,\"status\":\"ok\",\"exit_code\":0}",
		 long_key);
	assert_int_equal(parse(text), 0);
}

static void test_too_many_gpus(void **state)
{
	char *text = malloc(SN_RESULT_MAX_BYTES);
	size_t o;

	assert_non_null(text);
	for (int n = SN_RESULT_MAX_GPUS; n <= SN_RESULT_MAX_GPUS + 1; n++) {
		o = (size_t)sprintf(text, "{\"version\":1,\"status\":\"ok\",\"exit_code\":0,\"gpus\":[");
		for (int i = 0; i < n; i++)
			o += (size_t)sprintf(text + o,
					     "%s{\"index\":%d,\"busid\":\"0000:%02x:00.0\"}",
					     i ? "," : "", i, i);
		sprintf(text + o, "]}");
		if (n == SN_RESULT_MAX_GPUS) {
			assert_int_equal(parse(text), 0);
			assert_int_equal(res.n_gpus, SN_RESULT_MAX_GPUS);
			assert_string_equal(res.gpus[63].busid, "0000:3f:00.0");
		} else {
			assert_rejects(text, "more than 64 GPUs");
		}
	}
	free(text);
}

static void test_json_escape(void **state)
{
	char out[64];
	char tiny[4];

	sn_json_escape(out, sizeof(out), "a\"b\\c\nd\te\x01\x7f\xc3\xa9");
	assert_string_equal(out, "a\\\"b\\\\c\\nd\\te\\u0001\\u007f??");
	/* Truncation never splits an escape. */
	assert_int_equal(sn_json_escape(tiny, sizeof(tiny), "ab\"c"), 2);
	assert_string_equal(tiny, "ab");
	assert_int_equal(sn_json_escape(out, sizeof(out), ""), 0);
	assert_string_equal(out, "");
}

/* A number, or the one null of every JSON the project writes. */
static void test_number_or_null(void **state)
{
	char buf[64];
	struct sn_text t = { .buf = buf, .cap = sizeof(buf) };

	sn_json_add_number_or_null(&t, true, "%.1f", 1.5);
	sn_text_add(&t, ",");
	sn_json_add_number_or_null(&t, false, "%d", 7);
	sn_text_add(&t, ",");
	sn_json_add_number_or_null(&t, true, "%llu", 0ULL);
	assert_string_equal(buf, "1.5,null,0");
	assert_false(t.full);
}

static void test_escape_roundtrip(void **state)
{
	const char *msg = "cuda \"failed\"\n\\ \x02 tab\t";
	char esc[256], text[512];

	sn_json_escape(esc, sizeof(esc), msg);
	snprintf(text, sizeof(text),
		 "{\"version\":1,\"status\":\"cuda_error\",\"exit_code\":4,\"message\":\"%s\"}",
		 esc);
	assert_int_equal(parse(text), 0);
	assert_string_equal(res.message, msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_helper_output),
		cmocka_unit_test(test_fabric_blame),
		cmocka_unit_test(test_failure_and_bandwidth),
		cmocka_unit_test(test_minimal_and_whitespace),
		cmocka_unit_test(test_unknown_keys_skipped),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_required_keys),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_huge_numbers),
		cmocka_unit_test(test_deep_nesting),
		cmocka_unit_test(test_size_limit),
		cmocka_unit_test(test_embedded_nul_and_length),
		cmocka_unit_test(test_field_lengths),
		cmocka_unit_test(test_too_many_gpus),
		cmocka_unit_test(test_json_escape),
		cmocka_unit_test(test_number_or_null),
		cmocka_unit_test(test_escape_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

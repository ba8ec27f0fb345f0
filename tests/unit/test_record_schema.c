/* SPDX-License-Identifier: MIT */
/*
 * The schema table (record_schema.c) is consistent, the record writer
 * writes exactly its fields with its types for every mode (record.c),
 * and the reader (record_read.c) takes older records and newer revisions
 * of version 1, and refuses a newer version.  test_record_json_schema.sh
 * checks the published JSON Schema against the same table.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "fleet/record.h"
#include "fleet/record_read.h"

static struct sn_json doc;
static struct sn_record_view view;
static struct sn_error err;
static char line[SN_RECORD_MAX_BYTES];

static void test_table(void **state)
{
	int max_since = 0;

	(void)state;
	for (int f = 0; f < SN_F_COUNT; f++) {
		const struct sn_field_def *d = &sn_fields[f];

		assert_non_null(d->key);
		assert_true(d->key[0] && d->doc && d->doc[0]);
		assert_true(d->types && d->docs);
		/* Parents come first and hold fields, in the same documents. */
		if (d->parent != SN_F_TOP) {
			assert_true(d->parent < f);
			assert_true(sn_fields[d->parent].types &
				    (SN_T_OBJECT | SN_T_ARRAY));
			assert_int_equal(sn_fields[d->parent].docs & d->docs,
					 d->docs);
		}
		/* One key per object and document. */
		for (int g = 0; g < f; g++)
			if (sn_fields[g].parent == d->parent &&
			    (sn_fields[g].docs & d->docs))
				assert_true(strcmp(sn_fields[g].key, d->key) != 0);
		if (d->values)
			assert_true(d->types & SN_T_STRING);
		if (d->decimals)
			assert_true(d->types & SN_T_NUMBER);
		/* A reader can only require what every revision has. */
		if (d->required)
			assert_true(d->since <= 1 && (d->docs & SN_IN_RECORD));
		if (d->since > max_since)
			max_since = d->since;
	}
	assert_true(max_since <= SN_RECORD_SCHEMA);
	for (int c = 0; c < SN_CLASS_COUNT; c++)
		assert_non_null(sn_record_class_names[c]);
	assert_null(sn_record_class_names[SN_CLASS_COUNT]);
	assert_ptr_equal(sn_fields[SN_F_CLASS].values, sn_record_class_names);
}

static unsigned int type_of(const struct sn_json_value *v)
{
	switch (v->type) {
	case SN_JSON_NULL: return SN_T_NULL;
	case SN_JSON_TRUE:
	case SN_JSON_FALSE: return SN_T_BOOLEAN;
	case SN_JSON_STRING: return SN_T_STRING;
	case SN_JSON_OBJECT: return SN_T_OBJECT;
	case SN_JSON_ARRAY: return SN_T_ARRAY;
	default: return (double)(long long)v->num == v->num ?
			SN_T_INTEGER | SN_T_NUMBER : SN_T_NUMBER;
	}
}

/* Object OBJ of the written record has exactly PARENT's record fields. */
static void check_object(int obj, enum sn_field parent)
{
	size_t want = 0, have = 0;

	for (int i = doc.v[obj].first; i >= 0; i = doc.v[i].next)
		have++;
	for (int f = 0; f < SN_F_COUNT; f++) {
		const struct sn_field_def *d = &sn_fields[f];
		int i;

		if (d->parent != parent || !(d->docs & SN_IN_RECORD))
			continue;
		want++;
		i = sn_json_member(&doc, obj, d->key);
		if (i < 0)
			fail_msg("the record lacks \"%s\": %s", d->key, line);
		if (!(type_of(&doc.v[i]) & d->types))
			fail_msg("\"%s\" has a type the table does not allow: %s",
				 d->key, line);
		if (doc.v[i].type == SN_JSON_OBJECT)
			check_object(i, (enum sn_field)f);
		if (doc.v[i].type == SN_JSON_ARRAY)
			for (int e = doc.v[i].first; e >= 0; e = doc.v[e].next)
				check_object(e, (enum sn_field)f);
	}
	if (have != want)
		fail_msg("%zu keys where the table has %zu: %s", have, want, line);
}

/* The helper's --json of each mode, as nccl-warmup prints it (abridged). */
static const struct {
	const char *mode;
	enum sn_record_class class;
	const char *json;
} runs[] = {
	{ "check", SN_CLASS_OK,
	  "{\"version\":1,\"status\":\"ok\",\"exit_code\":0,\"mode\":\"check\","
	  "\"nccl_version\":\"2.28.9\",\"nccl_source\":\"system\",\"gpus\":"
	  "[{\"index\":0,\"busid\":\"0000:01:00.0\",\"uuid\":\"GPU-a\","
	  "\"name\":\"NVIDIA H200\",\"mig\":false,\"nccl_mem_mib\":null}],"
	  "\"timings_ms\":{\"cuda_init\":600,\"comm_init\":null,\"total\":700}}" },
	{ "comm", SN_CLASS_OK,
	  "{\"version\":1,\"status\":\"ok\",\"exit_code\":0,\"mode\":\"comm\","
	  "\"gpus\":[{\"index\":0,\"busid\":\"0000:01:00.0\"},{\"index\":1,"
	  "\"busid\":\"0000:02:00.0\",\"name\":\"NVIDIA A100\"}],"
	  "\"collectives\":{\"allreduce\":1.5,\"sendrecv\":2},"
	  "\"timings_ms\":{\"comm_init\":480,\"collectives\":3,\"total\":900}}" },
	{ "bandwidth", SN_CLASS_OK,
	  "{\"version\":1,\"status\":\"ok\",\"exit_code\":0,"
	  "\"busbw_gbps\":350.5,\"bytes\":1048576,\"timings_ms\":{\"bandwidth\":30}}" },
	{ "fabric", SN_CLASS_PEER_FAILED,
	  "{\"version\":1,\"status\":\"peer_failed\",\"exit_code\":10,"
	  "\"transport\":\"NET/IB\",\"fabric\":{\"nodes\":3,\"blame_index\":1,"
	  "\"blame_node\":\"n2\"}}" },
	{ "comm", SN_CLASS_NCCL_ERROR,
	  "{\"version\":1,\"status\":\"nccl_error\",\"exit_code\":5,"
	  "\"message\":\"ncclAllGather failed\",\"failed_op\":\"allgather\"}" },
};

static void fill(struct sn_record *r, const char *mode,
		 enum sn_record_class class, struct sn_warmup_result *res)
{
	memset(r, 0, sizeof(*r));
	r->source = "spank";
	r->time = 1795389000.25;
	snprintf(r->node, sizeof(r->node), "n1");
	r->job = 42;
	r->step = 3;
	r->uid = 1000;
	snprintf(r->mode, sizeof(r->mode), "%s", mode);
	r->pass = class == SN_CLASS_OK;
	r->class = class;
	r->exit_code = res ? res->exit_code : -1;
	r->policy = "warn";
	r->elapsed_ms = 950;
	r->result = res;
}

static size_t format_and_parse(const struct sn_record *r)
{
	size_t len = sn_record_format(r, line, sizeof(line));

	assert_true(len > 0);
	assert_int_equal(sn_json_parse(&doc, line, len, &err), 0);
	return len;
}

static void test_writer_writes_the_table(void **state)
{
	static struct sn_warmup_result res;
	struct sn_record r;
	size_t len;
	int i;

	(void)state;
	for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
		assert_int_equal(sn_warmup_result_parse(runs[k].json,
							strlen(runs[k].json),
							&res, &err), 0);
		fill(&r, runs[k].mode, runs[k].class, &res);
		len = format_and_parse(&r);
		check_object(0, SN_F_TOP);
		assert_int_equal(sn_record_read(line, len, &doc, &view, &err), 0);
		assert_string_equal(view.mode, runs[k].mode);
		assert_string_equal(view.class, sn_record_class_names[runs[k].class]);
	}
	/* No result (a crash), the batch step, the Prolog. */
	fill(&r, "comm", SN_CLASS_CRASH, NULL);
	r.signal = 9;
	r.step = -1;
	r.step_kind = "batch";
	snprintf(r.cluster, sizeof(r.cluster), "c1");
	format_and_parse(&r);
	check_object(0, SN_F_TOP);
	/* The step is a number or null, never a word; its kind apart. */
	assert_non_null(strstr(line, "\"cluster\":\"c1\",\"job\":"));
	assert_non_null(strstr(line, "\"step\":null,\"step_kind\":\"batch\""));
	r.step = 3;
	r.step_kind = "normal";
	format_and_parse(&r);
	assert_non_null(strstr(line, "\"step\":3,\"step_kind\":\"normal\""));
	r.step = -1;
	r.step_kind = NULL;
	r.source = "prolog";
	r.policy = NULL;
	format_and_parse(&r);
	check_object(0, SN_F_TOP);
	i = sn_json_member(&doc, 0, "schema");
	assert_true(i >= 0 && doc.v[i].num == SN_RECORD_SCHEMA);
	i = sn_json_member(&doc, 0, "producer");
	assert_string_equal(sn_json_str(&doc, i), PACKAGE_NAME " " PACKAGE_VERSION);
	assert_non_null(strstr(line, "{\"record\":\"spank-nccl-warmup\",\"version\":1,\"schema\":"));
}

#define READ(text) sn_record_read(text, strlen(text), &doc, &view, &err)
#define HEAD "{\"record\":\"spank-nccl-warmup\","
#define BODY "\"ts\":1,\"node\":\"n\",\"verdict\":\"pass\",\"class\":\"ok\""

static void test_reader_versions(void **state)
{
	/* Each refused with its reason, from the table. */
	static const struct {
		const char *text, *why;
	} refused[] = {
		/* A newer major version, saying so. */
		{ HEAD "\"version\":2,\"schema\":1," BODY "}",
		  "record version 2 is newer than this reader's 1" },
		{ HEAD "\"version\":1,\"schema\":0," BODY "}",
		  "\"schema\" must be a number >= 1" },
		{ HEAD "\"version\":1,\"schema\":\"2\"," BODY "}",
		  "\"schema\" must be integer" },
		{ HEAD "\"version\":1.5," BODY "}", "\"version\" must be integer" },
		/* The table's types and values for what the view reads. */
		{ HEAD "\"version\":1," BODY ",\"gpu_count\":2.5}",
		  "\"gpu_count\" must be integer" },
		{ HEAD "\"version\":1," BODY ",\"timings_ms\":{\"total\":\"x\"}}",
		  "\"total\" must be number or null" },
		{ HEAD "\"version\":1," BODY ",\"source\":\"cron\"}",
		  "unknown \"source\" cron" },
		{ HEAD "\"version\":1," BODY ",\"reused\":\"yes\"}",
		  "\"reused\" must be boolean" },
	};

	(void)state;
	/* Revision 1: no "schema", no "producer". */
	assert_int_equal(READ(HEAD "\"version\":1," BODY ",\"mode\":\"comm\"}"), 0);
	assert_string_equal(view.mode, "comm");
	/* A newer revision: keys this reader does not know are ignored. */
	assert_int_equal(READ(HEAD "\"version\":1,\"schema\":99,"
			      "\"producer\":\"spank-nccl 9.0\"," BODY
			      ",\"new_key\":{\"x\":[1]}}"), 0);
	assert_string_equal(view.node, "n");
	for (size_t k = 0; k < sizeof(refused) / sizeof(refused[0]); k++) {
		assert_int_equal(READ(refused[k].text), -1);
		if (!strstr(err.msg, refused[k].why))
			fail_msg("\"%s\" lacks \"%s\" for %s", err.msg,
				 refused[k].why, refused[k].text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_writer_writes_the_table),
		cmocka_unit_test(test_reader_versions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

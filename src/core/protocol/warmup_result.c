/* SPDX-License-Identifier: MIT */
/*
 * The result schema of nccl-warmup --json (nccl-warmup(8)), read with the
 * strict reader of json_read.c; its keys are record_schema.c's.  The
 * helper runs as the job user, so its output is untrusted; keys not read
 * here are skipped (the helper may add keys: schema version 1 only ever
 * grows; "mode" and "node" are the plugin's own), a known key given
 * twice or with the wrong type is refused.
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "protocol/json_read.h"
#include "protocol/record_schema.h"
#include "protocol/warmup_result.h"

/* A number >= 0, or null (read as -1: unknown). */
static int read_opt_number(struct sn_json_reader *r, double *out,
			   const char *field)
{
	if (sn_json_peek(r) == 'n') {
		*out = -1;
		return sn_json_literal(r, "null");
	}
	if (sn_json_number(r, out))
		return -1;
	if (*out < 0) {
		sn_error_set(r->err, "nccl-warmup result: \"%s\" is negative",
			     field);
		return -1;
	}
	return 0;
}

enum seen_bit {
	SEEN_VERSION = 1 << 0,
	SEEN_STATUS = 1 << 1,
	SEEN_EXIT = 1 << 2,
	SEEN_MESSAGE = 1 << 4,
	SEEN_SUMMARY = 1 << 5,
	SEEN_NCCL = 1 << 6,
	SEEN_GPUS = 1 << 7,
	SEEN_BUSBW = 1 << 8,
	SEEN_TIMINGS = 1 << 9,
	SEEN_INDEX = 1 << 10,
	SEEN_BUSID = 1 << 11,
	SEEN_UUID = 1 << 12,
	SEEN_TOTAL = 1 << 13,
	SEEN_NOTE = 1 << 14,
	SEEN_NAME = 1 << 15,
	SEEN_MEM = 1 << 16,
	SEEN_DRIVER = 1 << 17,
	SEEN_CUDA_DRIVER = 1 << 18,
	SEEN_NCCL_PATH = 1 << 19,
	SEEN_NCCL_SOURCE = 1 << 20,
	SEEN_COLLECTIVES = 1 << 21,
	SEEN_FAILED_OP = 1 << 22,
	SEEN_TRANSPORT = 1 << 23,
	SEEN_FABRIC = 1 << 24,
	SEEN_BLAME_NODE = 1 << 25,
	SEEN_FAULT = 1 << 26,
	SEEN_BYTES = 1 << 27,
	SEEN_HEALTH_STATUS = 1 << 28,
	SEEN_HEALTH_FINDINGS = 1 << 29,
};

_Static_assert(SN_F_T_TEARDOWN - SN_F_T_CUDA_INIT + 1 == SN_RESULT_PHASES,
	       "phase_ms[] is the schema's timings_ms phases");
_Static_assert(SN_F_C_SENDRECV - SN_F_C_ALLREDUCE + 1 == SN_RESULT_COLLECTIVES,
	       "collective_ms[] is the schema's collectives");

static bool is(const char *key, enum sn_field f)
{
	return strcmp(key, sn_field_key(f)) == 0;
}

/* Index of KEY among the N fields from FIRST, or -1. */
static int field_index(enum sn_field first, int n, const char *key)
{
	for (int i = 0; i < n; i++)
		if (is(key, (enum sn_field)(first + i)))
			return i;
	return -1;
}

struct top_ctx {
	struct sn_warmup_result *out;
	unsigned int seen;
};

static int once(struct sn_json_reader *r, unsigned int *seen, unsigned int bit,
		const char *key)
{
	if (*seen & bit) {
		sn_error_set(r->err, "nccl-warmup result: duplicate key \"%s\"",
			     key);
		return -1;
	}
	*seen |= bit;
	return 0;
}

struct gpu_ctx {
	struct sn_warmup_result *out;
	size_t i;
	unsigned int seen;
};

static int gpu_member(struct sn_json_reader *r, const char *key, int depth,
		      void *ctx)
{
	struct gpu_ctx *g = ctx;
	long index;

	if (is(key, SN_F_GPU_INDEX)) {
		if (once(r, &g->seen, SEEN_INDEX, key) ||
		    sn_json_int(r, 0, 1 << 20, &index, "gpus[].index"))
			return -1;
		g->out->gpus[g->i].index = (int)index;
		return 0;
	}
	if (is(key, SN_F_GPU_BUSID))
		return once(r, &g->seen, SEEN_BUSID, key) ||
		       sn_json_string(r, g->out->gpus[g->i].busid,
				   sizeof(g->out->gpus[g->i].busid),
				   "gpus[].busid");
	if (is(key, SN_F_GPU_UUID))
		return once(r, &g->seen, SEEN_UUID, key) ||
		       sn_json_string(r, g->out->gpus[g->i].uuid,
				   sizeof(g->out->gpus[g->i].uuid),
				   "gpus[].uuid");
	if (is(key, SN_F_GPU_NAME))
		return once(r, &g->seen, SEEN_NAME, key) ||
		       sn_json_string_or_null(r, g->out->gpus[g->i].name,
					   sizeof(g->out->gpus[g->i].name),
					   "gpus[].name");
	if (is(key, SN_F_GPU_NCCL_MEM_MIB))
		return once(r, &g->seen, SEEN_MEM, key) ||
		       read_opt_number(r, &g->out->gpus[g->i].nccl_mem_mib,
				       "gpus[].nccl_mem_mib");
	return sn_json_skip(r, depth + 1);
}

static int read_gpu(struct sn_json_reader *r, int depth, void *ctx)
{
	struct sn_warmup_result *out = ctx;
	struct gpu_ctx g = { .out = out, .i = out->n_gpus };

	if (out->n_gpus == SN_RESULT_MAX_GPUS) {
		sn_error_set(r->err, "nccl-warmup result: more than %d GPUs",
			     SN_RESULT_MAX_GPUS);
		return -1;
	}
	out->gpus[g.i].nccl_mem_mib = -1;
	if (sn_json_object(r, depth, gpu_member, &g))
		return -1;
	if (!(g.seen & SEEN_INDEX) || !(g.seen & SEEN_BUSID)) {
		sn_error_set(r->err,
			     "nccl-warmup result: gpus[%zu] lacks \"index\" or \"busid\"",
			     g.i);
		return -1;
	}
	out->n_gpus++;
	return 0;
}

static int read_gpus(struct sn_json_reader *r, struct sn_warmup_result *out,
		     int depth)
{
	return sn_json_array(r, depth, read_gpu, out);
}

static int timing_member(struct sn_json_reader *r, const char *key, int depth,
			 void *ctx)
{
	struct top_ctx *t = ctx;

	int i;

	if (is(key, SN_F_T_TOTAL))
		return once(r, &t->seen, SEEN_TOTAL, key) ||
		       sn_json_number_or_null(r, &t->out->total_ms);
	i = field_index(SN_F_T_CUDA_INIT, SN_RESULT_PHASES, key);
	if (i >= 0) {
		if (!(t->out->phase_ms[i] < 0)) {
			sn_error_set(r->err,
				     "nccl-warmup result: duplicate key \"%s\"",
				     key);
			return -1;
		}
		return read_opt_number(r, &t->out->phase_ms[i], key);
	}
	return sn_json_skip(r, depth + 1);
}

static int collective_member(struct sn_json_reader *r, const char *key, int depth,
			     void *ctx)
{
	struct top_ctx *t = ctx;
	int i = field_index(SN_F_C_ALLREDUCE, SN_RESULT_COLLECTIVES, key);

	if (i < 0)
		return sn_json_skip(r, depth + 1);
	if (!(t->out->collective_ms[i] < 0)) {
		sn_error_set(r->err, "nccl-warmup result: duplicate key \"%s\"",
			     key);
		return -1;
	}
	return read_opt_number(r, &t->out->collective_ms[i], key);
}

/* An integer >= 0 or null (-1). */
static int read_opt_int(struct sn_json_reader *r, long *out, const char *key)
{
	if (sn_json_peek(r) == 'n') {
		*out = -1;
		return sn_json_literal(r, "null");
	}
	return sn_json_int(r, 0, 1L << 30, out, key);
}

/* "fabric": {...}: what the record keeps of it. */
static int fabric_member(struct sn_json_reader *r, const char *key, int depth,
			 void *ctx)
{
	struct top_ctx *t = ctx;
	struct sn_result_fabric *fab = &t->out->fabric;
	long *ints[] = { &fab->nodes, &fab->node_index, &fab->ranks,
			 &fab->rank_base };

	for (int i = 0; i < 4; i++)
		if (is(key, (enum sn_field)(SN_F_FAB_NODES + i)))
			return read_opt_int(r, ints[i], key);
	if (is(key, SN_F_FAB_REFUSED))
		return read_opt_int(r, &fab->refused, key);
	if (is(key, SN_F_FAB_COORDINATOR))
		return sn_json_string_or_null(r, fab->coordinator,
					   sizeof(fab->coordinator), key);
	if (is(key, SN_F_BLAME_NODE))
		return once(r, &t->seen, SEEN_BLAME_NODE, key) ||
		       sn_json_string_or_null(r, t->out->blame_node,
					   sizeof(t->out->blame_node),
					   "fabric.blame_node");
	return sn_json_skip(r, depth + 1);
}

/* The optional string keys (null reads as ""). */
static int top_strings(struct sn_json_reader *r, const char *key, int depth,
		       struct top_ctx *t)
{
	static const struct {
		enum sn_field field;
		unsigned int bit;
		size_t off, cap;
	} keys[] = {
#define S(k, b, f) { k, b, offsetof(struct sn_warmup_result, f), \
		     sizeof(((struct sn_warmup_result *)0)->f) }
		S(SN_F_DRIVER_VERSION, SEEN_DRIVER, driver_version),
		S(SN_F_NCCL_PATH, SEEN_NCCL_PATH, nccl_path),
		S(SN_F_NCCL_SOURCE, SEEN_NCCL_SOURCE, nccl_source),
		S(SN_F_FAILED_OP, SEEN_FAILED_OP, failed_op),
		S(SN_F_TRANSPORT, SEEN_TRANSPORT, transport),
		S(SN_F_FAULT, SEEN_FAULT, fault),
		S(SN_F_HEALTH_STATUS, SEEN_HEALTH_STATUS, health_status),
		S(SN_F_HEALTH_FINDINGS, SEEN_HEALTH_FINDINGS, health_findings),
#undef S
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (is(key, keys[i].field))
			return once(r, &t->seen, keys[i].bit, key) ||
			       sn_json_string_or_null(r, (char *)t->out +
						   keys[i].off, keys[i].cap,
						   key);
	return sn_json_skip(r, depth + 1);
}

static int top_member(struct sn_json_reader *r, const char *key, int depth,
		      void *ctx)
{
	struct top_ctx *t = ctx;
	struct sn_warmup_result *out = t->out;
	long v;

	if (is(key, SN_F_VERSION)) {
		if (once(r, &t->seen, SEEN_VERSION, key) ||
		    sn_json_int(r, 0, 1000000, &v, key))
			return -1;
		if (v != 1) {
			sn_error_set(r->err,
				     "nccl-warmup result: unsupported version %ld (expected 1)",
				     v);
			return -1;
		}
		return 0;
	}
	if (is(key, SN_F_EXIT_CODE)) {
		if (once(r, &t->seen, SEEN_EXIT, key) ||
		    sn_json_int(r, 0, 255, &v, key))
			return -1;
		out->exit_code = (int)v;
		return 0;
	}
	if (is(key, SN_F_BYTES)) {
		if (once(r, &t->seen, SEEN_BYTES, key))
			return -1;
		if (sn_json_peek(r) == 'n')
			return sn_json_literal(r, "null");
		if (sn_json_int(r, SN_WARMUP_BYTES_MIN, SN_WARMUP_BYTES_MAX,
				&v, key))
			return -1;
		out->bytes = v;
		return 0;
	}
	if (is(key, SN_F_STATUS))
		return once(r, &t->seen, SEEN_STATUS, key) ||
		       sn_json_string(r, out->status, sizeof(out->status), key);
	if (is(key, SN_F_MESSAGE))
		return once(r, &t->seen, SEEN_MESSAGE, key) ||
		       sn_json_string_or_null(r, out->message,
					      sizeof(out->message), key);
	if (is(key, SN_F_NOTE))
		return once(r, &t->seen, SEEN_NOTE, key) ||
		       sn_json_string(r, out->note, sizeof(out->note), key);
	if (is(key, SN_F_SUMMARY))
		return once(r, &t->seen, SEEN_SUMMARY, key) ||
		       sn_json_string(r, out->summary, sizeof(out->summary), key);
	if (is(key, SN_F_NCCL_VERSION))
		return once(r, &t->seen, SEEN_NCCL, key) ||
		       sn_json_string_or_null(r, out->nccl_version,
					   sizeof(out->nccl_version), key);
	if (is(key, SN_F_GPUS))
		return once(r, &t->seen, SEEN_GPUS, key) ||
		       read_gpus(r, out, depth + 1);
	if (is(key, SN_F_BUSBW))
		return once(r, &t->seen, SEEN_BUSBW, key) ||
		       sn_json_number_or_null(r, &out->busbw_gbps);
	if (is(key, SN_F_TIMINGS)) {
		if (once(r, &t->seen, SEEN_TIMINGS, key))
			return -1;
		if (sn_json_peek(r) == 'n')
			return sn_json_literal(r, "null");
		return sn_json_object(r, depth + 1, timing_member, t);
	}
	if (is(key, SN_F_COLLECTIVES)) {
		if (once(r, &t->seen, SEEN_COLLECTIVES, key))
			return -1;
		if (sn_json_peek(r) == 'n')
			return sn_json_literal(r, "null");
		return sn_json_object(r, depth + 1, collective_member, t);
	}
	if (is(key, SN_F_FABRIC)) {
		if (once(r, &t->seen, SEEN_FABRIC, key))
			return -1;
		if (sn_json_peek(r) == 'n')
			return sn_json_literal(r, "null");
		out->fabric.present = true;
		return sn_json_object(r, depth + 1, fabric_member, t);
	}
	if (is(key, SN_F_CUDA_DRIVER_VERSION)) {
		if (once(r, &t->seen, SEEN_CUDA_DRIVER, key))
			return -1;
		if (sn_json_peek(r) == 'n')
			return sn_json_literal(r, "null");
		return sn_json_int(r, 0, 10000000, &out->cuda_driver_version,
				key);
	}
	return top_strings(r, key, depth, t);
}

/* The optional numbers start as "not reported". */
static void unknown_optional(struct sn_warmup_result *out)
{
	for (int i = 0; i < SN_RESULT_PHASES; i++)
		out->phase_ms[i] = -1;
	for (int i = 0; i < SN_RESULT_COLLECTIVES; i++)
		out->collective_ms[i] = -1;
	out->cuda_driver_version = -1;
	out->bytes = -1;
	out->fabric.nodes = out->fabric.node_index = -1;
	out->fabric.ranks = out->fabric.rank_base = -1;
	out->fabric.refused = -1;
}

int sn_warmup_result_parse(const char *text, size_t len,
			   struct sn_warmup_result *out, struct sn_error *err)
{
	struct sn_json_reader r = {
		.text = text, .len = len, .subject = "nccl-warmup result",
		.err = err,
	};
	struct top_ctx t = { .out = out };

	sn_error_clear(err);
	if (!text || !out) {
		sn_error_set(err, "nccl-warmup result: no input");
		return -1;
	}
	memset(out, 0, sizeof(*out));
	unknown_optional(out);
	if (len > SN_RESULT_MAX_BYTES) {
		sn_error_set(err,
			     "nccl-warmup result is %zu bytes, more than the limit of %d",
			     len, SN_RESULT_MAX_BYTES);
		return -1;
	}
	if (memchr(text, '\0', len)) {
		sn_error_set(err, "nccl-warmup result contains a NUL byte");
		return -1;
	}
	if (len == 0 || sn_json_peek(&r) == -1) {
		sn_error_set(err, "nccl-warmup result is empty");
		return -1;
	}
	if (sn_json_object(&r, 0, top_member, &t))
		goto bad;
	if (sn_json_peek(&r) != -1) {
		sn_json_fail(&r, "trailing data after the object");
		goto bad;
	}
	if ((t.seen & (SEEN_VERSION | SEEN_STATUS | SEEN_EXIT)) !=
	    (SEEN_VERSION | SEEN_STATUS | SEEN_EXIT)) {
		sn_error_set(err,
			     "nccl-warmup result lacks \"version\", \"status\" or \"exit_code\"");
		goto bad;
	}
	return 0;
bad:
	memset(out, 0, sizeof(*out));
	unknown_optional(out);
	return -1;
}

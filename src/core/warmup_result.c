/* SPDX-License-Identifier: MIT */
/*
 * A strict, bounded reader for the one JSON object nccl-warmup prints.
 * The helper runs as the job user, so its output is untrusted: every
 * length is bounded, nesting is limited, numbers must be finite, strings
 * must be valid JSON (no raw control characters, no \u0000), and the
 * object must be the only thing in the text.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strutil.h"
#include "warmup_result.h"

/* Deep enough for the schema (3 levels) plus room for future fields. */
#define MAX_DEPTH 16
#define MAX_NUMBER_TEXT 64

struct reader {
	const char *text;
	size_t len;
	size_t pos;
	struct sn_error *err;
};

static int fail(struct reader *r, const char *what)
{
	sn_error_set(r->err, "malformed nccl-warmup result at byte %zu: %s",
		     r->pos, what);
	return -1;
}

static void skip_ws(struct reader *r)
{
	while (r->pos < r->len) {
		char c = r->text[r->pos];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		r->pos++;
	}
}

static int peek(struct reader *r)
{
	skip_ws(r);
	return r->pos < r->len ? (unsigned char)r->text[r->pos] : -1;
}

static int expect(struct reader *r, char c)
{
	if (peek(r) != (unsigned char)c) {
		char what[32];

		snprintf(what, sizeof(what), "expected '%c'", c);
		return fail(r, what);
	}
	r->pos++;
	return 0;
}

static int literal(struct reader *r, const char *word)
{
	size_t n = strlen(word);

	if (r->len - r->pos < n || memcmp(r->text + r->pos, word, n) != 0)
		return fail(r, "invalid literal");
	r->pos += n;
	return 0;
}

static int hex4(struct reader *r, unsigned int *out)
{
	unsigned int v = 0;

	if (r->len - r->pos < 4)
		return fail(r, "truncated \\u escape");
	for (int i = 0; i < 4; i++) {
		int digit = sn_hex_digit(r->text[r->pos++], true);

		if (digit < 0)
			return fail(r, "bad hex digit in \\u escape");
		v = v << 4 | (unsigned int)digit;
	}
	*out = v;
	return 0;
}

/* Appends N bytes to DST (capacity CAP, NULL = discard). */
static int put(struct reader *r, char *dst, size_t cap, size_t *o,
	       const char *bytes, size_t n, const char *field)
{
	if (!dst)
		return 0;
	if (*o + n >= cap) {
		sn_error_set(r->err,
			     "nccl-warmup result: \"%s\" is longer than %zu bytes",
			     field, cap - 1);
		return -1;
	}
	memcpy(dst + *o, bytes, n);
	*o += n;
	dst[*o] = '\0';
	return 0;
}

static size_t utf8_encode(unsigned int cp, char out[4])
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static int read_escape(struct reader *r, char out[4], size_t *n)
{
	unsigned int cp, lo;
	char c;

	if (r->pos >= r->len)
		return fail(r, "truncated escape");
	c = r->text[r->pos++];
	*n = 1;
	switch (c) {
	case '"': out[0] = '"'; return 0;
	case '\\': out[0] = '\\'; return 0;
	case '/': out[0] = '/'; return 0;
	case 'b': out[0] = '\b'; return 0;
	case 'f': out[0] = '\f'; return 0;
	case 'n': out[0] = '\n'; return 0;
	case 'r': out[0] = '\r'; return 0;
	case 't': out[0] = '\t'; return 0;
	case 'u':
		break;
	default:
		return fail(r, "invalid escape in string");
	}
	if (hex4(r, &cp))
		return -1;
	if (cp == 0)
		return fail(r, "\\u0000 is not allowed");
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return fail(r, "lone low surrogate in \\u escape");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (r->len - r->pos < 2 || r->text[r->pos] != '\\' ||
		    r->text[r->pos + 1] != 'u')
			return fail(r, "high surrogate without low surrogate");
		r->pos += 2;
		if (hex4(r, &lo))
			return -1;
		if (lo < 0xdc00 || lo > 0xdfff)
			return fail(r, "invalid surrogate pair");
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	*n = utf8_encode(cp, out);
	return 0;
}

/* Reads a string into DST (CAP bytes; NULL skips it). */
static int read_string(struct reader *r, char *dst, size_t cap,
		       const char *field)
{
	size_t o = 0;

	if (expect(r, '"'))
		return -1;
	if (dst)
		dst[0] = '\0';
	for (;;) {
		char buf[4];
		size_t n = 1;
		unsigned char c;

		if (r->pos >= r->len)
			return fail(r, "unterminated string");
		c = (unsigned char)r->text[r->pos];
		if (c == '"') {
			r->pos++;
			return 0;
		}
		if (c < 0x20)
			return fail(r, "control character in string");
		r->pos++;
		if (c == '\\') {
			if (read_escape(r, buf, &n))
				return -1;
		} else {
			buf[0] = (char)c;
		}
		if (put(r, dst, cap, &o, buf, n, field))
			return -1;
	}
}

/* A JSON number, strictly per RFC 8259, finite. */
static int read_number(struct reader *r, double *out)
{
	char text[MAX_NUMBER_TEXT + 1];
	size_t start, n;
	char *end;
	double v;

	skip_ws(r);
	start = r->pos;
#define AT(c) (r->pos < r->len && r->text[r->pos] == (c))
#define DIGIT() (r->pos < r->len && r->text[r->pos] >= '0' && \
		 r->text[r->pos] <= '9')
	if (AT('-'))
		r->pos++;
	if (AT('0')) {
		r->pos++;
	} else if (DIGIT()) {
		while (DIGIT())
			r->pos++;
	} else {
		return fail(r, "expected a number");
	}
	if (AT('.')) {
		r->pos++;
		if (!DIGIT())
			return fail(r, "digit expected after '.'");
		while (DIGIT())
			r->pos++;
	}
	if (AT('e') || AT('E')) {
		r->pos++;
		if (AT('+') || AT('-'))
			r->pos++;
		if (!DIGIT())
			return fail(r, "digit expected in exponent");
		while (DIGIT())
			r->pos++;
	}
#undef AT
#undef DIGIT
	n = r->pos - start;
	if (n > MAX_NUMBER_TEXT)
		return fail(r, "number too long");
	memcpy(text, r->text + start, n);
	text[n] = '\0';
	errno = 0;
	v = strtod(text, &end);
	if (*end != '\0' || !isfinite(v) || errno == ERANGE)
		return fail(r, "number out of range");
	*out = v;
	return 0;
}

static int read_int(struct reader *r, long min, long max, long *out,
		    const char *field)
{
	double v;

	if (read_number(r, &v))
		return -1;
	/* Range first: the cast below is only defined inside it. */
	if (v < (double)min || v > (double)max || (double)(long)v != v) {
		sn_error_set(r->err,
			     "nccl-warmup result: \"%s\" must be an integer in %ld..%ld",
			     field, min, max);
		return -1;
	}
	*out = (long)v;
	return 0;
}

/* A number, or null (read as 0). */
static int read_number_or_null(struct reader *r, double *out)
{
	if (peek(r) == 'n') {
		*out = 0;
		return literal(r, "null");
	}
	return read_number(r, out);
}

/* A string, or null (read as ""). */
static int read_string_or_null(struct reader *r, char *dst, size_t cap,
			       const char *field)
{
	if (peek(r) == 'n') {
		dst[0] = '\0';
		return literal(r, "null");
	}
	return read_string(r, dst, cap, field);
}

static int skip_value(struct reader *r, int depth);

static int skip_container(struct reader *r, int depth, char close)
{
	if (depth >= MAX_DEPTH)
		return fail(r, "nesting too deep");
	r->pos++;
	if (peek(r) == (unsigned char)close) {
		r->pos++;
		return 0;
	}
	for (;;) {
		if (close == '}') {
			if (read_string(r, NULL, 0, "key") || expect(r, ':'))
				return -1;
		}
		if (skip_value(r, depth + 1))
			return -1;
		if (peek(r) == ',') {
			r->pos++;
			continue;
		}
		return expect(r, close);
	}
}

static int skip_value(struct reader *r, int depth)
{
	double ignored;

	switch (peek(r)) {
	case '{':
		return skip_container(r, depth, '}');
	case '[':
		return skip_container(r, depth, ']');
	case '"':
		return read_string(r, NULL, 0, "value");
	case 't':
		return literal(r, "true");
	case 'f':
		return literal(r, "false");
	case 'n':
		return literal(r, "null");
	case -1:
		return fail(r, "unexpected end of input");
	default:
		return read_number(r, &ignored);
	}
}

/*
 * Iterates over the members of an object at DEPTH, calling MEMBER for each
 * key.  MEMBER reads the value (or skips it) and returns 0 or -1.
 */
typedef int (*member_fn)(struct reader *r, const char *key, int depth,
			 void *ctx);

static int read_object(struct reader *r, int depth, member_fn member,
		       void *ctx)
{
	char key[64];

	if (depth >= MAX_DEPTH)
		return fail(r, "nesting too deep");
	if (expect(r, '{'))
		return -1;
	if (peek(r) == '}') {
		r->pos++;
		return 0;
	}
	for (;;) {
		size_t key_pos = r->pos;

		if (read_string(r, key, sizeof(key), "key")) {
			/* An over-long key cannot be one of ours: skip it. */
			r->pos = key_pos;
			sn_error_clear(r->err);
			if (read_string(r, NULL, 0, "key"))
				return -1;
			key[0] = '\0';
		}
		if (expect(r, ':'))
			return -1;
		if (key[0] ? member(r, key, depth, ctx) :
			     skip_value(r, depth + 1))
			return -1;
		if (peek(r) == ',') {
			r->pos++;
			continue;
		}
		return expect(r, '}');
	}
}

/* ---- schema ---------------------------------------------------------- */

enum seen_bit {
	SEEN_VERSION = 1 << 0,
	SEEN_STATUS = 1 << 1,
	SEEN_EXIT = 1 << 2,
	SEEN_MODE = 1 << 3,
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
};

struct top_ctx {
	struct sn_warmup_result *out;
	unsigned int seen;
};

static int once(struct reader *r, unsigned int *seen, unsigned int bit,
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

static int gpu_member(struct reader *r, const char *key, int depth,
		      void *ctx)
{
	struct gpu_ctx *g = ctx;
	long index;

	if (strcmp(key, "index") == 0) {
		if (once(r, &g->seen, SEEN_INDEX, key) ||
		    read_int(r, 0, 1 << 20, &index, "gpus[].index"))
			return -1;
		g->out->gpus[g->i].index = (int)index;
		return 0;
	}
	if (strcmp(key, "busid") == 0)
		return once(r, &g->seen, SEEN_BUSID, key) ||
		       read_string(r, g->out->gpus[g->i].busid,
				   sizeof(g->out->gpus[g->i].busid),
				   "gpus[].busid");
	if (strcmp(key, "uuid") == 0)
		return once(r, &g->seen, SEEN_UUID, key) ||
		       read_string(r, g->out->gpus[g->i].uuid,
				   sizeof(g->out->gpus[g->i].uuid),
				   "gpus[].uuid");
	return skip_value(r, depth + 1);
}

static int read_gpus(struct reader *r, struct sn_warmup_result *out,
		     int depth)
{
	if (expect(r, '['))
		return -1;
	if (peek(r) == ']') {
		r->pos++;
		return 0;
	}
	for (;;) {
		struct gpu_ctx g = { .out = out, .i = out->n_gpus };

		if (out->n_gpus == SN_RESULT_MAX_GPUS) {
			sn_error_set(r->err,
				     "nccl-warmup result: more than %d GPUs",
				     SN_RESULT_MAX_GPUS);
			return -1;
		}
		if (read_object(r, depth + 1, gpu_member, &g))
			return -1;
		if (!(g.seen & SEEN_INDEX) || !(g.seen & SEEN_BUSID)) {
			sn_error_set(r->err,
				     "nccl-warmup result: gpus[%zu] lacks \"index\" or \"busid\"",
				     g.i);
			return -1;
		}
		out->n_gpus++;
		if (peek(r) == ',') {
			r->pos++;
			continue;
		}
		return expect(r, ']');
	}
}

static int timing_member(struct reader *r, const char *key, int depth,
			 void *ctx)
{
	struct top_ctx *t = ctx;

	if (strcmp(key, "total") == 0)
		return once(r, &t->seen, SEEN_TOTAL, key) ||
		       read_number_or_null(r, &t->out->total_ms);
	return skip_value(r, depth + 1);
}

static int top_member(struct reader *r, const char *key, int depth,
		      void *ctx)
{
	struct top_ctx *t = ctx;
	struct sn_warmup_result *out = t->out;
	long v;

	if (strcmp(key, "version") == 0) {
		if (once(r, &t->seen, SEEN_VERSION, key) ||
		    read_int(r, 0, 1000000, &v, "version"))
			return -1;
		if (v != 1) {
			sn_error_set(r->err,
				     "nccl-warmup result: unsupported version %ld (expected 1)",
				     v);
			return -1;
		}
		return 0;
	}
	if (strcmp(key, "exit_code") == 0) {
		if (once(r, &t->seen, SEEN_EXIT, key) ||
		    read_int(r, 0, 255, &v, "exit_code"))
			return -1;
		out->exit_code = (int)v;
		return 0;
	}
	if (strcmp(key, "status") == 0)
		return once(r, &t->seen, SEEN_STATUS, key) ||
		       read_string(r, out->status, sizeof(out->status), key);
	if (strcmp(key, "mode") == 0)
		return once(r, &t->seen, SEEN_MODE, key) ||
		       read_string(r, out->mode, sizeof(out->mode), key);
	if (strcmp(key, "message") == 0)
		return once(r, &t->seen, SEEN_MESSAGE, key) ||
		       read_string(r, out->message, sizeof(out->message), key);
	if (strcmp(key, "note") == 0)
		return once(r, &t->seen, SEEN_NOTE, key) ||
		       read_string(r, out->note, sizeof(out->note), key);
	if (strcmp(key, "summary") == 0)
		return once(r, &t->seen, SEEN_SUMMARY, key) ||
		       read_string(r, out->summary, sizeof(out->summary), key);
	if (strcmp(key, "nccl_version") == 0)
		return once(r, &t->seen, SEEN_NCCL, key) ||
		       read_string_or_null(r, out->nccl_version,
					   sizeof(out->nccl_version), key);
	if (strcmp(key, "gpus") == 0)
		return once(r, &t->seen, SEEN_GPUS, key) ||
		       read_gpus(r, out, depth + 1);
	if (strcmp(key, "busbw_gbps") == 0)
		return once(r, &t->seen, SEEN_BUSBW, key) ||
		       read_number_or_null(r, &out->busbw_gbps);
	if (strcmp(key, "timings_ms") == 0) {
		if (once(r, &t->seen, SEEN_TIMINGS, key))
			return -1;
		if (peek(r) == 'n')
			return literal(r, "null");
		return read_object(r, depth + 1, timing_member, t);
	}
	return skip_value(r, depth + 1);
}

int sn_warmup_result_parse(const char *text, size_t len,
			   struct sn_warmup_result *out, struct sn_error *err)
{
	struct reader r = { .text = text, .len = len, .err = err };
	struct top_ctx t = { .out = out };

	sn_error_clear(err);
	if (!text || !out) {
		sn_error_set(err, "nccl-warmup result: no input");
		return -1;
	}
	memset(out, 0, sizeof(*out));
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
	if (len == 0 || peek(&r) == -1) {
		sn_error_set(err, "nccl-warmup result is empty");
		return -1;
	}
	if (read_object(&r, 0, top_member, &t))
		goto bad;
	if (peek(&r) != -1) {
		fail(&r, "trailing data after the object");
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
	return -1;
}

/* SPDX-License-Identifier: MIT */
/*
 * A strict, bounded JSON reader for untrusted text (the helper's result):
 * every length is bounded, nesting is limited, numbers must be finite,
 * strings must be valid JSON (no raw control characters, no \u0000).
 * Values are read in place by the caller's schema (warmup_result.c), one
 * object member at a time; what it does not know is skipped, checked.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/json_read.h"
#include "base/strutil.h"

#define MAX_NUMBER_TEXT 64

int sn_json_fail(struct sn_json_reader *r, const char *what)
{
	sn_error_set(r->err, "malformed %s at byte %zu: %s",
		     r->subject, r->pos, what);
	return -1;
}

static void skip_ws(struct sn_json_reader *r)
{
	while (r->pos < r->len) {
		char c = r->text[r->pos];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		r->pos++;
	}
}

int sn_json_peek(struct sn_json_reader *r)
{
	skip_ws(r);
	return r->pos < r->len ? (unsigned char)r->text[r->pos] : -1;
}

int sn_json_expect(struct sn_json_reader *r, char c)
{
	if (sn_json_peek(r) != (unsigned char)c) {
		char what[32];

		snprintf(what, sizeof(what), "expected '%c'", c);
		return sn_json_fail(r, what);
	}
	r->pos++;
	return 0;
}

int sn_json_literal(struct sn_json_reader *r, const char *word)
{
	size_t n = strlen(word);

	if (r->len - r->pos < n || memcmp(r->text + r->pos, word, n) != 0)
		return sn_json_fail(r, "invalid literal");
	r->pos += n;
	return 0;
}

static int hex4(struct sn_json_reader *r, unsigned int *out)
{
	unsigned int v = 0;

	if (r->len - r->pos < 4)
		return sn_json_fail(r, "truncated \\u escape");
	for (int i = 0; i < 4; i++) {
		int digit = sn_hex_digit(r->text[r->pos++], true);

		if (digit < 0)
			return sn_json_fail(r, "bad hex digit in \\u escape");
		v = v << 4 | (unsigned int)digit;
	}
	*out = v;
	return 0;
}

/* Appends N bytes to DST (capacity CAP, NULL = discard). */
static int put(struct sn_json_reader *r, char *dst, size_t cap, size_t *o,
	       const char *bytes, size_t n, const char *field)
{
	if (!dst)
		return 0;
	if (*o + n >= cap) {
		sn_error_set(r->err,
			     "%s: \"%s\" is longer than %zu bytes",
			     r->subject, field, cap - 1);
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

static int read_escape(struct sn_json_reader *r, char out[4], size_t *n)
{
	unsigned int cp, lo;
	char c;

	if (r->pos >= r->len)
		return sn_json_fail(r, "truncated escape");
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
		return sn_json_fail(r, "invalid escape in string");
	}
	if (hex4(r, &cp))
		return -1;
	if (cp == 0)
		return sn_json_fail(r, "\\u0000 is not allowed");
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return sn_json_fail(r, "lone low surrogate in \\u escape");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (r->len - r->pos < 2 || r->text[r->pos] != '\\' ||
		    r->text[r->pos + 1] != 'u')
			return sn_json_fail(r, "high surrogate without low surrogate");
		r->pos += 2;
		if (hex4(r, &lo))
			return -1;
		if (lo < 0xdc00 || lo > 0xdfff)
			return sn_json_fail(r, "invalid surrogate pair");
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	*n = utf8_encode(cp, out);
	return 0;
}

/* Reads a string into DST (CAP bytes; NULL skips it). */
int sn_json_string(struct sn_json_reader *r, char *dst, size_t cap,
		   const char *field)
{
	size_t o = 0;

	if (sn_json_expect(r, '"'))
		return -1;
	if (dst)
		dst[0] = '\0';
	for (;;) {
		char buf[4];
		size_t n = 1;
		unsigned char c;

		if (r->pos >= r->len)
			return sn_json_fail(r, "unterminated string");
		c = (unsigned char)r->text[r->pos];
		if (c == '"') {
			r->pos++;
			return 0;
		}
		if (c < 0x20)
			return sn_json_fail(r, "control character in string");
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
int sn_json_number(struct sn_json_reader *r, double *out)
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
		return sn_json_fail(r, "expected a number");
	}
	if (AT('.')) {
		r->pos++;
		if (!DIGIT())
			return sn_json_fail(r, "digit expected after '.'");
		while (DIGIT())
			r->pos++;
	}
	if (AT('e') || AT('E')) {
		r->pos++;
		if (AT('+') || AT('-'))
			r->pos++;
		if (!DIGIT())
			return sn_json_fail(r, "digit expected in exponent");
		while (DIGIT())
			r->pos++;
	}
#undef AT
#undef DIGIT
	n = r->pos - start;
	if (n > MAX_NUMBER_TEXT)
		return sn_json_fail(r, "number too long");
	memcpy(text, r->text + start, n);
	text[n] = '\0';
	errno = 0;
	v = strtod(text, &end);
	if (*end != '\0' || !isfinite(v) || errno == ERANGE)
		return sn_json_fail(r, "number out of range");
	*out = v;
	return 0;
}

int sn_json_int(struct sn_json_reader *r, long min, long max, long *out,
		const char *field)
{
	double v;

	if (sn_json_number(r, &v))
		return -1;
	/* Range first: the cast below is only defined inside it. */
	if (v < (double)min || v > (double)max || (double)(long)v != v) {
		sn_error_set(r->err,
			     "%s: \"%s\" must be an integer in %ld..%ld",
			     r->subject, field, min, max);
		return -1;
	}
	*out = (long)v;
	return 0;
}

/* A number, or null (read as 0). */
int sn_json_number_or_null(struct sn_json_reader *r, double *out)
{
	if (sn_json_peek(r) == 'n') {
		*out = 0;
		return sn_json_literal(r, "null");
	}
	return sn_json_number(r, out);
}

/* A string, or null (read as ""). */
int sn_json_string_or_null(struct sn_json_reader *r, char *dst, size_t cap,
			   const char *field)
{
	if (sn_json_peek(r) == 'n') {
		dst[0] = '\0';
		return sn_json_literal(r, "null");
	}
	return sn_json_string(r, dst, cap, field);
}

static int skip_container(struct sn_json_reader *r, int depth, char close)
{
	if (depth >= SN_JSON_MAX_DEPTH)
		return sn_json_fail(r, "nesting too deep");
	r->pos++;
	if (sn_json_peek(r) == (unsigned char)close) {
		r->pos++;
		return 0;
	}
	for (;;) {
		if (close == '}') {
			if (sn_json_string(r, NULL, 0, "key") || sn_json_expect(r, ':'))
				return -1;
		}
		if (sn_json_skip(r, depth + 1))
			return -1;
		if (sn_json_peek(r) == ',') {
			r->pos++;
			continue;
		}
		return sn_json_expect(r, close);
	}
}

int sn_json_skip(struct sn_json_reader *r, int depth)
{
	double ignored;

	switch (sn_json_peek(r)) {
	case '{':
		return skip_container(r, depth, '}');
	case '[':
		return skip_container(r, depth, ']');
	case '"':
		return sn_json_string(r, NULL, 0, "value");
	case 't':
		return sn_json_literal(r, "true");
	case 'f':
		return sn_json_literal(r, "false");
	case 'n':
		return sn_json_literal(r, "null");
	case -1:
		return sn_json_fail(r, "unexpected end of input");
	default:
		return sn_json_number(r, &ignored);
	}
}

int sn_json_object(struct sn_json_reader *r, int depth,
		   sn_json_member_fn member, void *ctx)
{
	char key[64];

	if (depth >= SN_JSON_MAX_DEPTH)
		return sn_json_fail(r, "nesting too deep");
	if (sn_json_expect(r, '{'))
		return -1;
	if (sn_json_peek(r) == '}') {
		r->pos++;
		return 0;
	}
	for (;;) {
		size_t key_pos = r->pos;

		if (sn_json_string(r, key, sizeof(key), "key")) {
			/* An over-long key cannot be one of ours: skip it. */
			r->pos = key_pos;
			sn_error_clear(r->err);
			if (sn_json_string(r, NULL, 0, "key"))
				return -1;
			key[0] = '\0';
		}
		if (sn_json_expect(r, ':'))
			return -1;
		if (key[0] ? member(r, key, depth, ctx) :
			     sn_json_skip(r, depth + 1))
			return -1;
		if (sn_json_peek(r) == ',') {
			r->pos++;
			continue;
		}
		return sn_json_expect(r, '}');
	}
}

int sn_json_array(struct sn_json_reader *r, int depth,
		  sn_json_element_fn each, void *ctx)
{
	if (depth >= SN_JSON_MAX_DEPTH)
		return sn_json_fail(r, "nesting too deep");
	if (sn_json_expect(r, '['))
		return -1;
	if (sn_json_peek(r) == ']') {
		r->pos++;
		return 0;
	}
	for (;;) {
		if (each(r, depth + 1, ctx))
			return -1;
		if (sn_json_peek(r) == ',') {
			r->pos++;
			continue;
		}
		return sn_json_expect(r, ']');
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * json.h: a recursive-descent reader with explicit bounds.  Each value is
 * one slot of doc->v; containers chain their children with first/next.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

struct parser {
	const char *s;
	size_t len, pos;
	struct sn_json *doc;
	struct sn_error *err;
};

static int bad(struct parser *p, const char *why)
{
	sn_error_set(p->err, "byte %zu: %s", p->pos, why);
	return -1;
}

static void blanks(struct parser *p)
{
	while (p->pos < p->len && strchr(" \t\r\n", p->s[p->pos]) &&
	       p->s[p->pos])
		p->pos++;
}

static int at(struct parser *p)
{
	blanks(p);
	return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static int new_value(struct parser *p, enum sn_json_type type)
{
	struct sn_json_value *v;

	if (p->doc->n == SN_JSON_MAX_VALUES)
		return bad(p, "too many values");
	v = &p->doc->v[p->doc->n];
	memset(v, 0, sizeof(*v));
	v->type = type;
	v->first = v->next = v->key = v->str = -1;
	return (int)p->doc->n++;
}

static int text_byte(struct parser *p, char c)
{
	if (p->doc->text_len == SN_JSON_MAX_TEXT)
		return bad(p, "strings too long");
	p->doc->text[p->doc->text_len++] = c;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 0x20);
	return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

/* A string at p->pos into doc->text; returns its offset or -1. */
static int string(struct parser *p)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	int off = (int)p->doc->text_len;

	p->pos++;	/* the opening quote */
	for (;;) {
		unsigned char c;

		if (p->pos >= p->len)
			return bad(p, "unterminated string");
		c = (unsigned char)p->s[p->pos++];
		if (c == '"')
			break;
		if (c < 0x20 || c >= 0x80)
			return bad(p, "control or non-ASCII byte in string");
		if (c == '\\') {
			const char *e;
			int cp = 0;

			if (p->pos >= p->len)
				return bad(p, "truncated escape");
			c = (unsigned char)p->s[p->pos++];
			e = c != 'u' && c ? strchr(from, c) : NULL;
			if (e) {
				c = (unsigned char)to[e - from];
			} else if (c == 'u' && p->len - p->pos >= 4) {
				for (int i = 0; i < 4; i++) {
					int h = hexval(p->s[p->pos++]);

					if (h < 0)
						return bad(p, "bad \\u escape");
					cp = cp * 16 + h;
				}
				if (cp == 0 || cp >= 0x80)
					return bad(p, "\\u escape outside ASCII 1-127");
				c = (unsigned char)cp;
			} else {
				return bad(p, "bad escape");
			}
		}
		if (text_byte(p, (char)c))
			return -1;
	}
	if (text_byte(p, '\0'))
		return -1;
	return off;
}

static int number(struct parser *p, double *out)
{
	size_t start = p->pos, n;
	char buf[64], *end;
	const char *d;

	while (p->pos < p->len && strchr("+-.eE0123456789", p->s[p->pos]) &&
	       p->s[p->pos])
		p->pos++;
	n = p->pos - start;
	if (n == 0 || n >= sizeof(buf))
		return bad(p, "bad number");
	memcpy(buf, p->s + start, n);
	buf[n] = '\0';
	/* strtod accepts more than JSON: hex, "+1", ".5", "1.", "01". */
	d = buf[0] == '-' ? buf + 1 : buf;
	if (!(*d >= '0' && *d <= '9') || (d[0] == '0' && d[1] >= '0' &&
					  d[1] <= '9'))
		return bad(p, "bad number");
	for (const char *q = strchr(buf, '.'); q; q = NULL)
		if (!(q[1] >= '0' && q[1] <= '9'))
			return bad(p, "bad number");
	errno = 0;
	*out = strtod(buf, &end);
	if (*end || errno || !isfinite(*out))
		return bad(p, "bad number");
	return 0;
}

static int value(struct parser *p, int depth);

/* Object or array at p->pos; CLOSE is '}' or ']'. */
static int container(struct parser *p, int self, char close, int depth)
{
	int last = -1;

	if (depth >= SN_JSON_TREE_MAX_DEPTH)
		return bad(p, "nested too deep");
	p->pos++;
	if (at(p) == close) {
		p->pos++;
		return 0;
	}
	for (;;) {
		int key = -1, child;

		if (close == '}') {
			if (at(p) != '"')
				return bad(p, "expected a key");
			key = string(p);
			if (key < 0)
				return -1;
			if (at(p) != ':')
				return bad(p, "expected ':'");
			p->pos++;
		}
		for (int i = p->doc->v[self].first; key >= 0 && i >= 0;
		     i = p->doc->v[i].next)
			if (strcmp(p->doc->text + p->doc->v[i].key,
				   p->doc->text + key) == 0)
				return bad(p, "duplicate key");
		child = value(p, depth + 1);
		if (child < 0)
			return -1;
		p->doc->v[child].key = key;
		if (last < 0)
			p->doc->v[self].first = child;
		else
			p->doc->v[last].next = child;
		last = child;
		if (at(p) == ',') {
			p->pos++;
			continue;
		}
		if (at(p) != close)
			return bad(p, close == '}' ? "expected ',' or '}'" :
					   "expected ',' or ']'");
		p->pos++;
		return 0;
	}
}

static int literal(struct parser *p, const char *word, enum sn_json_type t)
{
	size_t n = strlen(word);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
		return bad(p, "unknown literal");
	p->pos += n;
	return new_value(p, t);
}

static int value(struct parser *p, int depth)
{
	int c = at(p), i;

	switch (c) {
	case '{':
	case '[':
		i = new_value(p, c == '{' ? SN_JSON_OBJECT : SN_JSON_ARRAY);
		if (i < 0 || container(p, i, c == '{' ? '}' : ']', depth) < 0)
			return -1;
		return i;
	case '"':
		i = new_value(p, SN_JSON_STRING);
		if (i < 0)
			return -1;
		p->doc->v[i].str = string(p);
		return p->doc->v[i].str < 0 ? -1 : i;
	case 't':
		return literal(p, "true", SN_JSON_TRUE);
	case 'f':
		return literal(p, "false", SN_JSON_FALSE);
	case 'n':
		return literal(p, "null", SN_JSON_NULL);
	case -1:
		return bad(p, "unexpected end");
	default:
		i = new_value(p, SN_JSON_NUMBER);
		if (i < 0 || number(p, &p->doc->v[i].num) < 0)
			return -1;
		return i;
	}
}

int sn_json_parse(struct sn_json *doc, const char *text, size_t len,
		  struct sn_error *err)
{
	struct parser p = { text, len, 0, doc, err };

	sn_error_clear(err);
	doc->n = 0;
	doc->text_len = 0;
	if (value(&p, 0) < 0)
		return -1;
	if (at(&p) != -1)
		return bad(&p, "trailing data");
	return 0;
}

int sn_json_member(const struct sn_json *doc, int obj, const char *key)
{
	if (obj < 0 || (size_t)obj >= doc->n ||
	    doc->v[obj].type != SN_JSON_OBJECT)
		return -1;
	for (int i = doc->v[obj].first; i >= 0; i = doc->v[i].next)
		if (strcmp(doc->text + doc->v[i].key, key) == 0)
			return i;
	return -1;
}

const char *sn_json_str(const struct sn_json *doc, int i)
{
	if (i < 0 || (size_t)i >= doc->n || doc->v[i].type != SN_JSON_STRING)
		return NULL;
	return doc->text + doc->v[i].str;
}

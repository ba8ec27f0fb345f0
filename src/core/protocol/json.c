/* SPDX-License-Identifier: MIT */
/*
 * json.h: a tree of the values json_read.c reads (the one strict lexer of
 * the project: strings, numbers, literals), with explicit bounds.  Each
 * value is one slot of doc->v; containers chain their children with
 * first/next.
 */
#include <string.h>

#include "protocol/json.h"
#include "protocol/json_read.h"

struct parser {
	struct sn_json_reader r;	/* the lexical layer: json_read.c */
	struct sn_json *doc;
};

static int bad(struct parser *p, const char *why)
{
	return sn_json_fail(&p->r, why);
}

static int at(struct parser *p)
{
	return sn_json_peek(&p->r);
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

/*
 * A string (json_read.c decodes it) into the text pool; its offset, or
 * -1.  Records are ASCII (the writer replaces everything else), so any
 * other byte, raw or from a \u escape, refuses the record.
 */
static int string(struct parser *p)
{
	size_t off = p->doc->text_len;
	char *dst = p->doc->text + off;

	if (off >= SN_JSON_MAX_TEXT - 1)
		return bad(p, "strings too long");
	if (sn_json_string(&p->r, dst, SN_JSON_MAX_TEXT - off, "string") < 0)
		return -1;
	for (const char *c = dst; *c; c++)
		if ((unsigned char)*c >= 0x80)
			return bad(p, "not ASCII");
	p->doc->text_len += strlen(dst) + 1;
	return (int)off;
}

static int value(struct parser *p, int depth);

/* Object or array at the reader's position; CLOSE is '}' or ']'. */
static int container(struct parser *p, int self, char close, int depth)
{
	int last = -1;

	if (depth >= SN_JSON_TREE_MAX_DEPTH)
		return bad(p, "nested too deep");
	p->r.pos++;
	if (at(p) == close) {
		p->r.pos++;
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
			if (sn_json_expect(&p->r, ':') < 0)
				return -1;
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
			p->r.pos++;
			continue;
		}
		if (at(p) != close)
			return bad(p, close == '}' ? "expected ',' or '}'" :
					   "expected ',' or ']'");
		p->r.pos++;
		return 0;
	}
}

static int literal(struct parser *p, const char *word, enum sn_json_type t)
{
	if (sn_json_literal(&p->r, word) < 0)
		return -1;
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
		if (i < 0 || sn_json_number(&p->r, &p->doc->v[i].num) < 0)
			return -1;
		return i;
	}
}

int sn_json_parse(struct sn_json *doc, const char *text, size_t len,
		  struct sn_error *err)
{
	struct parser p = {
		.r = { .text = text, .len = len, .subject = "record",
		       .err = err },
		.doc = doc,
	};

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

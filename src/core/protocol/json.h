/* SPDX-License-Identifier: MIT */
/*
 * A small, strict, bounded JSON reader into a flat tree, for reading
 * fleet records back (record_read.c).  Records are files an admin may
 * hand us from anywhere, so: RFC 8259 grammar, finite numbers, no raw
 * control characters, nesting and sizes bounded, and only ASCII (the
 * record writer replaces everything else): \u escapes above 0x7f and
 * \u0000 are refused.
 */
#ifndef SN_JSON_H
#define SN_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define SN_JSON_MAX_VALUES 4096
#define SN_JSON_MAX_TEXT 65536
#define SN_JSON_TREE_MAX_DEPTH 8

enum sn_json_type {
	SN_JSON_NULL,
	SN_JSON_FALSE,
	SN_JSON_TRUE,
	SN_JSON_NUMBER,
	SN_JSON_STRING,
	SN_JSON_ARRAY,
	SN_JSON_OBJECT,
};

struct sn_json_value {
	enum sn_json_type type;
	int first;		/* first member/element, -1: none */
	int next;		/* next sibling, -1: last */
	int key;		/* offset of the member's key in text, -1 */
	int str;		/* offset of the string value in text */
	double num;
};

struct sn_json {
	struct sn_json_value v[SN_JSON_MAX_VALUES];
	size_t n;
	char text[SN_JSON_MAX_TEXT];	/* decoded strings, NUL-separated */
	size_t text_len;
};

/* Parses TEXT (LEN bytes; one value, whitespace around it) into DOC;
 * the root is DOC->v[0]. */
int sn_json_parse(struct sn_json *doc, const char *text, size_t len,
		  struct sn_error *err);

/* Member KEY of object value OBJ, or -1 (also when OBJ is no object). */
int sn_json_member(const struct sn_json *doc, int obj, const char *key);
/* The string of value I, or NULL if it is not a string. */
const char *sn_json_str(const struct sn_json *doc, int i);

#endif

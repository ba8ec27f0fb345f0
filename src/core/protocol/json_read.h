/* SPDX-License-Identifier: MIT */
#ifndef SN_JSON_READ_H
#define SN_JSON_READ_H

#include <stddef.h>

#include "base/error.h"

/* Deep enough for the result's schema (3 levels) plus room for growth. */
#define SN_JSON_MAX_DEPTH 16

struct sn_json_reader {
	const char *text;
	size_t len;
	size_t pos;
	const char *subject;	/* names the text in errors */
	struct sn_error *err;
};

/* Each returns 0, or -1 with R->err set ("malformed SUBJECT at byte N"). */
int sn_json_fail(struct sn_json_reader *r, const char *what);
/* The next non-blank byte (not consumed), or -1 at the end. */
int sn_json_peek(struct sn_json_reader *r);
int sn_json_expect(struct sn_json_reader *r, char c);
int sn_json_literal(struct sn_json_reader *r, const char *word);
/* A string into DST (CAP bytes; NULL: checked and dropped); FIELD names it. */
int sn_json_string(struct sn_json_reader *r, char *dst, size_t cap,
		   const char *field);
/* A string, or null (read as ""). */
int sn_json_string_or_null(struct sn_json_reader *r, char *dst, size_t cap,
			   const char *field);
/* A number, strictly per RFC 8259, finite. */
int sn_json_number(struct sn_json_reader *r, double *out);
/* A number, or null (read as 0). */
int sn_json_number_or_null(struct sn_json_reader *r, double *out);
/* An integer in MIN..MAX. */
int sn_json_int(struct sn_json_reader *r, long min, long max, long *out,
		const char *field);
/* Any value at DEPTH, checked and dropped. */
int sn_json_skip(struct sn_json_reader *r, int depth);

/*
 * Iterates over the members of an object at DEPTH, calling MEMBER for each
 * key.  MEMBER reads the value (or skips it) and returns 0 or -1.
 */
typedef int (*sn_json_member_fn)(struct sn_json_reader *r, const char *key,
				 int depth, void *ctx);
int sn_json_object(struct sn_json_reader *r, int depth,
		   sn_json_member_fn member, void *ctx);

/* Calls EACH for every element of an array at DEPTH (each element is at
 * DEPTH + 1); EACH reads the element and returns 0 or -1. */
typedef int (*sn_json_element_fn)(struct sn_json_reader *r, int depth,
				  void *ctx);
int sn_json_array(struct sn_json_reader *r, int depth,
		  sn_json_element_fn each, void *ctx);

#endif

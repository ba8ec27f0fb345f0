/* SPDX-License-Identifier: MIT */
/*
 * Prints the JSON Schema (draft 2020-12) of the fleet record from the
 * schema table (src/core/protocol/record_schema.c).  docs/record.schema.json
 * is its output, and test_record_json_schema.sh fails when they differ:
 *   tests/unit/record_schema_print >docs/record.schema.json
 */
#include <stdio.h>

#include "protocol/json_write.h"
#include "protocol/record_schema.h"

static void indent(int depth)
{
	printf("%*s", 2 * depth, "");
}

static void print_string(const char *s)
{
	char esc[2048];

	sn_json_escape(esc, sizeof(esc), s);
	printf("\"%s\"", esc);
}

/* The field's JSON types: "string", or ["integer", "null"]. */
static void print_types(unsigned int types)
{
	const struct sn_field_type_name *t = sn_field_type_names;
	int n = 0;

	for (int i = 0; i < SN_FIELD_TYPES; i++)
		n += !!(types & t[i].bit);
	printf("%s", n > 1 ? "[" : "");
	n = 0;
	for (int i = 0; i < SN_FIELD_TYPES; i++)
		if (types & t[i].bit)
			printf("%s\"%s\"", n++ ? ", " : "", t[i].name);
	printf("%s", n > 1 ? "]" : "");
}

static bool in_record(int f, enum sn_field parent)
{
	return sn_fields[f].parent == parent &&
	       (sn_fields[f].docs & SN_IN_RECORD);
}

static void print_object(enum sn_field parent, int depth);

/* "key": { ... } of field F. */
static void print_field(int f, int depth)
{
	const struct sn_field_def *d = &sn_fields[f];
	const char *const *v;

	indent(depth);
	print_string(d->key);
	printf(": {\n");
	indent(depth + 1);
	printf("\"description\": ");
	print_string(d->doc);
	printf(",\n");
	indent(depth + 1);
	printf("\"type\": ");
	print_types(d->types);
	if (d->values) {
		/* Strings only: an enum; beside other types: a pattern. */
		bool only_strings = !(d->types & ~(SN_T_STRING | SN_T_NULL));

		printf(",\n");
		indent(depth + 1);
		printf(only_strings ? "\"enum\": [" : "\"pattern\": \"^(");
		for (v = d->values; *v; v++) {
			if (only_strings)
				print_string(*v);
			else
				printf("%s", *v);
			if (v[1])
				printf(only_strings ? ", " : "|");
		}
		if (only_strings && (d->types & SN_T_NULL))
			printf(", null");
		printf(only_strings ? "]" : ")$\"");
	}
	if (d->types & (SN_T_INTEGER | SN_T_NUMBER)) {
		printf(",\n");
		indent(depth + 1);
		printf("\"minimum\": %g", d->min);
		if (d->max > 0) {
			printf(",\n");
			indent(depth + 1);
			printf("\"maximum\": %g", d->max);
		}
	}
	if (d->types & SN_T_OBJECT) {
		printf(",\n");
		print_object((enum sn_field)f, depth + 1);
	}
	if (d->types & SN_T_ARRAY) {
		printf(",\n");
		indent(depth + 1);
		printf("\"items\": {\n");
		indent(depth + 2);
		printf("\"type\": \"object\",\n");
		print_object((enum sn_field)f, depth + 2);
		printf("\n");
		indent(depth + 1);
		printf("}");
	}
	printf("\n");
	indent(depth);
	printf("}");
}

/* "properties", "required" and "additionalProperties" of PARENT. */
static void print_object(enum sn_field parent, int depth)
{
	int n = 0;

	indent(depth);
	printf("\"properties\": {\n");
	for (int f = 0; f < SN_F_COUNT; f++) {
		if (!in_record(f, parent))
			continue;
		printf("%s", n++ ? ",\n" : "");
		print_field(f, depth + 1);
	}
	printf("\n");
	indent(depth);
	printf("},\n");
	indent(depth);
	printf("\"required\": [");
	n = 0;
	for (int f = 0; f < SN_F_COUNT; f++)
		if (in_record(f, parent) && sn_fields[f].since <= 1) {
			printf("%s", n++ ? ", " : "");
			print_string(sn_fields[f].key);
		}
	printf("],\n");
	indent(depth);
	printf("\"additionalProperties\": false");
}

int main(void)
{
	char text[1024];

	printf("{\n");
	indent(1);
	printf("\"$schema\": \"https://json-schema.org/draft/2020-12/schema\",\n");
	indent(1);
	printf("\"$comment\": \"Printed from src/core/protocol/record_schema.c by tests/unit/record_schema_print; do not edit.\",\n");
	indent(1);
	printf("\"title\": \"spank-nccl fleet record, version %d, schema %d\",\n",
	       SN_RECORD_VERSION, SN_RECORD_SCHEMA);
	snprintf(text, sizeof(text),
		 "One JSON object per warmup, one line each (record_file=, record_syslog=, the Prolog's RECORD_FILE=), as spank-nccl writes it. Unknown values are null. Every key is always written; records of schema revision 1 (no \"schema\" key) lack only \"schema\" and \"producer\". A newer revision of version %d only adds keys, which this file reports as additional properties and readers ignore.",
		 SN_RECORD_VERSION);
	indent(1);
	printf("\"description\": ");
	print_string(text);
	printf(",\n");
	indent(1);
	printf("\"type\": \"object\",\n");
	print_object(SN_F_TOP, 1);
	printf("\n}\n");
	return ferror(stdout) ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Reads a fleet record back through the schema table (record_schema.c):
 * each field the view needs is found by the table's key under its
 * parent, and checked against the table's types, range, values and
 * whether it is required.  Keys the view does not need, and keys this
 * reader does not know (a newer "schema" revision), are not looked at.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "fleet/record.h"
#include "fleet/record_read.h"
#include "base/strutil.h"

/* "string or null", ... for messages. */
static void type_names(unsigned int types, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < SN_FIELD_TYPES; i++)
		if ((types & sn_field_type_names[i].bit) && len < cap)
			len += (size_t)snprintf(buf + len, cap - len, "%s%s",
						len ? " or " : "",
						sn_field_type_names[i].name);
}

static bool type_ok(const struct sn_field_def *def, enum sn_json_type t)
{
	switch (t) {
	case SN_JSON_NUMBER:
		return def->types & (SN_T_NUMBER | SN_T_INTEGER);
	case SN_JSON_STRING:
		return def->types & SN_T_STRING;
	case SN_JSON_TRUE:
	case SN_JSON_FALSE:
		return def->types & SN_T_BOOLEAN;
	case SN_JSON_OBJECT:
		return def->types & SN_T_OBJECT;
	case SN_JSON_ARRAY:
		return def->types & SN_T_ARRAY;
	default:
		return false;
	}
}

/* Whether string S is one of the field's values (any, without a list). */
static bool value_ok(const struct sn_field_def *def, const char *s)
{
	if (!def->values)
		return true;
	for (const char *const *v = def->values; *v; v++)
		if (strcmp(*v, s) == 0)
			return true;
	return false;
}

/*
 * Field F of record D, checked against the table: its value's index in
 * D, -1 when it (or its parent object) is absent or null, -2 with ERR
 * set when it is wrong or a required field is missing.  A null where
 * the table allows none reads as absent, as old or hand-made records
 * have it.
 */
static int field(const struct sn_json *d, enum sn_field f,
		 struct sn_error *err)
{
	const struct sn_field_def *def = &sn_fields[f];
	const struct sn_json_value *v;
	char types[96];
	int obj = 0, i;

	if (def->parent != SN_F_TOP) {
		obj = field(d, def->parent, err);
		if (obj < 0)
			return obj;
	}
	i = sn_json_member(d, obj, def->key);
	if (i < 0 || d->v[i].type == SN_JSON_NULL) {
		if (!def->required)
			return -1;
		sn_error_set(err, "\"%s\" is missing", def->key);
		return -2;
	}
	v = &d->v[i];
	if (!type_ok(def, v->type)) {
		type_names(def->types, types, sizeof(types));
		sn_error_set(err, "\"%s\" must be %s", def->key, types);
		return -2;
	}
	if (v->type == SN_JSON_NUMBER && !(def->types & SN_T_NUMBER) &&
	    v->num != floor(v->num)) {
		sn_error_set(err, "\"%s\" must be integer, not %g", def->key,
			     v->num);
		return -2;
	}
	if (v->type == SN_JSON_NUMBER &&
	    (v->num < def->min || (def->max > 0 && v->num > def->max))) {
		if (def->max > 0)
			sn_error_set(err, "\"%s\" must be a number from %g to %g",
				     def->key, def->min, def->max);
		else
			sn_error_set(err, "\"%s\" must be a number >= %g",
				     def->key, def->min);
		return -2;
	}
	if (v->type == SN_JSON_STRING) {
		const char *s = sn_json_str(d, i);

		if (def->required && !*s) {
			sn_error_set(err, "\"%s\" is empty", def->key);
			return -2;
		}
		if (!value_ok(def, s)) {
			sn_error_set(err, "unknown \"%s\" %s", def->key, s);
			return -2;
		}
	}
	return i;
}

/* A number field into OUT (DEF when absent or null). */
static int get_num(const struct sn_json *d, enum sn_field f, double def,
		   double *out, struct sn_error *err)
{
	int i = field(d, f, err);

	*out = i >= 0 ? d->v[i].num : def;
	return i < -1 ? -1 : 0;
}

/* The view's strings: where each field goes. */
static const struct view_string {
	enum sn_field field;
	size_t off, cap;
} view_strings[] = {
#define S(f, m) { f, offsetof(struct sn_record_view, m), \
		  sizeof(((struct sn_record_view *)0)->m) }
	S(SN_F_NODE, node),
	S(SN_F_CLASS, class),
	S(SN_F_FAULT, fault),
	S(SN_F_SOURCE, source),
	S(SN_F_MODE, mode),
	S(SN_F_MESSAGE, message),
	S(SN_F_HANG, hang),
	S(SN_F_GPU_MODEL, gpu_model),
	S(SN_F_NCCL_VERSION, nccl_version),
	S(SN_F_DRIVER_VERSION, driver_version),
#undef S
};

static int get_strings(const struct sn_json *d, struct sn_record_view *out,
		       struct sn_error *err)
{
	for (size_t k = 0; k < sizeof(view_strings) / sizeof(view_strings[0]);
	     k++) {
		const struct view_string *vs = &view_strings[k];
		char *dst = (char *)out + vs->off;
		int i = field(d, vs->field, err);

		if (i < -1)
			return -1;
		if (i >= 0 && sn_strlcpy(dst, sn_json_str(d, i), vs->cap)) {
			sn_error_set(err, "\"%s\" is too long",
				     sn_field_key(vs->field));
			return -1;
		}
	}
	return 0;
}

/*
 * The tag and the major version first: a line that is no record, or one
 * of a format this reader does not know, says so rather than which
 * field it lacks.
 */
static int get_format(const struct sn_json *d, struct sn_error *err)
{
	int i = sn_json_member(d, 0, sn_field_key(SN_F_RECORD));
	const char *tag = sn_json_str(d, i);
	double v;

	if (!tag || !value_ok(&sn_fields[SN_F_RECORD], tag)) {
		sn_error_set(err, "not a spank-nccl warmup record");
		return -1;
	}
	i = sn_json_member(d, 0, sn_field_key(SN_F_VERSION));
	if (i >= 0 && d->v[i].type == SN_JSON_NUMBER &&
	    d->v[i].num > SN_RECORD_VERSION &&
	    d->v[i].num == floor(d->v[i].num)) {
		sn_error_set(err, "record version %g is newer than this reader's %d: read it with the spank-nccl-report of the spank-nccl that wrote it (\"producer\")",
			     d->v[i].num, SN_RECORD_VERSION);
		return -1;
	}
	/* Any revision of this version: newer ones only add keys. */
	return get_num(d, SN_F_VERSION, 0, &v, err) < 0 ||
	       get_num(d, SN_F_SCHEMA, 1, &v, err) < 0 ? -1 : 0;
}

int sn_record_read(const char *line, size_t len, struct sn_json *d,
		   struct sn_record_view *out, struct sn_error *err)
{
	double v;
	int i;

	memset(out, 0, sizeof(*out));
	if (sn_json_parse(d, line, len, err) < 0)
		return -1;
	if (d->v[0].type != SN_JSON_OBJECT) {
		sn_error_set(err, "not a JSON object");
		return -1;
	}
	if (get_format(d, err) < 0 ||
	    get_num(d, SN_F_TS, 0, &out->ts, err) < 0 ||
	    get_strings(d, out, err) < 0)
		return -1;
	i = field(d, SN_F_VERDICT, err);
	if (i < 0)
		return -1;
	/* The table's verdicts: "pass", then "fail". */
	out->pass = strcmp(sn_json_str(d, i), sn_fields[SN_F_VERDICT].values[0]) == 0;
	if (get_num(d, SN_F_JOB, -1, &v, err) < 0)
		return -1;
	out->job = v > 4e9 ? -1 : (long)v;
	if (get_num(d, SN_F_GPU_COUNT, 0, &v, err) < 0)
		return -1;
	out->gpu_count = v > 1e6 ? 0 : (size_t)v;
	if (get_num(d, SN_F_BUSBW, -1, &out->busbw_gbps, err) < 0 ||
	    get_num(d, SN_F_BYTES, -1, &out->bytes, err) < 0 ||
	    get_num(d, SN_F_T_TOTAL, -1, &out->total_ms, err) < 0)
		return -1;
	/* The root side's own measurement stands in for a missing total. */
	if (out->total_ms < 0 &&
	    get_num(d, SN_F_ELAPSED_MS, -1, &out->total_ms, err) < 0)
		return -1;
	i = field(d, SN_F_REUSED, err);
	if (i < -1)
		return -1;
	out->reused = i >= 0 && d->v[i].type == SN_JSON_TRUE;
	return 0;
}

/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "record.h"
#include "record_read.h"
#include "strutil.h"

/* String member KEY into DST; null/absent gives "" unless REQUIRED. */
static int get_str(const struct sn_json *d, const char *key, char *dst,
		   size_t cap, bool required, struct sn_error *err)
{
	int i = sn_json_member(d, 0, key);
	const char *s = sn_json_str(d, i);

	dst[0] = '\0';
	if (s && sn_strlcpy(dst, s, cap) == 0 && (*s || !required))
		return 0;
	if (!s && !required && (i < 0 || d->v[i].type == SN_JSON_NULL))
		return 0;
	sn_error_set(err, "\"%s\" %s", key,
		     s ? (*s ? "is too long" : "is empty") :
		     required ? "is missing or not a string" : "is not a string");
	return -1;
}

/* Number member KEY (>= MIN); null/absent gives DEF unless REQUIRED. */
static int get_num(const struct sn_json *d, int obj, const char *key,
		   double min, double def, bool required, double *out,
		   struct sn_error *err)
{
	int i = sn_json_member(d, obj, key);

	*out = def;
	if (i >= 0 && d->v[i].type == SN_JSON_NUMBER && d->v[i].num >= min) {
		*out = d->v[i].num;
		return 0;
	}
	if (!required && (i < 0 || d->v[i].type == SN_JSON_NULL))
		return 0;
	sn_error_set(err, "\"%s\" must be a number >= %g", key, min);
	return -1;
}

static bool known_class(const char *name)
{
	for (int c = 0; c < SN_CLASS_COUNT; c++)
		if (strcmp(name, sn_record_class_name(c)) == 0)
			return true;
	return false;
}

int sn_record_read(const char *line, size_t len, struct sn_json *d,
		   struct sn_record_view *out, struct sn_error *err)
{
	char tag[32], verdict[8];
	double v;
	int i;

	memset(out, 0, sizeof(*out));
	if (sn_json_parse(d, line, len, err) < 0)
		return -1;
	if (d->v[0].type != SN_JSON_OBJECT) {
		sn_error_set(err, "not a JSON object");
		return -1;
	}
	if (get_str(d, "record", tag, sizeof(tag), true, err) < 0)
		return -1;
	if (strcmp(tag, "spank-nccl-warmup") != 0) {
		sn_error_set(err, "not a spank-nccl warmup record");
		return -1;
	}
	if (get_num(d, 0, "version", 1, 0, true, &v, err) < 0)
		return -1;
	if (v != 1) {
		sn_error_set(err, "record version %g (this reader knows 1)", v);
		return -1;
	}
	if (get_num(d, 0, "ts", 0, 0, true, &out->ts, err) < 0 ||
	    get_str(d, "node", out->node, sizeof(out->node), true, err) < 0 ||
	    get_str(d, "verdict", verdict, sizeof(verdict), true, err) < 0 ||
	    get_str(d, "class", out->class, sizeof(out->class), true,
		    err) < 0 ||
	    get_str(d, "source", out->source, sizeof(out->source), false,
		    err) < 0 ||
	    get_str(d, "mode", out->mode, sizeof(out->mode), false, err) < 0 ||
	    get_str(d, "message", out->message, sizeof(out->message), false,
		    err) < 0 ||
	    get_str(d, "gpu_model", out->gpu_model, sizeof(out->gpu_model),
		    false, err) < 0 ||
	    get_str(d, "nccl_version", out->nccl_version,
		    sizeof(out->nccl_version), false, err) < 0 ||
	    get_str(d, "driver_version", out->driver_version,
		    sizeof(out->driver_version), false, err) < 0)
		return -1;
	if (strcmp(verdict, "pass") != 0 && strcmp(verdict, "fail") != 0) {
		sn_error_set(err, "\"verdict\" must be pass or fail");
		return -1;
	}
	out->pass = verdict[0] == 'p';
	if (!known_class(out->class)) {
		sn_error_set(err, "unknown \"class\" %s", out->class);
		return -1;
	}
	if (get_num(d, 0, "job", 0, -1, false, &v, err) < 0)
		return -1;
	out->job = v > 4e9 ? -1 : (long)v;
	if (get_num(d, 0, "gpu_count", 0, 0, false, &v, err) < 0)
		return -1;
	out->gpu_count = v > 1e6 ? 0 : (size_t)v;
	if (get_num(d, 0, "busbw_gbps", 0, -1, false, &out->busbw_gbps,
		    err) < 0)
		return -1;
	i = sn_json_member(d, 0, "timings_ms");
	out->total_ms = -1;
	if (i >= 0 && d->v[i].type == SN_JSON_OBJECT &&
	    get_num(d, i, "total", 0, -1, false, &out->total_ms, err) < 0)
		return -1;
	/* The root side's own measurement stands in for a missing total. */
	if (out->total_ms < 0 &&
	    get_num(d, 0, "elapsed_ms", 0, -1, false, &out->total_ms, err) < 0)
		return -1;
	i = sn_json_member(d, 0, "reused");
	out->reused = i >= 0 && d->v[i].type == SN_JSON_TRUE;
	return 0;
}

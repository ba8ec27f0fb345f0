/* SPDX-License-Identifier: MIT */
/*
 * Slurm's host list grammar, as slurmctld writes SLURM_STEP_NODELIST
 * (src/common/hostlist.c): comma-separated items; an item is literal text
 * with bracket groups of comma-separated numbers or LO-HI ranges.  A
 * range whose low bound has leading zeros keeps that width ("[08-10]" is
 * 08 09 10).  Only the characters Slurm node names use are accepted, so a
 * value that reaches the helper cannot smuggle anything else.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "fabric/hostlist.h"

#define SN_RANGE_DIGITS_MAX 9	/* keeps every bound below 10^9 */

struct hl_walk {
	const char *expr;
	sn_hostlist_visit_fn visit;
	void *arg;
	size_t index;
	bool stop;
	struct sn_error *err;
};

static bool host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

/* Reads the digits at *P as a bound; returns their count, 0 if none. */
static size_t read_bound(const char **p, const char *end, unsigned long *val)
{
	size_t n = 0;

	*val = 0;
	while (*p < end && **p >= '0' && **p <= '9') {
		if (n == SN_RANGE_DIGITS_MAX)
			return SN_RANGE_DIGITS_MAX + 1;
		*val = *val * 10 + (unsigned long)(**p - '0');
		(*p)++;
		n++;
	}
	return n;
}

static int emit(struct hl_walk *w, const char *host)
{
	int rc;

	if (w->index >= SN_HOSTLIST_MAX_HOSTS) {
		sn_error_set(w->err, "host list \"%.64s\" names more than %d hosts",
			     w->expr, SN_HOSTLIST_MAX_HOSTS);
		return -1;
	}
	rc = w->visit(host, w->index, w->arg, w->err);
	w->index++;
	if (rc > 0)
		w->stop = true;
	return rc < 0 ? -1 : 0;
}

static int append(struct hl_walk *w, char *buf, size_t *len,
		  const char *s, size_t n)
{
	if (*len + n >= SN_HOSTNAME_MAX) {
		sn_error_set(w->err, "host list \"%.64s\": a host name is longer than %d bytes",
			     w->expr, SN_HOSTNAME_MAX - 1);
		return -1;
	}
	memcpy(buf + *len, s, n);
	*len += n;
	buf[*len] = '\0';
	return 0;
}

static int expand(struct hl_walk *w, const char *p, const char *end,
		  char *buf, size_t len, unsigned int groups);

/* Expands the bracket group at P ('[' … ']'), then the rest of the item. */
static int expand_group(struct hl_walk *w, const char *p, const char *end,
			char *buf, size_t len, unsigned int groups)
{
	const char *close = memchr(p, ']', (size_t)(end - p));
	const char *q = p + 1;

	if (!close) {
		sn_error_set(w->err, "host list \"%.64s\": '[' without ']'",
			     w->expr);
		return -1;
	}
	if (++groups > SN_HOSTLIST_MAX_GROUPS) {
		sn_error_set(w->err, "host list \"%.64s\": more than %d bracket groups in one name",
			     w->expr, SN_HOSTLIST_MAX_GROUPS);
		return -1;
	}
	for (;;) {
		unsigned long lo, hi, v;
		size_t width = read_bound(&q, close, &lo);

		hi = lo;
		if (width > 0 && width <= SN_RANGE_DIGITS_MAX && q < close &&
		    *q == '-') {
			size_t hw;

			q++;
			hw = read_bound(&q, close, &hi);
			if (hw == 0 || hw > SN_RANGE_DIGITS_MAX)
				width = 0;
		}
		if (width == 0 || width > SN_RANGE_DIGITS_MAX ||
		    (q < close && *q != ',')) {
			sn_error_set(w->err, "host list \"%.64s\": bad range in brackets (use numbers or LO-HI of at most %d digits, separated by commas)",
				     w->expr, SN_RANGE_DIGITS_MAX);
			return -1;
		}
		if (hi < lo) {
			sn_error_set(w->err, "host list \"%.64s\": range %lu-%lu runs backwards",
				     w->expr, lo, hi);
			return -1;
		}
		for (v = lo; v <= hi && !w->stop; v++) {
			char num[SN_RANGE_DIGITS_MAX + 1];
			size_t l = len;
			int n = snprintf(num, sizeof(num), "%0*lu", (int)width, v);

			if (append(w, buf, &l, num, (size_t)n) < 0 ||
			    expand(w, close + 1, end, buf, l, groups) < 0)
				return -1;
		}
		if (q == close || w->stop)
			return 0;
		q++;	/* ',' */
	}
}

/* Expands the item text P..END after the host prefix already in BUF. */
static int expand(struct hl_walk *w, const char *p, const char *end,
		  char *buf, size_t len, unsigned int groups)
{
	const char *lit = p;

	while (p < end && *p != '[') {
		if (!host_char(*p)) {
			sn_error_set(w->err, "host list \"%.64s\": character 0x%02x is not allowed in a host name",
				     w->expr, (unsigned char)*p);
			return -1;
		}
		p++;
	}
	if (append(w, buf, &len, lit, (size_t)(p - lit)) < 0)
		return -1;
	if (p < end)
		return expand_group(w, p, end, buf, len, groups);
	if (len == 0) {
		sn_error_set(w->err, "host list \"%.64s\": empty host name",
			     w->expr);
		return -1;
	}
	return emit(w, buf);
}

int sn_hostlist_foreach(const char *expr, sn_hostlist_visit_fn visit,
			void *arg, struct sn_error *err)
{
	struct hl_walk w = { .expr = expr ? expr : "", .visit = visit,
			     .arg = arg, .err = err };
	const char *p = w.expr;
	char buf[SN_HOSTNAME_MAX];

	if (*p == '\0') {
		sn_error_set(err, "empty host list");
		return -1;
	}
	while (*p && !w.stop) {
		const char *end = p;
		int depth = 0;

		/* An item ends at a comma outside brackets. */
		while (*end && (depth > 0 || *end != ',')) {
			if (*end == '[' && ++depth > 1) {
				sn_error_set(err, "host list \"%.64s\": nested '['",
					     w.expr);
				return -1;
			}
			if (*end == ']' && --depth < 0) {
				sn_error_set(err, "host list \"%.64s\": ']' without '['",
					     w.expr);
				return -1;
			}
			end++;
		}
		buf[0] = '\0';
		if (expand(&w, p, end, buf, 0, 0) < 0)
			return -1;
		if (*end == ',' && end[1] == '\0') {
			sn_error_set(err, "host list \"%.64s\": trailing comma",
				     w.expr);
			return -1;
		}
		p = *end ? end + 1 : end;
	}
	return 0;
}

static int count_visit(const char *host, size_t index, void *arg,
		       struct sn_error *err)
{
	(void)host;
	(void)err;
	*(size_t *)arg = index + 1;
	return 0;
}

int sn_hostlist_count(const char *expr, size_t *count, struct sn_error *err)
{
	*count = 0;
	return sn_hostlist_foreach(expr, count_visit, count, err);
}

struct nth_arg {
	size_t want;
	char *host;
	size_t len;
	bool found;
};

static int nth_visit(const char *host, size_t index, void *arg,
		     struct sn_error *err)
{
	struct nth_arg *a = arg;

	if (index != a->want)
		return 0;
	if (strlen(host) >= a->len) {
		sn_error_set(err, "host name \"%.64s\" does not fit", host);
		return -1;
	}
	strcpy(a->host, host);
	a->found = true;
	return 1;
}

int sn_hostlist_nth(const char *expr, size_t index, char *host, size_t len,
		    struct sn_error *err)
{
	struct nth_arg a = { .want = index, .host = host, .len = len };

	if (len)
		host[0] = '\0';
	if (sn_hostlist_foreach(expr, nth_visit, &a, err) < 0)
		return -1;
	if (!a.found) {
		sn_error_set(err, "host list \"%.64s\" has no host number %zu",
			     expr, index);
		return -1;
	}
	return 0;
}

struct find_arg {
	const char *name;
	size_t index;
	bool found;
};

static int find_visit(const char *host, size_t index, void *arg,
		      struct sn_error *err)
{
	struct find_arg *a = arg;

	(void)err;
	if (strcmp(host, a->name) != 0)
		return 0;
	a->index = index;
	a->found = true;
	return 1;
}

int sn_hostlist_find(const char *expr, const char *name, size_t *index,
		     struct sn_error *err)
{
	struct find_arg a = { .name = name };

	if (sn_hostlist_foreach(expr, find_visit, &a, err) < 0)
		return -1;
	if (!a.found) {
		sn_error_set(err, "host \"%.64s\" is not in the host list \"%.64s\"",
			     name, expr);
		return -1;
	}
	*index = a.index;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * NCCL RAS's JSON status, read with the strict reader of json_read.c
 * (ras_status.h).  Keys not read here are skipped: NCCL adds keys from
 * release to release.
 */
#include <stdio.h>
#include <string.h>

#include "protocol/json_read.h"
#include "protocol/ras_status.h"

#define INT_MAX_JSON 9007199254740992.0	/* 2^53: exact in a double */

struct ctx {
	struct sn_ras_status *st;
	struct sn_ras_comm *comm;
	struct sn_ras_rank *rank;
};

static int read_long(struct sn_json_reader *r, const char *key, long *out)
{
	return sn_json_int(r, -1, 2147483647L, out, key);
}

static int read_bool(struct sn_json_reader *r, bool *out)
{
	if (sn_json_peek(r) == 't') {
		*out = true;
		return sn_json_literal(r, "true");
	}
	*out = false;
	return sn_json_literal(r, "false");
}

static int coll_index(struct sn_json_reader *r, struct sn_ras_status *st,
		      const char *name)
{
	int i;

	for (i = 0; i < st->n_colls; i++)
		if (strcmp(st->colls[i], name) == 0)
			return i;
	if (i == SN_RAS_MAX_COLLS) {
		sn_error_set(r->err, "%s: more than %d collectives", r->subject,
			     SN_RAS_MAX_COLLS);
		return -1;
	}
	if (strlen(name) >= SN_RAS_NAME) {
		sn_error_set(r->err, "%s: collective name too long",
			     r->subject);
		return -1;
	}
	strcpy(st->colls[i], name);
	return st->n_colls++;
}

static int count_member(struct sn_json_reader *r, const char *key, int depth,
			void *p)
{
	struct ctx *c = p;
	double v;
	int i = coll_index(r, c->st, key);

	(void)depth;
	if (i < 0 || sn_json_number(r, &v))
		return -1;
	if (v < 0 || v > INT_MAX_JSON || (double)(unsigned long long)v != v)
		return sn_json_fail(r, "a collective count is no count");
	c->rank->counts[i] = (unsigned long long)v;
	return 0;
}

static int status_member(struct sn_json_reader *r, const char *key, int depth,
			 void *p)
{
	struct sn_ras_rank *k = ((struct ctx *)p)->rank;

	if (strcmp(key, "init_state") == 0)
		return read_long(r, key, &k->init_state);
	if (strcmp(key, "async_error") == 0)
		return read_long(r, key, &k->async_error);
	if (strcmp(key, "finalize_called") == 0)
		return read_bool(r, &k->finalize);
	if (strcmp(key, "destroy_flag") == 0)
		return read_bool(r, &k->destroy);
	if (strcmp(key, "abort_flag") == 0)
		return read_bool(r, &k->abort_flag);
	if (strcmp(key, "unresponsive") == 0)
		return read_bool(r, &k->unresponsive);
	if (strcmp(key, "considered_dead") == 0)
		return read_bool(r, &k->dead);
	return sn_json_skip(r, depth + 1);
}

static int rank_member(struct sn_json_reader *r, const char *key, int depth,
		       void *p)
{
	struct ctx *c = p;
	struct sn_ras_rank *k = c->rank;

	if (strcmp(key, "rank") == 0)
		return read_long(r, key, &k->rank);
	if (strcmp(key, "host") == 0)
		return sn_json_string(r, k->host, sizeof(k->host), key);
	if (strcmp(key, "pid") == 0)
		return read_long(r, key, &k->pid);
	if (strcmp(key, "cuda_dev") == 0)
		return read_long(r, key, &k->cuda_dev);
	if (strcmp(key, "nvml_dev") == 0)
		return read_long(r, key, &k->nvml_dev);
	if (strcmp(key, "status") == 0)
		return sn_json_object(r, depth + 1, status_member, c);
	if (strcmp(key, "collective_counts") == 0)
		return sn_json_object(r, depth + 1, count_member, c);
	return sn_json_skip(r, depth + 1);
}

static int read_rank(struct sn_json_reader *r, int depth, struct ctx *c,
		     bool missing)
{
	struct sn_ras_status *st = c->st;

	if (st->n_ranks == SN_RAS_MAX_RANKS) {
		sn_error_set(r->err, "%s: more than %d ranks", r->subject,
			     SN_RAS_MAX_RANKS);
		return -1;
	}
	c->rank = &st->ranks[st->n_ranks];
	memset(c->rank, 0, sizeof(*c->rank));
	c->rank->rank = c->rank->pid = -1;
	c->rank->cuda_dev = c->rank->nvml_dev = -1;
	c->rank->missing = missing;
	if (sn_json_object(r, depth, rank_member, c))
		return -1;
	if (c->rank->rank < 0)
		return sn_json_fail(r, "a rank without \"rank\"");
	st->n_ranks++;
	c->comm->n++;
	return 0;
}

static int read_present(struct sn_json_reader *r, int depth, void *c)
{
	return read_rank(r, depth, c, false);
}

static int read_missing(struct sn_json_reader *r, int depth, void *c)
{
	return read_rank(r, depth, c, true);
}

static int comm_member(struct sn_json_reader *r, const char *key, int depth,
		       void *p)
{
	struct ctx *c = p;

	if (strcmp(key, "hash") == 0)
		return sn_json_string(r, c->comm->hash, sizeof(c->comm->hash),
				      key);
	if (strcmp(key, "size") == 0)
		return read_long(r, key, &c->comm->size);
	if (strcmp(key, "ranks") == 0)
		return sn_json_array(r, depth + 1, read_present, c);
	if (strcmp(key, "missing_ranks") == 0)
		return sn_json_array(r, depth + 1, read_missing, c);
	return sn_json_skip(r, depth + 1);
}

static int read_comm(struct sn_json_reader *r, int depth, void *p)
{
	struct ctx *c = p;
	struct sn_ras_status *st = c->st;

	if (st->n_comms == SN_RAS_MAX_COMMS) {
		sn_error_set(r->err, "%s: more than %d communicators",
			     r->subject, SN_RAS_MAX_COMMS);
		return -1;
	}
	c->comm = &st->comms[st->n_comms];
	memset(c->comm, 0, sizeof(*c->comm));
	c->comm->first = st->n_ranks;
	if (sn_json_object(r, depth, comm_member, c))
		return -1;
	st->n_comms++;
	return 0;
}

static int ras_member(struct sn_json_reader *r, const char *key, int depth,
		      void *p)
{
	struct ctx *c = p;

	if (strcmp(key, "timeouts_count") == 0)
		return read_long(r, key, &c->st->timeouts);
	return sn_json_skip(r, depth + 1);
}

static int top_member(struct sn_json_reader *r, const char *key, int depth,
		      void *p)
{
	struct ctx *c = p;

	if (strcmp(key, "nccl_version") == 0)
		return sn_json_string(r, c->st->version,
				      sizeof(c->st->version), key);
	if (strcmp(key, "communicators") == 0)
		return sn_json_array(r, depth + 1, read_comm, c);
	if (strcmp(key, "ras") == 0)
		return sn_json_object(r, depth + 1, ras_member, c);
	return sn_json_skip(r, depth + 1);
}

int sn_ras_parse(struct sn_ras_status *st, const char *text, size_t len,
		 struct sn_error *err)
{
	struct sn_json_reader r = {
		.text = text, .len = len, .subject = "NCCL RAS status",
		.err = err,
	};
	struct ctx c = { .st = st };

	memset(st, 0, offsetof(struct sn_ras_status, ranks));
	st->n_ranks = 0;
	sn_error_clear(err);
	if (sn_json_object(&r, 0, top_member, &c))
		return -1;
	if (sn_json_peek(&r) != -1)
		return sn_json_fail(&r, "text after the document");
	return 0;
}

/* How many present ranks of COMM are at COUNT of collective J. */
static int at_count(const struct sn_ras_status *st,
		    const struct sn_ras_comm *cm, int j,
		    unsigned long long count)
{
	int n = 0;

	for (int i = cm->first; i < cm->first + cm->n; i++)
		if (!st->ranks[i].missing && st->ranks[i].counts[j] == count)
			n++;
	return n;
}

/* Marks the ranks off the most common count of J (ties: the higher
 * count is the common one: a rank that has not launched what the others
 * have is the one they wait for).  0: they all agree. */
static int mark_odd(struct sn_ras_status *st, const struct sn_ras_comm *cm,
		    int j, struct sn_ras_verdict *v)
{
	unsigned long long mode = 0;
	int best = 0, n_odd = 0;

	for (int i = cm->first; i < cm->first + cm->n; i++) {
		unsigned long long k = st->ranks[i].counts[j];
		int n;

		if (st->ranks[i].missing)
			continue;
		n = at_count(st, cm, j, k);
		if (n > best || (n == best && k > mode)) {
			best = n;
			mode = k;
		}
	}
	for (int i = cm->first; i < cm->first + cm->n; i++) {
		struct sn_ras_rank *k = &st->ranks[i];

		if (k->missing || k->counts[j] == mode)
			continue;
		if (n_odd == 0)
			v->odd_count = k->counts[j];
		else if (k->counts[j] != v->odd_count)
			v->odd_mixed = true;
		k->odd = true;
		n_odd++;
	}
	v->n_odd = n_odd;
	v->n_rest = best;
	v->rest_count = mode;
	return n_odd;
}

void sn_ras_verdict(struct sn_ras_status *st, int comm,
		    struct sn_ras_verdict *v)
{
	const struct sn_ras_comm *cm = &st->comms[comm];

	memset(v, 0, sizeof(*v));
	v->coll = -1;
	for (int i = cm->first; i < cm->first + cm->n; i++) {
		st->ranks[i].odd = false;
		if (st->ranks[i].missing) {
			v->missing++;
			v->dead += st->ranks[i].dead;
		}
	}
	for (int j = 0; j < st->n_colls; j++) {
		if (mark_odd(st, cm, j, v) > 0) {
			v->coll = j;
			return;
		}
	}
	v->n_odd = 0;
}

/* One communicator's verdict line; empty if it is healthy. */
void sn_ras_verdict_line(const struct sn_ras_status *st, int c,
			 const struct sn_ras_verdict *v,
			 sn_ras_describe_fn describe, const void *ctx,
			 char *out, size_t cap)
{
	const struct sn_ras_comm *cm = &st->comms[c];
	size_t len = 0;
	char who[256];

	out[0] = '\0';
	for (int i = cm->first; i < cm->first + cm->n && len < cap; i++) {
		const struct sn_ras_rank *k = &st->ranks[i];

		if (!k->missing)
			continue;
		describe(ctx, k, who, sizeof(who));
		len += (size_t)snprintf(out + len, cap - len, "%s%s %s",
					len ? "; " : "", who,
					k->dead ? "is dead (RAS lost its process)" :
						  "is missing (it does not answer RAS)");
	}
	if (v->coll < 0 || len >= cap)
		return;
	for (int i = cm->first; i < cm->first + cm->n; i++) {
		const struct sn_ras_rank *k = &st->ranks[i];

		if (!k->odd)
			continue;
		describe(ctx, k, who, sizeof(who));
		if (v->n_odd == 1)
			snprintf(out + len, cap - len,
				 "%s%s has launched %s %llu while the other %d rank%s %s at %llu",
				 len ? "; " : "", who, st->colls[v->coll],
				 k->counts[v->coll], v->n_rest,
				 v->n_rest == 1 ? "" : "s",
				 v->n_rest == 1 ? "is" : "are", v->rest_count);
		else
			snprintf(out + len, cap - len,
				 "%s%d ranks (first %s) have launched %s %s%llu while the other %d %s at %llu",
				 len ? "; " : "", v->n_odd, who,
				 st->colls[v->coll], v->odd_mixed ? "up to " : "",
				 v->odd_count, v->n_rest,
				 v->n_rest == 1 ? "is" : "are", v->rest_count);
		return;
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * Per-node statistics and outliers.  A node is judged only against nodes
 * with the same GPU model and count (its "group"), and only when the
 * group has at least min_peers nodes with data: with fewer, the median is
 * not a peer consensus.  Medians, not means, so one bad node cannot drag
 * the reference towards itself.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/record.h"
#include "report.h"
#include "base/strutil.h"

/*
 * Whether a failed record counts against its node: its "fault" (schema
 * 3), else, for older records, its class.
 */
static bool record_is_node_fault(const struct sn_record_view *r)
{
	if (r->fault[0])
		return strcmp(r->fault, sn_fault_name(SN_FAULT_NODE)) == 0;
	return sn_record_class_is_own_fault(r->class);
}

static struct node_summary *find_node(struct fleet *f, const char *node)
{
	struct node_summary *n;

	for (size_t i = 0; i < f->n_nodes; i++)
		if (strcmp(f->nodes[i].node, node) == 0)
			return &f->nodes[i];
	if (f->n_nodes == f->cap_nodes) {
		size_t cap = f->cap_nodes ? f->cap_nodes * 2 : 16;
		void *p = realloc(f->nodes, cap * sizeof(*f->nodes));

		if (!p)
			return NULL;
		f->nodes = p;
		f->cap_nodes = cap;
	}
	n = &f->nodes[f->n_nodes++];
	memset(n, 0, sizeof(*n));
	sn_strlcpy(n->node, node, sizeof(n->node));
	return n;
}

/*
 * Whether R's figures and identity come from a run its job's user cannot
 * reach: the Prolog's (nccl-warmup-record as root).  A job step's record
 * carries the job's own helper's result, which the user controls
 * (docs/security.md "Trust").
 */
static bool record_trusted(const struct sn_record_view *r)
{
	return strcmp(r->source, "prolog") == 0;
}

int fleet_add(struct fleet *f, const struct sn_record_view *r)
{
	struct node_summary *n = find_node(f, r->node);
	bool trusted = record_trusted(r);

	if (!n)
		return -1;
	/* A killed step's hang record (the job's story) is no warmup. */
	if (r->hang[0])
		return 0;
	if (n->n_samples == n->cap_samples) {
		size_t cap = n->cap_samples ? n->cap_samples * 2 : 16;
		void *p = realloc(n->samples, cap * sizeof(*n->samples));

		if (!p)
			return -1;
		n->samples = p;
		n->cap_samples = cap;
	}
	/*
	 * Figures only from a run the job's user cannot reach; a
	 * fabric warmup's bandwidth is the network's and its time includes
	 * waiting for the other nodes: neither compares with identical
	 * nodes' node-local runs.
	 */
	if (!trusted || strcmp(r->mode, "fabric") == 0)
		n->samples[n->n_samples++] = (struct sample){ r->ts, r->pass,
							      -1, -1, -1 };
	else
		n->samples[n->n_samples++] = (struct sample){
			r->ts, r->pass, r->busbw_gbps, r->bytes, r->total_ms,
		};
	f->records++;
	n->runs++;
	n->reused += r->reused;
	if (r->pass) {
		n->passes++;
	} else if (!record_is_node_fault(r)) {
		n->peer_failed += strcmp(r->class, "peer_failed") == 0;
		n->not_node++;
	} else {
		n->failures++;
		if (r->ts >= n->last_fail_ts) {
			n->last_fail_ts = r->ts;
			sn_strlcpy(n->last_fail_class, r->class,
				   sizeof(n->last_fail_class));
			snprintf(n->last_fail_message,
				 sizeof(n->last_fail_message), "%s",
				 r->message);
		}
	}
	/*
	 * Identity (the group) from the newest record that knows its GPUs,
	 * a trusted one's over any job's: a job's helper naming another GPU
	 * would move its node out of its peers' group.
	 */
	if (r->gpu_count > 0 &&
	    (trusted ? !n->identity_trusted || r->ts >= n->identity_ts :
		       !n->identity_trusted && r->ts >= n->identity_ts)) {
		n->identity_ts = r->ts;
		n->identity_trusted = trusted;
		n->gpu_count = r->gpu_count;
		sn_strlcpy(n->gpu_model, r->gpu_model, sizeof(n->gpu_model));
		if (r->nccl_version[0])
			sn_strlcpy(n->nccl_version, r->nccl_version,
				   sizeof(n->nccl_version));
		if (r->driver_version[0])
			sn_strlcpy(n->driver_version, r->driver_version,
				   sizeof(n->driver_version));
	}
	if (r->ts >= n->last_ts)
		n->last_ts = r->ts;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of V[0..N) (sorts V); -1 when N is 0. */
static double median(double *v, size_t n)
{
	if (n == 0)
		return -1;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int cmp_sample_ts(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;

	return (x->ts > y->ts) - (x->ts < y->ts);
}

/* A passing run's bandwidth at the node's size (a failed run's is noise;
 * another all-reduce size's another number). */
static bool busbw_sample(const struct node_summary *n, size_t i)
{
	return n->samples[i].pass && n->samples[i].busbw_gbps >= 0 &&
	       n->samples[i].bytes == n->busbw_bytes;
}

static void node_stats(struct node_summary *n, double *scratch)
{
	size_t k = 0, t = 0, half;
	double early, late;
	char size[32] = "";

	qsort(n->samples, n->n_samples, sizeof(*n->samples), cmp_sample_ts);
	/* The size of the newest measurement: its peers' must match. */
	n->busbw_bytes = -1;
	for (size_t i = 0; i < n->n_samples; i++)
		if (n->samples[i].pass && n->samples[i].busbw_gbps >= 0)
			n->busbw_bytes = n->samples[i].bytes;
	for (size_t i = 0; i < n->n_samples; i++)
		if (busbw_sample(n, i))
			scratch[k++] = n->samples[i].busbw_gbps;
	n->busbw_samples = k;
	n->busbw_trend_pct = NAN;
	/* Trend: median of the newer half against the older half. */
	if (k >= 4) {
		half = k / 2;
		early = median(scratch, half);
		late = median(scratch + (k - half), half);
		if (early > 0)
			n->busbw_trend_pct = (late - early) / early * 100;
		/* median() sorted the halves; rebuild the set in order. */
		k = 0;
		for (size_t i = 0; i < n->n_samples; i++)
			if (busbw_sample(n, i))
				scratch[k++] = n->samples[i].busbw_gbps;
	}
	n->busbw_median = median(scratch, k);
	for (size_t i = 0; i < n->n_samples; i++)
		if (n->samples[i].pass && n->samples[i].total_ms >= 0)
			scratch[t++] = n->samples[i].total_ms;
	n->time_median_ms = median(scratch, t);
	/* Identical nodes measured at one size ("@64M"): busbw depends on
	 * the size, so nodes measured at another are another group. */
	if (n->busbw_bytes >= 1048576)
		snprintf(size, sizeof(size), "@%.0fM", n->busbw_bytes / 1048576);
	else if (n->busbw_bytes > 0)
		snprintf(size, sizeof(size), "@%.0fK", n->busbw_bytes / 1024);
	snprintf(n->group, sizeof(n->group), "%zux%s%s", n->gpu_count,
		 n->gpu_model[0] ? n->gpu_model : "unknown", size);
}

/* Judges every node of GROUP against the group's medians. */
static void judge_group(struct fleet *f, const char *group,
			const struct report_opts *o, double *scratch)
{
	double th = o->threshold_pct / 100, bw, tm;
	size_t nb = 0, nt = 0, members = 0;

	for (size_t i = 0; i < f->n_nodes; i++) {
		const struct node_summary *n = &f->nodes[i];

		if (strcmp(n->group, group) != 0)
			continue;
		members++;
		if (n->busbw_median >= 0)
			scratch[nb++] = n->busbw_median;
	}
	bw = nb >= o->min_peers ? median(scratch, nb) : -1;
	for (size_t i = 0; i < f->n_nodes; i++)
		if (strcmp(f->nodes[i].group, group) == 0 &&
		    f->nodes[i].time_median_ms >= 0)
			scratch[nt++] = f->nodes[i].time_median_ms;
	tm = nt >= o->min_peers ? median(scratch, nt) : -1;
	for (size_t i = 0; i < f->n_nodes; i++) {
		struct node_summary *n = &f->nodes[i];

		if (strcmp(n->group, group) != 0)
			continue;
		n->group_nodes = members;
		n->group_busbw_median = bw;
		n->group_time_median_ms = tm;
		n->slow_busbw = bw > 0 && n->busbw_median >= 0 &&
				n->busbw_median < bw * (1 - th);
		n->slow_warmup = tm > 0 && n->time_median_ms >= 0 &&
				 n->time_median_ms > tm * (1 + th);
	}
}

static int cmp_node(const void *a, const void *b)
{
	return strcmp(((const struct node_summary *)a)->node,
		      ((const struct node_summary *)b)->node);
}

void fleet_analyse(struct fleet *f, const struct report_opts *o)
{
	size_t most = f->n_nodes;
	double *scratch;

	for (size_t i = 0; i < f->n_nodes; i++)
		if (f->nodes[i].n_samples > most)
			most = f->nodes[i].n_samples;
	scratch = malloc((most ? most : 1) * sizeof(*scratch));
	if (!scratch)
		return;
	qsort(f->nodes, f->n_nodes, sizeof(*f->nodes), cmp_node);
	for (size_t i = 0; i < f->n_nodes; i++)
		node_stats(&f->nodes[i], scratch);
	for (size_t i = 0; i < f->n_nodes; i++) {
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(f->nodes[j].group, f->nodes[i].group) == 0;
		if (!seen)
			judge_group(f, f->nodes[i].group, o, scratch);
	}
	free(scratch);
}

size_t fleet_outliers(const struct fleet *f)
{
	size_t n = 0;

	for (size_t i = 0; i < f->n_nodes; i++)
		n += f->nodes[i].slow_busbw || f->nodes[i].slow_warmup;
	return n;
}

void fleet_free(struct fleet *f)
{
	for (size_t i = 0; i < f->n_nodes; i++)
		free(f->nodes[i].samples);
	free(f->nodes);
	memset(f, 0, sizeof(*f));
}

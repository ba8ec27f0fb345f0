/* SPDX-License-Identifier: MIT */
/*
 * spank-nccl-report(8): reads fleet records (JSON lines, any number of
 * nodes and files), summarises each node and flags the outliers among
 * identical nodes.  stats.c computes, render.c prints.
 */
#ifndef SN_REPORT_H
#define SN_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "fleet/record_read.h"

enum report_format { FORMAT_TABLE, FORMAT_JSON, FORMAT_SVG };

struct report_opts {
	enum report_format format;
	double threshold_pct;	/* outlier: this far from the peers' median */
	unsigned int min_peers;	/* identical nodes needed to judge */
};

/* One sample of a node: what the report needs from a record. */
struct sample {
	double ts;
	bool pass;
	double busbw_gbps;	/* -1: none */
	double bytes;		/* its all-reduce size; -1: unknown */
	double total_ms;	/* -1: none */
};

struct node_summary {
	char node[256];
	char gpu_model[96];
	size_t gpu_count;
	char group[128];	/* "<count>x<model>": identical nodes */
	size_t runs, passes, failures, reused;
	/* Fabric runs another node failed (class peer_failed): not failures
	 * of this node, so neither in FAILURES nor the last failure. */
	size_t peer_failed;
	/* The all-reduce size of its newest busbw, the one compared. */
	double busbw_bytes;
	/* Failures that were the job's or the environment's ("fault"):
	 * peer_failed included; not failures of this node either. */
	size_t not_node;
	double last_ts;
	/* The record the identity (GPUs, versions) came from. */
	double identity_ts;
	bool identity_trusted;
	char last_fail_class[32];
	char last_fail_message[1024];
	double last_fail_ts;
	char nccl_version[32];
	char driver_version[64];

	struct sample *samples;
	size_t n_samples, cap_samples;

	/* stats.c */
	double busbw_median;	/* -1: no bandwidth sample */
	size_t busbw_samples;
	double busbw_trend_pct;	/* recent vs earlier half; NAN: too few */
	double time_median_ms;	/* -1: none */
	double group_busbw_median;	/* -1: not judged */
	double group_time_median_ms;	/* -1: not judged */
	size_t group_nodes;
	bool slow_busbw;
	bool slow_warmup;
};

struct fleet {
	struct node_summary *nodes;
	size_t n_nodes, cap_nodes;
	size_t records, skipped;
};

/* Adds one record; -1 on out of memory. */
int fleet_add(struct fleet *f, const struct sn_record_view *r);
void fleet_analyse(struct fleet *f, const struct report_opts *o);
size_t fleet_outliers(const struct fleet *f);
void fleet_free(struct fleet *f);

void render_table(const struct fleet *f, const struct report_opts *o);
void render_json(const struct fleet *f, const struct report_opts *o);
void render_svg(const struct fleet *f, const struct report_opts *o);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The report's three forms: a table for a terminal, JSON for scripts,
 * and an SVG bar chart (busbw per node, outliers in red, each group's
 * median and threshold drawn).  Every string that came from a record (a
 * node name, a group built from the helper's GPU name, a class or
 * message) reaches the output through one of three escapers: plain() for
 * the table, json_write.c's for JSON, xml_text() for SVG.  A record is
 * written by the job user's helper: its text must not add JSON objects,
 * SVG elements or terminal escape sequences (tests/unit/test_report.sh).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "protocol/warmup_result.h"
#include "protocol/json_write.h"

/*
 * For a terminal: anything but printable ASCII (a decoded "\n" or ESC in a
 * record, a C1 control or a stray UTF-8 byte) becomes '?'.
 */
static const char *plain(const char *s, char *buf, size_t cap)
{
	size_t o = 0;

	for (; *s && o + 1 < cap; s++) {
		unsigned char c = (unsigned char)*s;

		buf[o++] = c < 0x20 || c >= 0x7f ? '?' : (char)c;
	}
	buf[o] = '\0';
	return buf;
}

static const char *flags(const struct node_summary *n)
{
	if (n->slow_busbw && n->slow_warmup)
		return "OUTLIER:busbw,time";
	if (n->slow_busbw)
		return "OUTLIER:busbw";
	if (n->slow_warmup)
		return "OUTLIER:time";
	return "-";
}

void render_table(const struct fleet *f, const struct report_opts *o)
{
	char a[256], g[128], c[32], b[1024], bw[32], tr[32], tm[32];

	printf("%-16s %-22s %5s %5s %5s %10s %8s %9s  %-18s %s\n", "NODE",
	       "GPUS", "RUNS", "PASS", "FAIL", "BUSBW_GBS", "TREND",
	       "WARMUP_S", "FLAGS", "LAST_FAILURE");
	for (size_t i = 0; i < f->n_nodes; i++) {
		const struct node_summary *n = &f->nodes[i];

		snprintf(bw, sizeof(bw), n->busbw_median >= 0 ? "%.1f" : "-",
			 n->busbw_median);
		if (isnan(n->busbw_trend_pct))
			snprintf(tr, sizeof(tr), "-");
		else
			snprintf(tr, sizeof(tr), "%+.1f%%", n->busbw_trend_pct);
		snprintf(tm, sizeof(tm), n->time_median_ms >= 0 ? "%.2f" : "-",
			 n->time_median_ms / 1e3);
		printf("%-16s %-22s %5zu %5zu %5zu %10s %8s %9s  %-18s ",
		       plain(n->node, a, sizeof(a)),
		       plain(n->group, g, sizeof(g)), n->runs, n->passes,
		       n->failures, bw, tr, tm, flags(n));
		if (n->failures)
			printf("%s: %s\n",
			       plain(n->last_fail_class, c, sizeof(c)),
			       plain(n->last_fail_message, b, sizeof(b)));
		else
			printf("-\n");
	}
	printf("%zu node%s, %zu record%s, %zu outlier%s (threshold %g%% from the median of at least %u identical nodes)",
	       f->n_nodes, f->n_nodes == 1 ? "" : "s", f->records,
	       f->records == 1 ? "" : "s", fleet_outliers(f),
	       fleet_outliers(f) == 1 ? "" : "s", o->threshold_pct,
	       o->min_peers);
	if (f->skipped)
		printf(", %zu line%s skipped", f->skipped,
		       f->skipped == 1 ? "" : "s");
	printf("\n");
}

/* ,"KEY":S -- null when S is empty. */
static void json_str(const char *key, const char *s)
{
	printf(",\"%s\":", key);
	sn_json_print(stdout, s, true);
}

static void json_num(const char *key, double v, bool known)
{
	if (known && isfinite(v))
		printf(",\"%s\":%.3f", key, v);
	else
		printf(",\"%s\":null", key);
}

void render_json(const struct fleet *f, const struct report_opts *o)
{
	printf("{\"version\":1,\"threshold_pct\":%g,\"min_peers\":%u,\"records\":%zu,\"skipped\":%zu,\"outliers\":%zu,\"nodes\":[",
	       o->threshold_pct, o->min_peers, f->records, f->skipped,
	       fleet_outliers(f));
	for (size_t i = 0; i < f->n_nodes; i++) {
		const struct node_summary *n = &f->nodes[i];

		printf("%s{\"node\":", i ? "," : "");
		sn_json_print(stdout, n->node, false);
		printf(",\"group\":");
		sn_json_print(stdout, n->group, false);
		printf(",\"gpu_count\":%zu", n->gpu_count);
		/* The newest record's, under the record's keys. */
		json_str(sn_field_key(SN_F_GPU_MODEL), n->gpu_model);
		json_str(sn_field_key(SN_F_NCCL_VERSION), n->nccl_version);
		json_str(sn_field_key(SN_F_DRIVER_VERSION), n->driver_version);
		printf(",\"runs\":%zu,\"passes\":%zu,\"failures\":%zu,\"reused\":%zu,\"peer_failed\":%zu,\"not_node_faults\":%zu",
		       n->runs, n->passes, n->failures, n->reused,
		       n->peer_failed, n->not_node);
		json_str("last_failure_class", n->last_fail_class);
		json_str("last_failure_message", n->last_fail_message);
		json_num("last_failure_ts", n->last_fail_ts, n->failures > 0);
		json_num("busbw_median_gbps", n->busbw_median,
			 n->busbw_median >= 0);
		printf(",\"busbw_samples\":%zu", n->busbw_samples);
		json_num("busbw_trend_pct", n->busbw_trend_pct, true);
		json_num("warmup_median_ms", n->time_median_ms,
			 n->time_median_ms >= 0);
		printf(",\"group_nodes\":%zu", n->group_nodes);
		json_num("group_busbw_median_gbps", n->group_busbw_median,
			 n->group_busbw_median >= 0);
		json_num("group_warmup_median_ms", n->group_time_median_ms,
			 n->group_time_median_ms >= 0);
		printf(",\"outlier\":%s,\"slow_busbw\":%s,\"slow_warmup\":%s}",
		       n->slow_busbw || n->slow_warmup ? "true" : "false",
		       n->slow_busbw ? "true" : "false",
		       n->slow_warmup ? "true" : "false");
	}
	printf("]}\n");
}

/* XML 1.0 forbids most control characters; any byte >= 0x80 becomes '?'
 * too, so the document is valid UTF-8 whatever a record holds. */
static void xml_text(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (*s) {
		case '&': fputs("&amp;", stdout); break;
		case '<': fputs("&lt;", stdout); break;
		case '>': fputs("&gt;", stdout); break;
		case '"': fputs("&quot;", stdout); break;
		case '\'': fputs("&apos;", stdout); break;
		default:
			putchar(c < 0x20 || c >= 0x7f ? '?' : c);
		}
	}
}

#define SVG_BAR 48
#define SVG_GAP 16
#define SVG_LEFT 70
#define SVG_TOP 50
#define SVG_H 240

void render_svg(const struct fleet *f, const struct report_opts *o)
{
	double top = 0;
	int width = SVG_LEFT + (int)f->n_nodes * (SVG_BAR + SVG_GAP) + 40;

	for (size_t i = 0; i < f->n_nodes; i++) {
		if (f->nodes[i].busbw_median > top)
			top = f->nodes[i].busbw_median;
		if (f->nodes[i].group_busbw_median > top)
			top = f->nodes[i].group_busbw_median;
	}
	if (top <= 0)
		top = 1;
	top *= 1.1;
	if (width < 360)
		width = 360;
	printf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
	       "<title>spank-nccl: NCCL bus bandwidth per node (median of passing warmups)</title>\n"
	       "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
	       "<text x=\"%d\" y=\"24\" font-size=\"15\">NCCL busbw per node, GB/s (red: more than %g%% below the median of identical nodes)</text>\n",
	       width, SVG_TOP + SVG_H + 70, width, SVG_TOP + SVG_H + 70,
	       SVG_LEFT - 50, o->threshold_pct);
	printf("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
	       SVG_LEFT - 6, SVG_TOP + SVG_H, width - 20, SVG_TOP + SVG_H);
	for (int t = 0; t <= 4; t++) {
		double v = top * t / 4;
		int y = SVG_TOP + SVG_H - (int)(SVG_H * t / 4);

		printf("<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.0f</text>\n",
		       SVG_LEFT - 10, y + 4, v);
	}
	for (size_t i = 0; i < f->n_nodes; i++) {
		const struct node_summary *n = &f->nodes[i];
		int x = SVG_LEFT + (int)i * (SVG_BAR + SVG_GAP);
		int h = n->busbw_median > 0 ?
			(int)(SVG_H * n->busbw_median / top) : 0;
		bool out = n->slow_busbw || n->slow_warmup;

		printf("<g class=\"node%s\"><title>", out ? " outlier" : "");
		xml_text(n->node);
		printf(" (");
		xml_text(n->group);
		printf("): %s</title>\n", out ? "outlier" : "ok");
		printf("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
		       x, SVG_TOP + SVG_H - h, SVG_BAR, h,
		       out ? "#d62728" : "#1f77b4");
		if (n->group_busbw_median > 0) {
			int gy = SVG_TOP + SVG_H -
				 (int)(SVG_H * n->group_busbw_median / top);

			printf("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\" stroke-dasharray=\"4 2\"/>\n",
			       x - 4, gy, x + SVG_BAR + 4, gy);
		}
		printf("<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
		       x + SVG_BAR / 2, SVG_TOP + SVG_H - h - 4);
		if (n->busbw_median >= 0)
			printf("%.1f", n->busbw_median);
		else
			printf("n/a");
		printf("</text>\n<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
		       x + SVG_BAR / 2, SVG_TOP + SVG_H + 16);
		xml_text(n->node);
		printf("</text>\n");
		if (out)
			printf("<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#d62728\">outlier</text>\n",
			       x + SVG_BAR / 2, SVG_TOP + SVG_H + 32);
		printf("</g>\n");
	}
	printf("<text x=\"%d\" y=\"%d\">dashed: median of the node's group (same GPU model and count)</text>\n</svg>\n",
	       SVG_LEFT - 50, SVG_TOP + SVG_H + 60);
}

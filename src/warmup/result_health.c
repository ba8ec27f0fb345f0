/* SPDX-License-Identifier: MIT */
/*
 * The GPU health checks in the helper's output: a clause of the summary
 * line when not clean, and the "health" object of the JSON result (what
 * NVML read per GPU, the findings, the policy).  Apart from result.c so
 * that each stays small.
 */
#include <stdio.h>
#include <string.h>

#include "result_health.h"
#include "warmup.h"

void wu_report_health_summary(const struct wu_run *s, struct sn_text *o)
{
	const struct wu_health *h = &s->health;
	char text[768];

	if (!h->checked)
		return;
	sn_health_verdict_text(&h->verdict, SN_HL_WARN, text, sizeof(text));
	if (text[0])
		sn_text_add(o, SN_HEALTH_WARNING_CLAUSE "%s", text);
	if (h->verdict.notes[0])
		sn_text_add(o, ", health note: %s", h->verdict.notes);
}

static void num(struct sn_text *o, const char *key, long long v)
{
	if (v == SN_HV_NA)
		sn_text_add(o, ",\"%s\":null", key);
	else
		sn_text_add(o, ",\"%s\":%lld", key, v);
}

/* True if a finding names CUDA ordinal GPU. */
static bool has_finding(const struct sn_health_verdict *v, int gpu)
{
	for (size_t k = 0; k < v->n; k++)
		if (v->f[k].gpu == gpu)
			return true;
	return false;
}

static void gpu_json(const struct wu_run *s, size_t i, bool first,
		     struct sn_text *o)
{
	const struct sn_gpu_health *g = &s->health.gpu[i];

	sn_text_add(o, "%s{\"index\":%d,\"read\":%s", first ? "" : ",",
		   s->gpus[i].index, g->read ? "true" : "false");
	num(o, "mem_used_mib", g->mem_used_mib);
	num(o, "mem_total_mib", g->mem_total_mib);
	sn_text_add(o, ",\"processes\":[");
	for (unsigned int k = 0; k < g->n_procs && k < SN_HEALTH_MAX_PROCS;
	     k++) {
		sn_text_add(o, "%s{\"pid\":%u", k ? "," : "", g->procs[k].pid);
		num(o, "mib", g->procs[k].mib);
		sn_text_add(o, ",\"user\":");
		sn_json_add_or_null(o, g->procs[k].user);
		sn_text_add(o, "}");
	}
	sn_text_add(o, "],\"processes_total\":%u", g->n_procs);
	num(o, "remap_pending", g->remap_pending);
	num(o, "remap_failure", g->remap_failure);
	num(o, "retired_pages_pending", g->retired_pending);
	num(o, "ecc_volatile_uncorrected", g->ecc_volatile_uncorr);
	num(o, "persistence_mode", g->persistence);
	num(o, "compute_mode", g->compute_mode);
	num(o, "pcie_gen", g->pcie_gen);
	num(o, "pcie_gen_max", g->pcie_gen_max);
	num(o, "pcie_width", g->pcie_width);
	num(o, "pcie_width_max", g->pcie_width_max);
	num(o, "nvlinks", g->nvlinks);
	num(o, "nvlinks_active", g->nvlinks_active);
	num(o, "clock_event_reasons", g->clock_reasons);
	sn_text_add(o, "}");
}

static const char *status_word(const struct wu_health *h)
{
	const struct sn_health_verdict *v = &h->verdict;

	if (!h->checked)
		return "unchecked";
	if (v->exit_code)
		return sn_warmup_exit_status(v->exit_code);
	return v->n ? "warn" : "ok";
}

/* The record's two keys: the status and the findings, fail then warn. */
static void record_keys(const struct wu_health *h, struct sn_text *o)
{
	char fails[768], warns[768], both[1024];

	sn_health_verdict_text(&h->verdict, SN_HL_FAIL, fails, sizeof(fails));
	sn_health_verdict_text(&h->verdict, SN_HL_WARN, warns, sizeof(warns));
	snprintf(both, sizeof(both), "%s%s%s", fails,
		 fails[0] && warns[0] ? "; " : "", warns);
	sn_text_add(o, ",\"%s\":\"%s\",\"%s\":",
		   sn_field_key(SN_F_HEALTH_STATUS), status_word(h),
		   sn_field_key(SN_F_HEALTH_FINDINGS));
	sn_json_add_or_null(o, both);
}

/* "default" and the checks whose level differs from it: parsable back. */
static void short_policy(const struct sn_health_policy *p, char *out,
			 size_t len)
{
	struct sn_health_policy def;
	size_t o;

	sn_health_policy_defaults(&def);
	o = (size_t)snprintf(out, len, "default");
	for (int c = 0; c < SN_HC_COUNT && o < len; c++)
		if (p->level[c] != def.level[c])
			o += (size_t)snprintf(out + o, len - o, ",%s:%s",
					      sn_health_check_name((enum sn_health_check)c),
					      sn_health_level_name(p->level[c]));
}

void wu_report_health_json(const struct wu_run *s, struct sn_text *o)
{
	const struct wu_health *h = &s->health;
	const struct sn_health_verdict *v = &h->verdict;
	char policy[SN_HEALTH_SPEC_MAX];

	if (!h->ran)
		return;
	record_keys(h, o);
	short_policy(&s->opt.health, policy, sizeof(policy));
	sn_text_add(o, ",\"health\":{\"checked\":%s,\"why_not\":",
		   h->checked ? "true" : "false");
	sn_json_add_or_null(o, h->why_not);
	sn_text_add(o, ",\"ms\":%.2f,\"policy\":\"%s\",\"busy_mib\":%llu",
		   h->ms, policy, s->opt.health.busy_mib);
	sn_text_add(o, ",\"status\":\"%s\"", status_word(h));
	sn_text_add(o, ",\"findings\":[");
	for (size_t i = 0; i < v->n; i++) {
		sn_text_add(o, "%s{\"check\":\"%s\",\"level\":\"%s\",\"gpu\":%d,\"detail\":",
			   i ? "," : "", sn_health_check_name(v->f[i].check),
			   sn_health_level_name(v->f[i].level), v->f[i].gpu);
		sn_json_add_or_null(o, v->f[i].detail);
		sn_text_add(o, "}");
	}
	sn_text_add(o, "],\"notes\":");
	sn_json_add_or_null(o, v->notes);
	/* Every GPU's readings with --health-detail; else only those of
	 * the GPUs a check names (slurmd logs this line whole only up to
	 * about 2 KiB). */
	sn_text_add(o, ",\"gpus\":[");
	for (size_t i = 0, n = 0; h->checked && i < s->n_gpus; i++)
		if (s->opt.health_detail ||
		    has_finding(v, s->gpus[i].index))
			gpu_json(s, i, n++ == 0, o);
	sn_text_add(o, "]}");
}

/* SPDX-License-Identifier: MIT */
/*
 * The node's series (prom.h), by the Prometheus conventions: base units
 * in the name (_seconds, _bytes), _total for counters, histograms for
 * durations (a scrape interval may hold several warmups), labels of
 * bounded cardinality only (mode, source, fault, class, phase, the
 * node's GPUs' pci_bus_id and UUID as dcgm-exporter spells them; never a
 * job, step or user), and an _info whose labels change only when the
 * node does (driver, GPU model, the node's own NCCL), never with what a
 * job loaded.
 */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/health.h"
#include "fleet/prom.h"
#include "base/textbuf.h"

#define P "spank_nccl_warmup_"

enum kind { GAUGE, COUNTER, HISTOGRAM };
static const char *const kind_names[] = { "gauge", "counter", "histogram" };

/* One family of series; LABELS are the label names, in order. */
struct family {
	const char *name;	/* without P */
	enum kind kind;
	const char *labels;	/* "mode,source"; histograms: without le */
	bool carried;		/* read back from the file */
	const char *help;
};

enum fam {
	F_PASSES, F_FAILURES, F_CLASSES, F_DURATION, F_PHASE, F_LAST_SUCCESS,
	F_LAST_TIME, F_BUSBW, F_BUSBW_BYTES, F_BUSBW_TIME, F_INFO, F_LAST_GPUS,
	F_NCCL_MEM, F_HEALTH, F_COUNT
};

static const struct family families[F_COUNT] = {
	[F_PASSES] = { "passes_total", COUNTER, "mode,source", true,
		"NCCL warmups that passed, by mode and source (plugin, prolog, manual)." },
	[F_FAILURES] = { "failures_total", COUNTER, "mode,source,fault", true,
		"NCCL warmups that failed, by mode, source and whose fault (node, job, environment); alert on fault=\"node\"." },
	[F_CLASSES] = { "failure_classes_total", COUNTER, "class,fault", true,
		"NCCL warmups that failed, by failure class and whose fault." },
	[F_DURATION] = { "duration_seconds", HISTOGRAM, "mode", true,
		"How long NCCL warmups took, as the root side measured, by mode." },
	[F_PHASE] = { "phase_duration_seconds", HISTOGRAM, "phase", true,
		"How long each warmup phase took, in warmups the job's user cannot reach (Prolog, root confirmation)." },
	[F_LAST_SUCCESS] = { "last_success", GAUGE, "mode,source", true,
		"1 if the last NCCL warmup of this mode and source passed, 0 if it failed." },
	[F_LAST_TIME] = { "last_timestamp_seconds", GAUGE, "mode,source", true,
		"When the last NCCL warmup of this mode and source ended (Unix time)." },
	[F_BUSBW] = { "last_busbw_bytes_per_second", GAUGE, "", true,
		"Bus bandwidth of the last bandwidth-mode warmup (NCCL busbw)." },
	[F_BUSBW_BYTES] = { "last_busbw_message_bytes", GAUGE, "", true,
		"The all-reduce size that bandwidth was measured with." },
	[F_BUSBW_TIME] = { "last_busbw_timestamp_seconds", GAUGE, "", true,
		"When that bandwidth was measured (Unix time)." },
	[F_INFO] = { "info", GAUGE, "driver_version,cuda_driver_version,gpu_model,nccl_version", true,
		"The node's driver, GPU model and own NCCL (warmup_nccl= or the system's; not a job's), always 1." },
	[F_LAST_GPUS] = { "last_gpus", GAUGE, "", false,
		"GPUs the last warmup checked." },
	[F_NCCL_MEM] = { "last_nccl_memory_bytes", GAUGE, "pci_bus_id,UUID", true,
		"GPU memory NCCL took on each GPU, as last measured on it (labels as dcgm-exporter's)." },
	[F_HEALTH] = { "last_health_findings", GAUGE, "check", true,
		"GPUs on which each health check failed or warned (NVML), in the last warmup the job's user cannot reach that ran the checks." },
};

static const char *const modes[] = { "check", "comm", "bandwidth", "fabric" };
static const char *const sources[] = { "plugin", "prolog", "manual" };
#define N_MODES (sizeof(modes) / sizeof(modes[0]))
#define N_SOURCES (sizeof(sources) / sizeof(sources[0]))
/* Seconds: a cached warmup takes ~1 s, a cold 8-GPU one tens. */
static const double duration_le[] = {
	0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300,
};
static const double phase_le[] = {
	0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30,
};
#define N_DURATION_LE (sizeof(duration_le) / sizeof(duration_le[0]))
#define N_PHASE_LE (sizeof(phase_le) / sizeof(phase_le[0]))

void sn_prom_state_init(struct sn_prom_state *st)
{
	st->n = 0;
}

const char *sn_prom_source_label(const char *name)
{
	if (name && strcmp(name, "prolog") == 0)
		return "prolog";
	if (name && strcmp(name, "manual") == 0)
		return "manual";
	return "plugin";
}

static struct sn_prom_sample *find(const struct sn_prom_state *st,
				   const char *key)
{
	for (size_t i = 0; i < st->n; i++)
		if (strcmp(st->s[i].key, key) == 0)
			return (struct sn_prom_sample *)&st->s[i];
	return NULL;
}

double sn_prom_state_get(const struct sn_prom_state *st, const char *key)
{
	const struct sn_prom_sample *s = find(st, key);

	return s ? s->v : -1;
}

/* The series KEY, created at 0 if new; NULL when the state is full. */
static struct sn_prom_sample *series(struct sn_prom_state *st,
				     const char *key)
{
	struct sn_prom_sample *s = find(st, key);

	if (s || st->n == SN_PROM_MAX_SAMPLES ||
	    strlen(key) >= SN_PROM_KEY_MAX)
		return s;
	s = &st->s[st->n++];
	snprintf(s->key, sizeof(s->key), "%s", key);
	s->v = 0;
	return s;
}

/* Sets (ADD false) or adds to the series; -1 when it cannot be kept. */
static int put(struct sn_prom_state *st, bool add, double v,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int put(struct sn_prom_state *st, bool add, double v,
	       const char *fmt, ...)
{
	char key[SN_PROM_KEY_MAX + 1];
	struct sn_prom_sample *s;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(key, sizeof(key), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= SN_PROM_KEY_MAX)
		return -1;
	s = series(st, key);
	if (!s)
		return -1;
	s->v = add ? s->v + v : v;
	return 0;
}

/* One observation of histogram F (labels LABELS, e.g. mode="comm"). */
static int observe(struct sn_prom_state *st, enum fam f, const char *labels,
		   const double *le, size_t n_le, double v)
{
	const char *name = families[f].name;
	int rc = 0;

	for (size_t i = 0; i < n_le; i++)
		rc |= put(st, true, v >= 0 && v <= le[i] ? 1 : 0,
			  P "%s_bucket{%s,le=\"%g\"}", name, labels, le[i]);
	rc |= put(st, true, v >= 0 ? 1 : 0, P "%s_bucket{%s,le=\"+Inf\"}",
		  name, labels);
	rc |= put(st, true, v >= 0 ? v : 0, P "%s_sum{%s}", name, labels);
	rc |= put(st, true, v >= 0 ? 1 : 0, P "%s_count{%s}", name, labels);
	return rc;
}

/* Every series alerts and rate() need, at 0 before the first event. */
static int ensure_all(struct sn_prom_state *st)
{
	char labels[64];
	int rc = 0;

	for (size_t m = 0; m < N_MODES; m++) {
		for (size_t s = 0; s < N_SOURCES; s++) {
			rc |= put(st, true, 0, P "passes_total{mode=\"%s\",source=\"%s\"}",
				  modes[m], sources[s]);
			for (int f = SN_FAULT_NODE; f < SN_FAULT_COUNT; f++)
				rc |= put(st, true, 0, P "failures_total{mode=\"%s\",source=\"%s\",fault=\"%s\"}",
					  modes[m], sources[s], sn_fault_name(f));
		}
		snprintf(labels, sizeof(labels), "mode=\"%s\"", modes[m]);
		rc |= observe(st, F_DURATION, labels, duration_le,
			      N_DURATION_LE, -1);
	}
	for (int c = 1; c < SN_CLASS_COUNT; c++)
		rc |= put(st, true, 0, P "failure_classes_total{class=\"%s\",fault=\"%s\"}",
			  sn_record_class_name(c),
			  sn_fault_name(sn_fault_of_class(c)));
	for (int i = 0; i < SN_RESULT_PHASES; i++) {
		snprintf(labels, sizeof(labels), "phase=\"%s\"",
			 sn_result_phase_name(i));
		rc |= observe(st, F_PHASE, labels, phase_le, N_PHASE_LE, -1);
	}
	return rc;
}

/*
 * A label value from the helper (versions, GPU model, bus ID, UUID): only
 * characters that need no escaping in the exposition format, at most 64,
 * so no value can close the label set or start a line.
 */
static void label_value(char *dst, size_t cap, const char *src)
{
	size_t o = 0;

	for (; src && *src && o + 1 < cap && o < 64; src++) {
		char c = *src;

		dst[o++] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || strchr(" ._+:()/-", c)) ?
			   c : '_';
	}
	dst[o] = '\0';
}

/* Label NAME's value in KEY (as this file writes them: no escapes). */
static void label_of(const char *key, const char *name, char *out,
		     size_t cap)
{
	char want[64];
	const char *p;

	out[0] = '\0';
	snprintf(want, sizeof(want), "%s=\"", name);
	for (p = strchr(key, '{'); p; p = strchr(p + 1, ',')) {
		if (strncmp(p + 1, want, strlen(want)) == 0) {
			p += 1 + strlen(want);
			snprintf(out, cap, "%.*s", (int)strcspn(p, "\""), p);
			return;
		}
	}
}

/* Whether NCCL came from the node (warmup_nccl= or the system's). */
static bool node_nccl(const struct sn_warmup_result *res)
{
	return strcmp(res->nccl_source, "admin") == 0 ||
	       strcmp(res->nccl_source, "system") == 0;
}

/*
 * The one _info series: the node's values, each kept from the last
 * record that knew it (a crash reports no driver; a job's own NCCL is
 * not the node's).
 */
static int update_info(struct sn_prom_state *st, const struct sn_warmup_result *res)
{
	static const char *const names[] = {
		"driver_version", "cuda_driver_version", "gpu_model",
		"nccl_version",
	};
	char v[4][72], raw[96];
	size_t i;

	for (i = 0; i < st->n; i++)
		if (strncmp(st->s[i].key, P "info{", sizeof(P "info{") - 1) == 0)
			break;
	for (size_t k = 0; k < 4; k++)
		label_of(i < st->n ? st->s[i].key : "", names[k], v[k],
			 sizeof(v[k]));
	if (res) {
		if (res->driver_version[0])
			label_value(v[0], sizeof(v[0]), res->driver_version);
		if (res->cuda_driver_version > 0)
			snprintf(v[1], sizeof(v[1]), "%ld",
				 res->cuda_driver_version);
		sn_record_gpu_model(res, raw, sizeof(raw));
		if (raw[0])
			label_value(v[2], sizeof(v[2]), raw);
		if (res->nccl_version[0] && node_nccl(res))
			label_value(v[3], sizeof(v[3]), res->nccl_version);
	}
	if (i < st->n)
		st->s[i] = st->s[--st->n];
	return put(st, false, 1, P "info{driver_version=\"%s\",cuda_driver_version=\"%s\",gpu_model=\"%s\",nccl_version=\"%s\"}",
		   v[0], v[1], v[2], v[3]);
}

/* NVML's spelling, which dcgm-exporter's pci_bus_id label carries:
 * "00000000:3B:00.0" (CUDA says "0000:3b:00.0"). */
static void nvml_busid(const char *cuda, char *out, size_t cap)
{
	unsigned int dom, bus, dev, fn;
	char end;

	if (sscanf(cuda, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &end) == 4)
		snprintf(out, cap, "%08X:%02X:%02X.%X", dom, bus, dev, fn);
	else
		label_value(out, cap, cuda);
}

/* Each GPU's last measured NCCL memory: one series per GPU of the node. */
static int update_memory(struct sn_prom_state *st,
			 const struct sn_warmup_result *res)
{
	char busid[40], uuid[72];
	int rc = 0;

	for (size_t i = 0; res && i < res->n_gpus; i++) {
		if (!isfinite(res->gpus[i].nccl_mem_mib) ||
		    res->gpus[i].nccl_mem_mib < 0)
			continue;
		nvml_busid(res->gpus[i].busid, busid, sizeof(busid));
		label_value(uuid, sizeof(uuid), res->gpus[i].uuid);
		rc |= put(st, false, res->gpus[i].nccl_mem_mib * 1048576.0,
			  P "last_nccl_memory_bytes{pci_bus_id=\"%s\",UUID=\"%s\"}",
			  busid, uuid);
	}
	return rc;
}

int sn_prom_state_add(struct sn_prom_state *st, const struct sn_record *r)
{
	const struct sn_warmup_result *res = r->result;
	const char *src = sn_prom_source_label(r->source);
	char mode[24], labels[64];
	int rc = ensure_all(st);

	label_value(mode, sizeof(mode), r->mode[0] ? r->mode : "unknown");
	if (r->pass)
		rc |= put(st, true, 1, P "passes_total{mode=\"%s\",source=\"%s\"}",
			  mode, src);
	else
		rc |= put(st, true, 1, P "failures_total{mode=\"%s\",source=\"%s\",fault=\"%s\"}",
			  mode, src, sn_fault_name(r->fault ? r->fault :
						   SN_FAULT_NODE));
	if (!r->pass)
		rc |= put(st, true, 1, P "failure_classes_total{class=\"%s\",fault=\"%s\"}",
			  sn_record_class_name(r->class),
			  sn_fault_name(r->fault ? r->fault : SN_FAULT_NODE));
	rc |= put(st, false, r->pass ? 1 : 0, P "last_success{mode=\"%s\",source=\"%s\"}",
		  mode, src);
	rc |= put(st, false, r->time, P "last_timestamp_seconds{mode=\"%s\",source=\"%s\"}",
		  mode, src);
	snprintf(labels, sizeof(labels), "mode=\"%s\"", mode);
	if (isfinite(r->elapsed_ms) && r->elapsed_ms >= 0)
		rc |= observe(st, F_DURATION, labels, duration_le,
			      N_DURATION_LE, r->elapsed_ms / 1e3);
	/*
	 * The node's own facts (timings, health, _info, busbw, the per-GPU
	 * series) only from a run its users cannot reach (issue 30).
	 */
	res = r->trusted;
	for (int i = 0; res && i < SN_RESULT_PHASES; i++) {
		if (!isfinite(res->phase_ms[i]) || res->phase_ms[i] < 0)
			continue;
		snprintf(labels, sizeof(labels), "phase=\"%s\"",
			 sn_result_phase_name(i));
		rc |= observe(st, F_PHASE, labels, phase_le, N_PHASE_LE,
			      res->phase_ms[i] / 1e3);
	}
	/* A fabric warmup's busbw is the network's, not this node's GPUs'. */
	if (res && res->busbw_gbps > 0 && isfinite(res->busbw_gbps) &&
	    strcmp(r->mode, "fabric") != 0) {
		rc |= put(st, false, res->busbw_gbps * 1e9,
			  P "last_busbw_bytes_per_second");
		rc |= put(st, false, r->time, P "last_busbw_timestamp_seconds");
		if (res->bytes > 0)
			rc |= put(st, false, (double)res->bytes,
				  P "last_busbw_message_bytes");
	}
	for (int c = 0; res && res->health_status[0] && c < SN_HC_COUNT; c++)
		rc |= put(st, false, sn_prom_health_count(res, c),
			  P "last_health_findings{check=\"%s\"}",
			  sn_health_check_name((enum sn_health_check)c));
	rc |= update_info(st, res);
	rc |= update_memory(st, res);
	return rc ? -1 : 0;
}

/* The family of series NAME (histograms: with its suffix), or F_COUNT. */
static enum fam family_of(const char *name, size_t len, const char **suffix)
{
	static const char *const parts[] = { "_bucket", "_sum", "_count" };

	*suffix = "";
	if (len < sizeof(P) - 1 || strncmp(name, P, sizeof(P) - 1) != 0)
		return F_COUNT;
	name += sizeof(P) - 1;
	len -= sizeof(P) - 1;
	for (int f = 0; f < F_COUNT; f++) {
		size_t n = strlen(families[f].name);

		if (strncmp(name, families[f].name, n) != 0)
			continue;
		if (n == len && families[f].kind != HISTOGRAM)
			return (enum fam)f;
		for (size_t p = 0; families[f].kind == HISTOGRAM && p < 3; p++)
			if (len == n + strlen(parts[p]) &&
			    strncmp(name + n, parts[p], strlen(parts[p])) == 0) {
				*suffix = parts[p];
				return (enum fam)f;
			}
	}
	return F_COUNT;
}

/* The label names of KEY ("a,b"), as a family lists them. */
static void label_names(const char *key, char *out, size_t cap)
{
	struct sn_text t = { out, cap, 0, false };
	const char *p = strchr(key, '{');

	out[0] = '\0';
	while (p && p[1] && p[1] != '}') {
		size_t n = strcspn(p + 1, "=");

		sn_text_add(&t, "%s%.*s", t.len ? "," : "", (int)n, p + 1);
		p = strchr(p + 1 + n, '"');
		p = p ? strchr(p + 1, '"') : NULL;
		p = p && p[1] == ',' ? p + 1 : NULL;
	}
}

/* A sample value: finite and >= 0. */
static int sample_value(const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return (end == s || *end || errno || !isfinite(*v) || *v < 0) ? -1 : 0;
}

/* One line: 0 (kept or not ours), -1 (ours and damaged). */
static int parse_line(char *line, struct sn_prom_state *st)
{
	char names[128], want[128];
	const char *suffix;
	char *sp = strrchr(line, ' ');
	size_t name_len = strcspn(line, "{ ");
	enum fam f = family_of(line, name_len, &suffix);
	double v;

	if (line[0] == '#' || f == F_COUNT || !families[f].carried)
		return 0;
	if (!sp || sample_value(sp + 1, &v) < 0)
		return -1;
	*sp = '\0';
	label_names(line, names, sizeof(names));
	snprintf(want, sizeof(want), "%s%s%s", families[f].labels,
		 strcmp(suffix, "_bucket") == 0 ? "," : "",
		 strcmp(suffix, "_bucket") == 0 ? "le" : "");
	if (strcmp(names, want) != 0 || find(st, line))
		return -1;
	return put(st, false, v, "%s", line);
}

int sn_prom_state_parse(const char *text, size_t len,
			struct sn_prom_state *st, struct sn_error *err)
{
	char line[512];
	size_t i = 0, lineno = 0;

	sn_prom_state_init(st);
	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (text + i)) : len - i;

		lineno++;
		/* Our own lines are short; a long one is not ours. */
		if (n < sizeof(line)) {
			memcpy(line, text + i, n);
			line[n] = '\0';
			if (!memchr(line, '\0', n) && parse_line(line, st) < 0) {
				sn_error_set(err, "line %zu: not a series this release writes: %.200s",
					     lineno, line);
				sn_prom_state_init(st);
				return -1;
			}
		}
		i += n + 1;
	}
	return 0;
}

/*
 * The GPUs of the last warmup, as the root side knows them: a root run's
 * count, else the step's CUDA_VISIBLE_DEVICES as slurmstepd set it (the
 * GPUs the plugin gave the helper), never the job's helper's own claim;
 * the helper's count only where neither is known (a recorder run by hand).
 */
static void render_gpus(struct sn_text *t, const struct sn_record *r)
{
	const char *cvd = r->gpus_requested;
	size_t n = r->result ? r->result->n_gpus : 0;

	if (r->trusted) {
		n = r->trusted->n_gpus;
	} else if (cvd[0]) {
		n = 1;
		for (; *cvd; cvd++)
			n += *cvd == ',';
	}
	sn_text_add(t, P "last_gpus %zu\n", n);
}

/* Whether series KEY is of family F. */
static bool in_family(const char *key, enum fam f)
{
	const char *suffix;

	return family_of(key, strcspn(key, "{ "), &suffix) == f;
}

size_t sn_prom_render(const struct sn_prom_state *st,
		      const struct sn_record *r, char *buf, size_t cap)
{
	struct sn_text t = { buf, cap, 0, false };

	for (int f = 0; f < F_COUNT; f++) {
		sn_text_add(&t, "# HELP " P "%s %s\n# TYPE " P "%s %s\n",
			    families[f].name, families[f].help,
			    families[f].name, kind_names[families[f].kind]);
		if (f == F_LAST_GPUS)
			render_gpus(&t, r);
		for (size_t i = 0; families[f].carried && i < st->n; i++)
			if (in_family(st->s[i].key, (enum fam)f))
				sn_text_add(&t, "%s %.*g\n", st->s[i].key,
					    families[f].kind == GAUGE ? 17 : 15,
					    st->s[i].v);
	}
	return t.full ? 0 : t.len;
}

/* SPDX-License-Identifier: MIT */
/*
 * The run's only output: one "spank-nccl: " line on stderr and, with
 * --json, one JSON object on stdout or --result-fd (schema in nccl-warmup(8); the keys
 * the plugin reads or the fleet record shares are record_schema.c's;
 * read back by sn_warmup_result_parse).  Whichever thread claims run->reporting
 * first (main or watchdog) prints and ends the process.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "result_health.h"
#include "container_nccl.h"
#include "protocol/fault.h"
#include "warmup.h"

#define WU_MAX_GROUPS_LISTED 64
#define WU_SUMMARY_MAX 1024

/* timings_ms's key of each phase. */
static const enum sn_field phase_key[WU_PHASE_COUNT] = {
	SN_F_T_CUDA_INIT, SN_F_T_CONTEXTS, SN_F_T_COMM_INIT,
	SN_F_T_ALLREDUCE, SN_F_T_COLLECTIVES, SN_F_T_BANDWIDTH,
	SN_F_T_TEARDOWN,
};
static const char *const phase_label[WU_PHASE_COUNT] = {
	"cuda", "contexts", "comm init", "all-reduce", "collectives",
	"bandwidth", "teardown",
};

/* Busy-phase time counts too: a timeout shows where the time went. */
static bool phase_time(const struct wu_run *s, enum wu_phase p, double now,
		       double *ms)
{
	if (s->phase_done[p]) {
		*ms = s->phase_ms[p];
		return true;
	}
	if (p == s->phase && s->phase_started_ms > 0) {
		*ms = now - s->phase_started_ms;
		return true;
	}
	return false;
}

static void human_bytes(unsigned long long b, char *out, size_t len)
{
	if (b >= (1ULL << 30) && b % (1ULL << 30) == 0)
		snprintf(out, len, "%lluG", b >> 30);
	else if (b >= (1ULL << 20) && b % (1ULL << 20) == 0)
		snprintf(out, len, "%lluM", b >> 20);
	else if (b >= (1ULL << 10) && b % (1ULL << 10) == 0)
		snprintf(out, len, "%lluK", b >> 10);
	else
		snprintf(out, len, "%llu bytes", b);
}

static void build_summary(const struct wu_run *s, int code, double now,
			  char *summary, size_t len)
{
	struct sn_text o = { .buf = summary, .cap = len };
	char gpus[512] = "";
	struct sn_text g = { .buf = gpus, .cap = sizeof(gpus) };
	double ms;

	if (code == SN_WARMUP_USAGE) {
		sn_text_add(&o, "nccl-warmup usage error on %s: %s", s->opt.node,
		    s->message);
		return;
	}
	for (size_t i = 0; i < s->n_gpus; i++) {
		if (g.len + strlen(s->gpus[i].busid) + 6 >= g.cap) {
			sn_text_add(&g, " ...");
			break;
		}
		sn_text_add(&g, "%s%s", i ? " " : "", s->gpus[i].busid);
	}
	if (code == SN_WARMUP_OK)
		sn_text_add(&o, "warmup ok on %s: ", s->opt.node);
	else
		sn_text_add(&o, "warmup FAILED on %s: %s; ", s->opt.node, s->message);
	if (s->n_gpus)
		sn_text_add(&o, "%zu GPU%s [%s]", s->n_gpus, s->n_gpus == 1 ? "" : "s",
		    gpus);
	else
		sn_text_add(&o, "no GPUs");
	if (s->driver_version[0])
		sn_text_add(&o, ", driver %s", s->driver_version);
	if (s->cuda_driver_version > 0)
		sn_text_add(&o, "%sCUDA %d.%d%s", s->driver_version[0] ? " (" : ", driver ",
		    s->cuda_driver_version / 1000,
		    (s->cuda_driver_version % 1000) / 10,
		    s->driver_version[0] ? ")" : "");
	if (s->nccl_source == WU_NCCL_CONTAINER)
		sn_text_add(&o, ", NCCL %s from %s (container image %s)",
		    s->nccl_version[0] ? s->nccl_version : "(unknown version)",
		    s->nccl_path[0] ? s->nccl_path : "(unknown path)",
		    wu_container_image(s));
	else if (s->nccl_source != WU_NCCL_NONE)
		sn_text_add(&o, ", NCCL %s from %s (%s)",
		    s->nccl_version[0] ? s->nccl_version : "(unknown version)",
		    s->nccl_path[0] ? s->nccl_path : "(unknown path)",
		    wu_nccl_source_name(s->nccl_source));
	sn_text_add(&o, ", %s mode", sn_warmup_mode_name(s->opt.mode));
	if (s->mem_measured) {
		sn_text_add(&o, ", NCCL memory");
		for (size_t i = 0; i < s->n_gpus; i++)
			sn_text_add(&o, "%s%lld", i ? "/" : " ", s->nccl_mem_mib[i]);
		sn_text_add(&o, " MiB");
	}
	if (s->fabric.active && s->fabric.nranks)
		sn_text_add(&o, ", ranks %d-%d of %d over %u node%s",
		    s->fabric.rank_base,
		    s->fabric.rank_base + (int)s->n_gpus - 1,
		    s->fabric.nranks, s->opt.step.nodes,
		    s->opt.step.nodes == 1 ? "" : "s");
	if (s->transport[0])
		sn_text_add(&o, ", network %s", s->transport);
	if (s->note[0])
		sn_text_add(&o, ", %s", s->note);
	wu_report_health_summary(s, &o);
	if (s->busbw_measured) {
		char size[32];

		human_bytes(s->opt.bytes, size, sizeof(size));
		sn_text_add(&o, ", busbw %.1f GB/s (%s all-reduce)", s->busbw_gbps,
		    size);
	}
	for (int p = 0; p < WU_PHASE_COUNT; p++)
		if (phase_time(s, (enum wu_phase)p, now, &ms))
			sn_text_add(&o, ", %s %.0f ms", phase_label[p], ms);
	sn_text_add(&o, ", total %.2f s", (now - s->t_start_ms) / 1e3);
}

/* SEP"KEY": with the schema table's key of F. */
static void add_key(struct sn_text *o, const char *sep, enum sn_field f)
{
	sn_text_add(o, "%s\"%s\":", sep, sn_field_key(f));
}

/* The keys issue-14 added to schema version 1 (readers ignore unknown
 * keys; every one is null when not known). */
static void build_json_libraries(const struct wu_run *s, struct sn_text *o)
{
	add_key(o, ",", SN_F_DRIVER_VERSION);
	sn_json_add_or_null(o, s->driver_version);
	add_key(o, ",", SN_F_CUDA_DRIVER_VERSION);
	sn_json_add_number_or_null(o, s->cuda_driver_version > 0, "%d",
				   s->cuda_driver_version);
	add_key(o, ",", SN_F_NCCL_PATH);
	sn_json_add_or_null(o, s->nccl_path);
	add_key(o, ",", SN_F_NCCL_SOURCE);
	sn_json_add_or_null(o, wu_nccl_source_name(s->nccl_source));
	add_key(o, ",", SN_F_COLLECTIVES);
	sn_text_add(o, "{");
	for (int op = 0, first = 1; op < WU_COLL_COUNT; op++) {
		if (!s->coll_done[op])
			continue;
		sn_text_add(o, "%s\"%s\":%.1f", first ? "" : ",",
		    sn_result_collective_name(op), s->coll_ms[op]);
		first = 0;
	}
	sn_text_add(o, "}");
	if (s->failed_op >= 0) {
		add_key(o, ",", SN_F_FAILED_OP);
		sn_text_add(o, "\"%s\"", wu_coll_name((enum wu_coll)s->failed_op));
	}
}

/* Mode fabric only: the step's communicator and the node at fault. */
static void build_json_fabric(const struct wu_run *s, struct sn_text *o)
{
	const struct wu_fabric *f = &s->fabric;

	add_key(o, ",", SN_F_FABRIC);
	add_key(o, "{", SN_F_FAB_NODES);
	sn_text_add(o, "%u", s->opt.step.nodes);
	add_key(o, ",", SN_F_FAB_NODE_INDEX);
	sn_text_add(o, "%u", s->opt.step.node_index);
	add_key(o, ",", SN_F_FAB_RANKS);
	sn_json_add_number_or_null(o, f->nranks, "%d", f->nranks);
	add_key(o, ",", SN_F_FAB_RANK_BASE);
	sn_json_add_number_or_null(o, f->nranks, "%d", f->rank_base);
	sn_text_add(o, ",\"comm_id\":");
	sn_json_add_or_null(o, f->comm_id);
	add_key(o, ",", SN_F_FAB_COORDINATOR);
	sn_json_add_or_null(o, f->coordinator);
	/* Connections that were not the step's, refused unanswered. */
	add_key(o, ",", SN_F_FAB_REFUSED);
	sn_text_add(o, "%u", f->refused);
	sn_text_add(o, ",\"blame_index\":");
	sn_json_add_number_or_null(o, f->blamed, "%u", f->blame_index);
	add_key(o, ",", SN_F_BLAME_NODE);
	if (f->blamed)
		sn_json_add_string(o, f->blame_node);
	else
		sn_text_add(o, "null");
	sn_text_add(o, "}");
}

/* Whose fault CODE is, from what the helper knows (fault.h). */
static enum sn_fault run_fault(const struct wu_run *s, int code)
{
	extern char **environ;
	struct sn_fault_facts f = { .exit_code = code };
	enum wu_nccl_source src = s->nccl_source != WU_NCCL_NONE ?
				  s->nccl_source : s->nccl_tried;

	/* The job's NCCL, and it could not be used (run->nc: resolved). */
	f.job_nccl = !s->nc && (src == WU_NCCL_PRELOAD || src == WU_NCCL_USER ||
				src == WU_NCCL_LD_LIBRARY_PATH);
	for (char **e = environ; e && *e && !f.job_nccl_env; e++)
		f.job_nccl_env = sn_fault_is_nccl_setting(*e);
	return sn_fault_decide(&f);
}

/*
 * The summary as one write(2): glibc >= 2.37 writes a formatted line to
 * unbuffered stderr in 128-byte pieces, and helpers run side by side on
 * one terminal (the man page's fabric loop) interleaved mid-line
 * (measured in Debian 13's root).  A line under PIPE_BUF stays whole in
 * a pipe too.
 */
static void put_summary(const char *summary)
{
	char line[WU_SUMMARY_MAX + 16];
	int n = snprintf(line, sizeof(line), "spank-nccl: %s\n", summary);
	size_t len = n < 0 ? 0 : (size_t)n < sizeof(line) ? (size_t)n :
		     sizeof(line) - 1;

	if (len && line[len - 1] != '\n')
		line[len - 1] = '\n';
	for (size_t off = 0; off < len;) {
		ssize_t w = write(STDERR_FILENO, line + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		off += (size_t)w;
	}
}

static void build_json(const struct wu_run *s, int code, double now,
		       const char *summary, struct sn_text *o)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	int n_groups;
	double ms = 0;

	add_key(o, "{", SN_F_VERSION);
	sn_text_add(o, "1");
	add_key(o, ",", SN_F_NODE);
	sn_json_add_string(o, s->opt.node);
	add_key(o, ",", SN_F_MODE);
	sn_text_add(o, "\"%s\"", sn_warmup_mode_name(s->opt.mode));
	add_key(o, ",", SN_F_STATUS);
	sn_text_add(o, "\"%s\"", sn_warmup_exit_status(code));
	add_key(o, ",", SN_F_EXIT_CODE);
	sn_text_add(o, "%d", code);
	add_key(o, ",", SN_F_FAULT);
	sn_json_add_or_null(o, sn_fault_name(run_fault(s, code)));
	add_key(o, ",", SN_F_MESSAGE);
	sn_json_add_or_null(o, code == SN_WARMUP_OK ? "" : s->message);
	add_key(o, ",", SN_F_NOTE);
	sn_json_add_string(o, s->note);
	add_key(o, ",", SN_F_SUMMARY);
	sn_json_add_string(o, summary);
	add_key(o, ",", SN_F_NCCL_VERSION);
	sn_json_add_or_null(o, s->nccl_version);
	build_json_libraries(s, o);
	sn_text_add(o, ",\"cuda_visible_devices\":");
	if (s->cvd_set)
		sn_json_add_string(o, s->cvd);
	else
		sn_text_add(o, "null");
	add_key(o, ",", SN_F_GPUS);
	sn_text_add(o, "[");
	for (size_t i = 0; i < s->n_gpus; i++) {
		add_key(o, i ? ",{" : "{", SN_F_GPU_INDEX);
		sn_text_add(o, "%d", s->gpus[i].index);
		add_key(o, ",", SN_F_GPU_BUSID);
		sn_json_add_string(o, s->gpus[i].busid);
		add_key(o, ",", SN_F_GPU_UUID);
		sn_json_add_string(o, s->gpus[i].uuid);
		add_key(o, ",", SN_F_GPU_NAME);
		sn_json_add_string(o, s->gpu_names[i]);
		sn_text_add(o, ",\"mig\":%s", s->gpus[i].mig ? "true" : "false");
		add_key(o, ",", SN_F_GPU_NCCL_MEM_MIB);
		sn_json_add_number_or_null(o, s->mem_measured, "%lld",
					   s->nccl_mem_mib[i]);
		sn_text_add(o, "}");
	}
	sn_text_add(o, "]");
	add_key(o, ",", SN_F_TIMINGS);
	sn_text_add(o, "{");
	for (int p = 0; p < WU_PHASE_COUNT; p++) {
		bool known = phase_time(s, (enum wu_phase)p, now, &ms);

		add_key(o, "", phase_key[p]);
		sn_json_add_number_or_null(o, known, "%.1f", ms);
		sn_text_add(o, ",");
	}
	add_key(o, "", SN_F_T_TOTAL);
	sn_text_add(o, "%.1f}", now - s->t_start_ms);
	add_key(o, ",", SN_F_BUSBW);
	sn_json_add_number_or_null(o, s->busbw_measured, "%.3f", s->busbw_gbps);
	add_key(o, ",", SN_F_BYTES);
	sn_json_add_number_or_null(o, s->busbw_measured, "%llu", s->opt.bytes);
	add_key(o, ",", SN_F_TRANSPORT);
	sn_json_add_or_null(o, s->transport);
	if (s->fabric.active)
		build_json_fabric(s, o);

	/* Lets callers prove which identity ran the GPUs (privilege drop). */
	getresuid(&ru, &eu, &su);
	getresgid(&rg, &eg, &sg);
	sn_text_add(o, ",\"ids\":{\"uid\":[%u,%u,%u],\"gid\":[%u,%u,%u],\"groups\":[",
	    (unsigned int)ru, (unsigned int)eu, (unsigned int)su,
	    (unsigned int)rg, (unsigned int)eg, (unsigned int)sg);
	n_groups = getgroups(0, NULL);
	if (n_groups > 0) {
		gid_t *all = calloc((size_t)n_groups, sizeof(*all));

		n_groups = all ? getgroups(n_groups, all) : -1;
		for (int i = 0; i < n_groups && i < WU_MAX_GROUPS_LISTED; i++)
			sn_text_add(o, "%s%u", i ? "," : "", (unsigned int)all[i]);
		free(all);
	}
	/* groups_total says whether the list above is complete. */
	sn_text_add(o, "],\"groups_total\":%d}", n_groups);
	/* Last: the longest part, after what slurmd's log line must keep. */
	wu_report_health_json(s, o);
	sn_text_add(o, "}");
}

/*
 * The JSON and its newline on --result-fd, or on stdout (after what the
 * libraries left in stdio's buffer, which NCCL's log may be in).
 */
static int put_json(int fd, struct sn_text *o)
{
	size_t off = 0;

	if (fd >= 0)
		sn_text_add(o, "\n");
	if (o->full) {
		/* Nothing rather than a cut JSON the plugin cannot parse. */
		fprintf(stderr, "spank-nccl: nccl-warmup: the JSON result exceeds %zu bytes\n",
			o->cap);
		return -1;
	}
	if (fd < 0) {
		fprintf(stdout, "%s\n", o->buf);
		return fflush(stdout) != 0 ? -1 : 0;
	}
	while (off < o->len) {
		ssize_t w = write(fd, o->buf + off, o->len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

void wu_report_and_exit(struct wu_run *run, int code)
{
	static const size_t json_cap = SN_RESULT_MAX_BYTES;
	struct wu_run *snap;
	char summary[WU_SUMMARY_MAX];
	double now;
	int expected = 0;

	if (!atomic_compare_exchange_strong(&run->reporting, &expected, 1)) {
		/* The other thread is reporting and will end the process. */
		for (;;)
			pause();
	}
	now = sn_clock_ms();
	snap = malloc(sizeof(*snap));
	if (!snap) {
		fprintf(stderr, "spank-nccl: nccl-warmup: out of memory while reporting (exit %d)\n",
			code);
		_exit(SN_WARMUP_INTERNAL);
	}
	pthread_mutex_lock(&run->lock);
	memcpy(snap, run, sizeof(*snap));
	pthread_mutex_unlock(&run->lock);

	build_summary(snap, code, now, summary, sizeof(summary));
	if (code != SN_WARMUP_OK || !snap->opt.quiet)
		put_summary(summary);
	if (snap->opt.json) {
		struct sn_text o = { .buf = malloc(json_cap), .cap = json_cap };

		if (!o.buf) {
			fprintf(stderr, "spank-nccl: nccl-warmup: out of memory for the JSON result\n");
			_exit(SN_WARMUP_INTERNAL);
		}
		build_json(snap, code, now, summary, &o);
		if (put_json(snap->opt.result_fd, &o) != 0)
			code = code ? code : SN_WARMUP_INTERNAL;
	}
	/* What NCCL's log (NCCL_DEBUG without NCCL_DEBUG_FILE) left in
	 * stdout's buffer: _exit would drop it. */
	wu_fabric_tell_log(snap);
	fflush(stdout);
	/* _exit: CUDA/NCCL atexit handlers could block after the verdict;
	 * the kernel releases the GPUs either way. */
	_exit(code);
}

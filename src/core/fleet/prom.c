/* SPDX-License-Identifier: MIT */
/*
 * The node's .prom file (prom.h).  Naming follows the Prometheus
 * conventions: base units in the name (_seconds, _bytes_per_second),
 * _total for counters, labels of bounded cardinality only (phase, class,
 * GPU index, versions; never a job id or user).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "prom.h"
#include "textbuf.h"

#define P "spank_nccl_warmup_"
#define PROM_MAX_BYTES 65536
/* A lock holder only reads and rewrites a small file. */
#define LOCK_WAIT_MS 5000

void sn_prom_state_init(struct sn_prom_state *st)
{
	memset(st, 0, sizeof(*st));
	st->busbw_bytes = -1;
}

/* A sample value: finite and >= 0. */
static int sample_value(const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	while (*end == ' ')
		end++;
	return (end == s || *end || errno || !isfinite(*v) || *v < 0) ? -1 : 0;
}

static int parse_line(const char *line, struct sn_prom_state *st)
{
	static const char fail_prefix[] = P "failures_total{class=\"";
	const char *rest;
	double v;

	if (strncmp(line, P "passes_total ", sizeof(P "passes_total")) == 0)
		return sample_value(line + sizeof(P "passes_total"),
				    &st->passes);
	if (strncmp(line, P "last_busbw_bytes_per_second ",
		    sizeof(P "last_busbw_bytes_per_second")) == 0)
		return sample_value(line +
				    sizeof(P "last_busbw_bytes_per_second"),
				    &st->busbw_bytes);
	if (strncmp(line, P "last_busbw_timestamp_seconds ",
		    sizeof(P "last_busbw_timestamp_seconds")) == 0)
		return sample_value(line +
				    sizeof(P "last_busbw_timestamp_seconds"),
				    &st->busbw_time);
	if (strncmp(line, fail_prefix, sizeof(fail_prefix) - 1) != 0)
		return 0;
	rest = line + sizeof(fail_prefix) - 1;
	for (int c = 1; c < SN_CLASS_COUNT; c++) {
		const char *name = sn_record_class_name(c);
		size_t n = strlen(name);

		if (strncmp(rest, name, n) == 0 &&
		    strncmp(rest + n, "\"} ", 3) == 0) {
			if (sample_value(rest + n + 3, &v))
				return -1;
			st->failures[c] = v;
			return 0;
		}
	}
	return -1;
}

int sn_prom_state_parse(const char *text, size_t len,
			struct sn_prom_state *st, struct sn_error *err)
{
	char line[256];
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
				sn_error_set(err, "line %zu: bad value: %s",
					     lineno, line);
				sn_prom_state_init(st);
				return -1;
			}
		}
		i += n + 1;
	}
	return 0;
}

void sn_prom_state_add(struct sn_prom_state *st, const struct sn_record *r)
{
	if (r->pass)
		st->passes++;
	else if ((unsigned int)r->class < SN_CLASS_COUNT)
		st->failures[r->class]++;
	/* A fabric warmup's busbw is the network's, not this node's GPUs'. */
	if (r->result && r->result->busbw_gbps > 0 &&
	    isfinite(r->result->busbw_gbps) &&
	    strcmp(r->mode, "fabric") != 0) {
		st->busbw_bytes = r->result->busbw_gbps * 1e9;
		st->busbw_time = r->time;
	}
}

static void head(struct sn_text *t, const char *name, const char *type,
		 const char *help)
{
	sn_text_add(t, "# HELP " P "%s %s\n# TYPE " P "%s %s\n", name, help, name,
	    type);
}

/*
 * A label value from the helper (versions, GPU model): only characters
 * that need no escaping in the exposition format, at most 64, so no
 * value can close the label set or start a line.
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

static void render_last(struct sn_text *t, const struct sn_record *r)
{
	const struct sn_warmup_result *res = r->result;

	head(t, "last_success", "gauge",
	     "1 if the last NCCL warmup on this node passed, 0 if it failed.");
	sn_text_add(t, P "last_success %d\n", r->pass ? 1 : 0);
	head(t, "last_timestamp_seconds", "gauge",
	     "When the last NCCL warmup on this node ended (Unix time).");
	sn_text_add(t, P "last_timestamp_seconds %.3f\n", r->time);
	head(t, "last_gpus", "gauge", "GPUs the last warmup checked.");
	sn_text_add(t, P "last_gpus %zu\n", res ? res->n_gpus : (size_t)0);
	head(t, "last_phase_duration_seconds", "gauge",
	     "Duration of each phase of the last warmup on this node.");
	sn_text_add(t, P "last_phase_duration_seconds{phase=\"total\"} %.4f\n",
	    r->elapsed_ms / 1e3);
	for (int i = 0; res && i < SN_RESULT_PHASES; i++)
		if (isfinite(res->phase_ms[i]) && res->phase_ms[i] >= 0)
			sn_text_add(t, P "last_phase_duration_seconds{phase=\"%s\"} %.4f\n",
			    sn_result_phase_name(i), res->phase_ms[i] / 1e3);
	if (!res)
		return;
	head(t, "last_nccl_memory_bytes", "gauge",
	     "GPU memory NCCL took on each GPU in the last warmup.");
	for (size_t i = 0; i < res->n_gpus; i++)
		if (isfinite(res->gpus[i].nccl_mem_mib) &&
		    res->gpus[i].nccl_mem_mib >= 0)
			sn_text_add(t, P "last_nccl_memory_bytes{gpu=\"%d\"} %.0f\n",
			    res->gpus[i].index,
			    res->gpus[i].nccl_mem_mib * 1048576.0);
}

size_t sn_prom_render(const struct sn_prom_state *st,
		      const struct sn_record *r, char *buf, size_t cap)
{
	struct sn_text t = { buf, cap, 0, false };
	const struct sn_warmup_result *res = r->result;
	char drv[72], nccl[72], model[96], label[72];

	render_last(&t, r);
	head(&t, "last_busbw_bytes_per_second", "gauge",
	     "Bus bandwidth of the last bandwidth-mode warmup (NCCL busbw).");
	head(&t, "last_busbw_timestamp_seconds", "gauge",
	     "When that bandwidth was measured (Unix time).");
	if (st->busbw_bytes >= 0) {
		sn_text_add(&t, P "last_busbw_bytes_per_second %.0f\n",
		    st->busbw_bytes);
		sn_text_add(&t, P "last_busbw_timestamp_seconds %.3f\n",
		    st->busbw_time);
	}
	head(&t, "passes_total", "counter", "NCCL warmups that passed.");
	sn_text_add(&t, P "passes_total %.0f\n", st->passes);
	head(&t, "failures_total", "counter",
	     "NCCL warmups that failed, by failure class.");
	/* Every class, zeros included, so rate() sees the first failure. */
	for (int c = 1; c < SN_CLASS_COUNT; c++)
		sn_text_add(&t, P "failures_total{class=\"%s\"} %.0f\n",
		    sn_record_class_name(c), st->failures[c]);
	label_value(drv, sizeof(drv), res ? res->driver_version : NULL);
	label_value(nccl, sizeof(nccl), res ? res->nccl_version : NULL);
	sn_record_gpu_model(res, label, sizeof(label));
	label_value(model, sizeof(model), label);
	label[0] = '\0';
	if (res && res->cuda_driver_version >= 0)
		snprintf(label, sizeof(label), "%ld",
			 res->cuda_driver_version);
	head(&t, "info", "gauge",
	     "Versions the last warmup on this node used (always 1).");
	sn_text_add(&t, P "info{driver_version=\"%s\",cuda_driver_version=\"%s\","
	    "nccl_version=\"%s\",gpu_model=\"%s\",source=\"%s\"} 1\n", drv,
	    label, nccl, model,
	    strcmp(r->source, "prolog") == 0 ? "prolog" : "spank");
	sn_prom_render_health(&t, r);
	return t.full ? 0 : t.len;
}

/* flock with a deadline: a wedged holder must not hang the step. */
static int lock_dir(const char *dir, struct sn_error *err)
{
	char path[4096];
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	int fd;

	snprintf(path, sizeof(path), "%s/" SN_PROM_LOCK, dir);
	fd = sn_record_sink_open(path, "", O_RDWR | O_CREAT, 0600, err);
	if (fd < 0)
		return -1;
	for (int waited = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; waited += 10) {
		if (errno != EWOULDBLOCK || waited >= LOCK_WAIT_MS) {
			sn_error_set(err, "cannot lock %s: %s", path,
				     errno == EWOULDBLOCK ?
				     "held by another writer for 5 s" :
				     strerror(errno));
			close(fd);
			return -1;
		}
		nanosleep(&pause, NULL);
	}
	return fd;
}

/*
 * The counters in PATH.  Missing or unreadable: they start at 0 (a
 * reset).  Refused (a symlink, a FIFO, another user's file planted in
 * its place: sn_record_sink_check): -1, nothing of it is taken.
 */
static int read_state(const char *path, struct sn_prom_state *st,
		      struct sn_error *err)
{
	char *text = malloc(PROM_MAX_BYTES);
	struct sn_error why;
	ssize_t n = -1;
	int fd;

	sn_prom_state_init(st);
	fd = sn_record_sink_open(path, "", O_RDONLY, 0, &why);
	if (fd < 0 && (errno == EINVAL || errno == ELOOP || errno == ENXIO)) {
		*err = why;
		free(text);
		return -1;
	}
	if (fd >= 0 && text)
		n = read(fd, text, PROM_MAX_BYTES);
	if (fd >= 0)
		close(fd);
	if (n > 0)
		sn_prom_state_parse(text, (size_t)n, st, &why);
	free(text);
	return 0;
}

/*
 * A new temporary next to the .prom file, hidden from node_exporter
 * (which reads only *.prom).  The name is random and created O_EXCL |
 * O_NOFOLLOW, so nothing planted under a guessed name is followed or
 * reused; a clash is retried under another name.
 */
static int create_tmp(const char *dir, char *tmp, size_t cap,
		      struct sn_error *err)
{
	uint64_t r;
	int fd = -1;

	for (int tries = 0; tries < 8; tries++) {
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r)) {
			/* No entropy yet (early boot): O_EXCL still holds. */
			r = ((uint64_t)(sn_clock_ms() * 1e6) << 4) ^
			    ((uint64_t)getpid() << 44) ^ (uint64_t)tries;
		}
		snprintf(tmp, cap, "%s/.spank_nccl.prom.%016" PRIx64, dir, r);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			  O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		sn_error_set(err, "cannot create %s: %s", tmp,
			     strerror(errno));
		return -1;
	}
	if (sn_record_sink_check(fd, tmp, "", err) < 0) {
		close(fd);
		unlink(tmp);
		return -1;
	}
	return fd;
}

static int write_file(const char *dir, char *path, size_t cap,
		      const char *text, size_t len, struct sn_error *err)
{
	int fd = create_tmp(dir, path, cap, err);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, len);
	/* node_exporter reads the file as Prometheus does: 0644. */
	if (n != (ssize_t)len || fchmod(fd, 0644) < 0 || fsync(fd) < 0) {
		sn_error_set(err, "cannot write %s: %s", path,
			     n < 0 || n == (ssize_t)len ? strerror(errno) :
			     "short write");
		close(fd);
		unlink(path);
		return -1;
	}
	if (close(fd) < 0) {
		sn_error_set(err, "cannot write %s: %s", path,
			     strerror(errno));
		unlink(path);
		return -1;
	}
	return 0;
}

int sn_prom_update(const char *dir_pattern, const struct sn_record *r,
		   struct sn_error *err)
{
	char dir[4000], path[4096], tmp[4200];
	struct sn_prom_state st;
	char *text = NULL;
	size_t len;
	int lock, rc = -1;

	if (sn_record_path(dir, sizeof(dir), dir_pattern, r->node) < 0) {
		sn_error_set(err, "%s: no path for node \"%s\"", dir_pattern,
			     r->node);
		return -1;
	}
	lock = lock_dir(dir, err);
	if (lock < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/" SN_PROM_FILE, dir);
	if (read_state(path, &st, err) < 0)
		goto out;
	sn_prom_state_add(&st, r);
	text = malloc(PROM_MAX_BYTES);
	if (!text) {
		sn_error_set(err, "out of memory");
		goto out;
	}
	len = sn_prom_render(&st, r, text, PROM_MAX_BYTES);
	if (!len) {
		sn_error_set(err, "metrics larger than %d bytes",
			     PROM_MAX_BYTES);
		goto out;
	}
	if (write_file(dir, tmp, sizeof(tmp), text, len, err) < 0)
		goto out;
	if (rename(tmp, path) < 0) {
		sn_error_set(err, "cannot rename %s to %s: %s", tmp, path,
			     strerror(errno));
		unlink(tmp);
		goto out;
	}
	rc = 0;
out:
	free(text);
	close(lock);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * Writes the fleet record (record.h).  The JSON is built field by field
 * from typed values: strings through sn_json_escape (quotes, backslashes,
 * control characters escaped, non-ASCII replaced), numbers only when
 * finite, so the line is valid JSON whatever the helper printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "record.h"
#include "json_write.h"
#include "textbuf.h"
#include "helper_protocol.h"

static const char *const class_names[SN_CLASS_COUNT] = {
	[SN_CLASS_OK] = "ok",
	[SN_CLASS_USAGE] = "usage",
	[SN_CLASS_NO_GPUS] = "no_gpus",
	[SN_CLASS_DUPLICATE_BUSID] = "duplicate_busid",
	[SN_CLASS_CUDA_ERROR] = "cuda_error",
	[SN_CLASS_NCCL_ERROR] = "nccl_error",
	[SN_CLASS_WRONG_RESULT] = "wrong_result",
	[SN_CLASS_LOW_BANDWIDTH] = "low_bandwidth",
	[SN_CLASS_TIMEOUT] = "timeout",
	[SN_CLASS_INTERNAL] = "internal",
	[SN_CLASS_CRASH] = "crash",
	[SN_CLASS_HELPER_START] = "helper_start",
	[SN_CLASS_PEER_FAILED] = "peer_failed",
	[SN_CLASS_TRANSPORT] = "transport",
	[SN_CLASS_FABRIC_SETUP] = "fabric_setup",
};

const char *sn_record_class_name(enum sn_record_class c)
{
	return (unsigned int)c < SN_CLASS_COUNT ? class_names[c] : "internal";
}

enum sn_record_class sn_record_class_of_exit(int code)
{
	switch (code) {
	case SN_WARMUP_OK: return SN_CLASS_OK;
	case SN_WARMUP_USAGE: return SN_CLASS_USAGE;
	case SN_WARMUP_NO_GPUS: return SN_CLASS_NO_GPUS;
	case SN_WARMUP_DUPLICATE_BUSID: return SN_CLASS_DUPLICATE_BUSID;
	case SN_WARMUP_CUDA_ERROR: return SN_CLASS_CUDA_ERROR;
	case SN_WARMUP_NCCL_ERROR: return SN_CLASS_NCCL_ERROR;
	case SN_WARMUP_WRONG_RESULT: return SN_CLASS_WRONG_RESULT;
	case SN_WARMUP_LOW_BANDWIDTH: return SN_CLASS_LOW_BANDWIDTH;
	case SN_WARMUP_TIMEOUT: return SN_CLASS_TIMEOUT;
	case SN_WARMUP_PEER_FAILED: return SN_CLASS_PEER_FAILED;
	case SN_WARMUP_TRANSPORT: return SN_CLASS_TRANSPORT;
	case SN_WARMUP_FABRIC_SETUP: return SN_CLASS_FABRIC_SETUP;
	default: return SN_CLASS_INTERNAL;
	}
}

bool sn_record_class_is_own_fault(const char *name)
{
	/*
	 * The fabric warmup's other nodes: the node at fault has its own
	 * record, with its own class.  A coordination that could not start
	 * (ports taken by other processes, MUNGE down) says nothing of the
	 * node's GPUs or NCCL.
	 */
	return strcmp(name, class_names[SN_CLASS_PEER_FAILED]) != 0 &&
	       strcmp(name, class_names[SN_CLASS_FABRIC_SETUP]) != 0;
}

/* "key":"escaped" or "key":null for an empty string. */
static void emit_str(struct sn_text *l, const char *key, const char *s)
{
	char esc[6 * 1024 + 1];

	if (!s || !*s) {
		sn_text_add(l, ",\"%s\":null", key);
		return;
	}
	sn_json_escape(esc, sizeof(esc), s);
	sn_text_add(l, ",\"%s\":\"%s\"", key, esc);
}

/* A value >= 0 with DIGITS decimals, or null (unknown or not finite). */
static void emit_num(struct sn_text *l, const char *key, double v, int digits)
{
	if (!isfinite(v) || v < 0)
		sn_text_add(l, ",\"%s\":null", key);
	else
		sn_text_add(l, ",\"%s\":%.*f", key, digits, v);
}

bool sn_record_path_valid(const char *pattern)
{
	for (const char *p = strchr(pattern, '%'); p; p = strchr(p + 2, '%'))
		if (p[1] != 'n' && p[1] != '%')
			return false;
	return true;
}

int sn_record_path(char *dst, size_t cap, const char *pattern,
		   const char *node)
{
	struct sn_text t = { dst, cap, 0, false };

	if (!sn_record_path_valid(pattern) || !node[0] || strchr(node, '/') ||
	    strcmp(node, ".") == 0 || strcmp(node, "..") == 0)
		return -1;
	for (const char *p = pattern; *p; p++) {
		if (*p != '%') {
			sn_text_add(&t, "%c", *p);
			continue;
		}
		p++;
		sn_text_add(&t, "%s", *p == 'n' ? node : "%");
	}
	return t.full ? -1 : 0;
}

void sn_record_gpu_model(const struct sn_warmup_result *res, char *buf,
			 size_t cap)
{
	buf[0] = '\0';
	if (!res || res->n_gpus == 0 || !res->gpus[0].name[0])
		return;
	for (size_t i = 1; i < res->n_gpus; i++)
		if (strcmp(res->gpus[i].name, res->gpus[0].name) != 0) {
			snprintf(buf, cap, "mixed");
			return;
		}
	snprintf(buf, cap, "%s", res->gpus[0].name);
}

static void emit_gpus(struct sn_text *l, const struct sn_warmup_result *res)
{
	char model[96];

	sn_record_gpu_model(res, model, sizeof(model));
	sn_text_add(l, ",\"gpu_count\":%zu", res ? res->n_gpus : (size_t)0);
	emit_str(l, "gpu_model", model);
	sn_text_add(l, ",\"gpus\":[");
	for (size_t i = 0; res && i < res->n_gpus; i++) {
		sn_text_add(l, "%s{\"index\":%d", i ? "," : "", res->gpus[i].index);
		emit_str(l, "busid", res->gpus[i].busid);
		emit_str(l, "uuid", res->gpus[i].uuid);
		emit_str(l, "name", res->gpus[i].name);
		emit_num(l, "nccl_mem_mib", res->gpus[i].nccl_mem_mib, 1);
		sn_text_add(l, "}");
	}
	sn_text_add(l, "]");
}

static void emit_result(struct sn_text *l, const struct sn_warmup_result *res)
{
	emit_str(l, "driver_version", res ? res->driver_version : NULL);
	if (res && res->cuda_driver_version >= 0)
		sn_text_add(l, ",\"cuda_driver_version\":%ld",
		     res->cuda_driver_version);
	else
		sn_text_add(l, ",\"cuda_driver_version\":null");
	emit_str(l, "nccl_version", res ? res->nccl_version : NULL);
	emit_str(l, "nccl_path", res ? res->nccl_path : NULL);
	emit_str(l, "nccl_source", res ? res->nccl_source : NULL);
	emit_str(l, "transport", res ? res->transport : NULL);
	emit_str(l, "blame_node", res ? res->blame_node : NULL);
	sn_text_add(l, ",\"timings_ms\":{\"total\":");
	if (res && isfinite(res->total_ms) && res->total_ms > 0)
		sn_text_add(l, "%.1f", res->total_ms);
	else
		sn_text_add(l, "null");
	for (int i = 0; i < SN_RESULT_PHASES; i++)
		emit_num(l, sn_result_phase_names[i],
			 res ? res->phase_ms[i] : -1, 1);
	sn_text_add(l, "}");
	/* The helper reports 0 / null outside bandwidth mode. */
	emit_num(l, "busbw_gbps",
		 res && res->busbw_gbps > 0 ? res->busbw_gbps : -1, 3);
	if (res) {
		bool any = false;

		for (int i = 0; i < SN_RESULT_COLLECTIVES; i++)
			any |= res->collective_ms[i] >= 0;
		if (any) {
			sn_text_add(l, ",\"collectives\":{");
			for (int i = 0; i < SN_RESULT_COLLECTIVES; i++) {
				double ms = res->collective_ms[i];

				sn_text_add(l, "%s\"%s\":", i ? "," : "",
				     sn_result_collective_names[i]);
				if (isfinite(ms) && ms >= 0)
					sn_text_add(l, "%.3f", ms);
				else
					sn_text_add(l, "null");
			}
			sn_text_add(l, "}");
		} else {
			sn_text_add(l, ",\"collectives\":null");
		}
	} else {
		sn_text_add(l, ",\"collectives\":null");
	}
	emit_str(l, "failed_op", res ? res->failed_op : NULL);
}

size_t sn_record_format(const struct sn_record *r, char *buf, size_t cap)
{
	struct sn_text l = { buf, cap, 0, false };
	char stamp[40];
	struct tm tm;
	time_t secs = (time_t)r->time;

	if (!gmtime_r(&secs, &tm))
		memset(&tm, 0, sizeof(tm));
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	sn_text_add(&l, "{\"record\":\"spank-nccl-warmup\",\"version\":%d",
	     SN_RECORD_VERSION);
	sn_text_add(&l, ",\"time\":\"%s.%03dZ\",\"ts\":%.3f", stamp,
	     (int)((r->time - (double)secs) * 1000) % 1000, r->time);
	emit_str(&l, "source", r->source);
	emit_str(&l, "node", r->node);
	if (r->job >= 0)
		sn_text_add(&l, ",\"job\":%ld", r->job);
	else
		sn_text_add(&l, ",\"job\":null");
	if (r->step == -2)
		sn_text_add(&l, ",\"step\":\"batch\"");
	else if (r->step >= 0)
		sn_text_add(&l, ",\"step\":%ld", r->step);
	else
		sn_text_add(&l, ",\"step\":null");
	emit_str(&l, "user", r->user);
	if (r->uid >= 0)
		sn_text_add(&l, ",\"uid\":%ld", r->uid);
	else
		sn_text_add(&l, ",\"uid\":null");
	emit_str(&l, "mode", r->mode);
	sn_text_add(&l, ",\"verdict\":\"%s\",\"class\":\"%s\"",
	     r->pass ? "pass" : "fail", sn_record_class_name(r->class));
	if (r->exit_code >= 0)
		sn_text_add(&l, ",\"exit_code\":%d", r->exit_code);
	else
		sn_text_add(&l, ",\"exit_code\":null");
	if (r->signal > 0)
		sn_text_add(&l, ",\"signal\":%d", r->signal);
	else
		sn_text_add(&l, ",\"signal\":null");
	emit_str(&l, "policy", r->policy);
	sn_text_add(&l, ",\"reused\":%s", r->reused ? "true" : "false");
	emit_num(&l, "elapsed_ms", r->elapsed_ms, 1);
	emit_str(&l, "message", r->message);
	emit_str(&l, "gpus_requested", r->gpus_requested);
	emit_gpus(&l, r->result);
	emit_result(&l, r->result);
	sn_text_add(&l, "}\n");
	if (l.full) {
		buf[0] = '\0';
		return 0;
	}
	return l.len;
}

/* What a non-regular file is, for messages. */
static const char *file_kind(mode_t m)
{
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISLNK(m))
		return "a symbolic link";
	return "a special file";
}

int sn_record_sink_check(int fd, const char *path, const char *label,
			 struct sn_error *err)
{
	uid_t euid = geteuid();
	struct stat st;
	int fl;

	if (fstat(fd, &st) < 0) {
		sn_error_set(err, "cannot stat %s%s: %s", label, path,
			     strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		sn_error_set(err, "%s%s: is %s, not a regular file; remove it or choose another path",
			     label, path, file_kind(st.st_mode));
		goto refused;
	}
	/* Root writes here: a file someone else owns is theirs to change. */
	if (st.st_uid != euid) {
		if (euid == 0)
			sn_error_set(err, "%s%s: owned by uid %u, not root; remove it (a sink is root's, in a directory only root can write)",
				     label, path, (unsigned int)st.st_uid);
		else
			sn_error_set(err, "%s%s: owned by uid %u, not uid %u (who writes it); remove it",
				     label, path, (unsigned int)st.st_uid,
				     (unsigned int)euid);
		goto refused;
	}
	/* A hard link made by a user could be another root file. */
	if (st.st_nlink != 1) {
		sn_error_set(err, "%s%s: has %lu hard links, a sink must have one; remove it",
			     label, path, (unsigned long)st.st_nlink);
		goto refused;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		sn_error_set(err, "cannot use %s%s: %s", label, path,
			     strerror(errno));
		return -1;
	}
	return 0;
refused:
	errno = EINVAL;
	return -1;
}

int sn_record_sink_open(const char *path, const char *label, int flags,
			mode_t mode, struct sn_error *err)
{
	struct stat st;
	int fd, e;

	/* O_NONBLOCK: a FIFO planted here must not hang slurmstepd. */
	fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
		  O_NOCTTY, mode);
	if (fd < 0) {
		e = errno;
		/* A FIFO without a reader: ENXIO, say what it is instead. */
		if (e == ENXIO && lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
			sn_error_set(err, "%s%s: is %s, not a regular file; remove it or choose another path",
				     label, path, file_kind(st.st_mode));
		else
			sn_error_set(err, "cannot open %s%s: %s", label, path,
				     strerror(e));
		errno = e;
		return -1;
	}
	if (sn_record_sink_check(fd, path, label, err) < 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int sn_record_append(const char *pattern, const char *node, const char *line,
		     size_t len, struct sn_error *err)
{
	char path[4096];
	ssize_t n;
	int fd, saved;

	if (sn_record_path(path, sizeof(path), pattern, node) < 0) {
		sn_error_set(err, "%s: no path for node \"%s\"", pattern, node);
		return -1;
	}
	fd = sn_record_sink_open(path, "record_file ",
				 O_WRONLY | O_APPEND | O_CREAT, 0640, err);
	if (fd < 0)
		return -1;
	/* One write(): O_APPEND makes it atomic against other appenders
	 * of the same file on a local file system. */
	n = write(fd, line, len);
	saved = errno;
	if (close(fd) < 0 && n == (ssize_t)len) {
		n = -1;
		saved = errno;
	}
	if (n != (ssize_t)len) {
		sn_error_set(err, "cannot write record_file %s: %s", path,
			     n < 0 ? strerror(saved) : "short write");
		return -1;
	}
	return 0;
}

void sn_record_syslog(const char *line, size_t len)
{
	while (len && line[len - 1] == '\n')
		len--;
	/* No openlog(): inside slurmstepd that would change Slurm's own
	 * syslog identity.  The record is one line (escaped), so one
	 * message. */
	syslog(LOG_DAEMON | LOG_INFO, "spank-nccl: record %.*s", (int)len,
	       line);
}

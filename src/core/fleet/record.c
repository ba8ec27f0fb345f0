/* SPDX-License-Identifier: MIT */
/*
 * Writes the fleet record (record.h).  The JSON is built from the schema
 * table (record_schema.c: keys, order, decimals), one typed value per
 * field: strings through sn_json_escape (quotes, backslashes, control
 * characters escaped, non-ASCII replaced), numbers only when finite, so
 * the line is valid JSON whatever the helper printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fleet/record.h"
#include "protocol/json_write.h"
#include "base/textbuf.h"
#include "protocol/helper_protocol.h"

const char *sn_record_class_name(enum sn_record_class c)
{
	return sn_record_class_names[(unsigned int)c < SN_CLASS_COUNT ? c :
				      SN_CLASS_INTERNAL];
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
	case SN_WARMUP_GPU_HEALTH: return SN_CLASS_GPU_HEALTH;
	case SN_WARMUP_GPU_BUSY: return SN_CLASS_GPU_BUSY;
	case SN_WARMUP_CONTAINER_NCCL: return SN_CLASS_CONTAINER_NCCL;
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
	return strcmp(name, sn_record_class_names[SN_CLASS_PEER_FAILED]) != 0 &&
	       strcmp(name, sn_record_class_names[SN_CLASS_FABRIC_SETUP]) != 0;
}

enum sn_fault sn_record_fault(enum sn_record_class c,
			      const struct sn_warmup_result *res)
{
	enum sn_fault f = res ? sn_fault_parse(res->fault) : SN_FAULT_NONE;

	if (c == SN_CLASS_OK)
		return SN_FAULT_NONE;
	/* The helper's word only for the code it exited with. */
	if (f != SN_FAULT_NONE && sn_fault_from_helper(c) &&
	    sn_record_class_of_exit(res->exit_code) == c)
		return f;
	return sn_fault_of_class(c);
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

/*
 * One value of the record, as field_value() gives it: its JSON type (one
 * SN_T_* of the field's) and content.  Unknown values are null.
 */
struct value {
	unsigned int type;
	const char *s;		/* SN_T_STRING */
	long long i;		/* SN_T_INTEGER */
	double n;		/* SN_T_NUMBER, written with the field's decimals */
	bool b;			/* SN_T_BOOLEAN */
	size_t count;		/* SN_T_ARRAY: its items */
};

struct format_ctx {
	const struct sn_record *r;
	const struct sn_record_part *part;	/* what to write of it */
	const struct sn_warmup_result *res;	/* NULL: no result parsed */
	char stamp[40];				/* "time" */
	char model[96];				/* "gpu_model" */
};

static const struct value null_value = { .type = SN_T_NULL };

/* A string; an empty one is unknown. */
static struct value str(const char *s)
{
	return s && *s ? (struct value){ .type = SN_T_STRING, .s = s } :
			 null_value;
}

/* A count or id; negative is unknown. */
static struct value integer(long long v)
{
	return v >= 0 ? (struct value){ .type = SN_T_INTEGER, .i = v } :
			null_value;
}

/* A measurement; negative or not finite is unknown. */
static struct value number(double v)
{
	return isfinite(v) && v >= 0 ?
	       (struct value){ .type = SN_T_NUMBER, .n = v } : null_value;
}

/* An object (its fields) or an array of COUNT objects. */
static struct value container(unsigned int type, size_t count)
{
	return (struct value){ .type = type, .count = count };
}

/* Fields taken from the helper's result: null without one. */
static struct value result_value(const struct sn_warmup_result *res,
				 enum sn_field f, size_t gpu)
{
	bool any = false;

	switch (f) {
	case SN_F_GPU_INDEX: return integer(res->gpus[gpu].index);
	case SN_F_GPU_BUSID: return str(res->gpus[gpu].busid);
	case SN_F_GPU_UUID: return str(res->gpus[gpu].uuid);
	case SN_F_GPU_NAME: return str(res->gpus[gpu].name);
	case SN_F_GPU_NCCL_MEM_MIB: return number(res->gpus[gpu].nccl_mem_mib);
	case SN_F_DRIVER_VERSION: return str(res->driver_version);
	case SN_F_CUDA_DRIVER_VERSION:
		return integer(res->cuda_driver_version);
	case SN_F_NCCL_VERSION: return str(res->nccl_version);
	case SN_F_NCCL_PATH: return str(res->nccl_path);
	case SN_F_NCCL_SOURCE: return str(res->nccl_source);
	case SN_F_TRANSPORT: return str(res->transport);
	case SN_F_BLAME_NODE: return str(res->blame_node);
	case SN_F_FABRIC:
		return res->fabric.present ? container(SN_T_OBJECT, 0) :
					     null_value;
	case SN_F_FAB_NODES: return integer(res->fabric.nodes);
	case SN_F_FAB_NODE_INDEX: return integer(res->fabric.node_index);
	case SN_F_FAB_RANKS: return integer(res->fabric.ranks);
	case SN_F_FAB_RANK_BASE: return integer(res->fabric.rank_base);
	case SN_F_FAB_COORDINATOR: return str(res->fabric.coordinator);
	case SN_F_FAB_REFUSED: return integer(res->fabric.refused);
	case SN_F_HEALTH_STATUS: return str(res->health_status);
	case SN_F_HEALTH_FINDINGS: return str(res->health_findings);
	/* 0 is what the helper reports for "not measured". */
	case SN_F_T_TOTAL: return number(res->total_ms > 0 ? res->total_ms : -1);
	case SN_F_BUSBW: return number(res->busbw_gbps > 0 ? res->busbw_gbps : -1);
	case SN_F_BYTES: return integer(res->busbw_gbps > 0 ? res->bytes : -1);
	case SN_F_COLLECTIVES:
		for (int i = 0; i < SN_RESULT_COLLECTIVES; i++)
			any |= res->collective_ms[i] >= 0;
		return any ? container(SN_T_OBJECT, 0) : null_value;
	case SN_F_FAILED_OP: return str(res->failed_op);
	default:
		break;
	}
	if (f >= SN_F_T_CUDA_INIT && f < SN_F_T_CUDA_INIT + SN_RESULT_PHASES)
		return number(res->phase_ms[f - SN_F_T_CUDA_INIT]);
	if (f >= SN_F_C_ALLREDUCE &&
	    f < SN_F_C_ALLREDUCE + SN_RESULT_COLLECTIVES)
		return number(res->collective_ms[f - SN_F_C_ALLREDUCE]);
	return null_value;
}

/* The value of field F (of the GPU ITEM, for a GPU's fields). */
static struct value field_value(const struct format_ctx *c, enum sn_field f,
				size_t item)
{
	const struct sn_record *r = c->r;
	size_t n_gpus = c->res ? c->res->n_gpus : 0;

	switch (f) {
	case SN_F_RECORD: return str(sn_fields[f].values[0]);
	case SN_F_VERSION: return integer(SN_RECORD_VERSION);
	case SN_F_SCHEMA: return integer(SN_RECORD_SCHEMA);
	case SN_F_PRODUCER: return str(SN_RECORD_PRODUCER);
	case SN_F_TIME: return str(c->stamp);
	case SN_F_TS: return number(r->time);
	case SN_F_SOURCE: return str(r->source);
	case SN_F_NODE: return str(r->node);
	case SN_F_JOB: return integer(r->job);
	case SN_F_CLUSTER: return str(r->cluster);
	case SN_F_STEP: return integer(r->step);
	case SN_F_STEP_KIND: return str(r->step_kind);
	case SN_F_USER: return str(r->user);
	case SN_F_UID: return integer(r->uid);
	case SN_F_MODE: return str(r->mode);
	/* The table's verdicts: "pass", then "fail". */
	case SN_F_VERDICT: return str(sn_fields[f].values[r->pass ? 0 : 1]);
	case SN_F_CLASS: return str(sn_record_class_name(r->class));
	case SN_F_FAULT: return str(r->pass ? NULL : sn_fault_name(r->fault));
	case SN_F_EXIT_CODE: return integer(r->exit_code);
	case SN_F_SIGNAL: return integer(r->signal > 0 ? r->signal : -1);
	case SN_F_POLICY: return str(r->policy);
	case SN_F_REUSED:
		return (struct value){ .type = SN_T_BOOLEAN, .b = r->reused };
	case SN_F_ELAPSED_MS: return number(r->elapsed_ms);
	case SN_F_MESSAGE: return str(r->message);
	case SN_F_HANG: return str(r->hang);
	case SN_F_GPUS_REQUESTED: return str(r->gpus_requested);
	case SN_F_GPU_COUNT: return integer((long long)n_gpus);
	case SN_F_GPU_MODEL: return str(c->model);
	case SN_F_GPUS: return container(SN_T_ARRAY, n_gpus);
	case SN_F_TIMINGS: return container(SN_T_OBJECT, 0);
	default:
		return c->res ? result_value(c->res, f, item) : null_value;
	}
}

/* S as a JSON string (json_write.c: the line stays one valid line),
 * cut to CAP bytes and "..." when CAP is not 0. */
static void emit_string(struct sn_text *l, const char *s, size_t cap)
{
	char cut[SN_JSON_STRING_MAX];

	if (cap && strlen(s) > cap) {
		snprintf(cut, sizeof(cut), "%.*s...", (int)cap, s);
		s = cut;
	}
	sn_json_add_string(l, s);
}

static void emit_members(struct sn_text *l, const struct format_ctx *c,
			 enum sn_field parent, size_t item);

static void emit_value(struct sn_text *l, const struct format_ctx *c,
		       enum sn_field f, size_t item)
{
	struct value v = field_value(c, f, item);

	switch (v.type) {
	case SN_T_STRING:
		emit_string(l, v.s, c->part->str_cap);
		break;
	case SN_T_INTEGER:
		sn_text_add(l, "%lld", v.i);
		break;
	case SN_T_NUMBER:
		sn_text_add(l, "%.*f", sn_fields[f].decimals, v.n);
		break;
	case SN_T_BOOLEAN:
		sn_text_add(l, "%s", v.b ? "true" : "false");
		break;
	case SN_T_OBJECT:
		sn_text_add(l, "{");
		emit_members(l, c, f, item);
		sn_text_add(l, "}");
		break;
	case SN_T_ARRAY:
		sn_text_add(l, "[");
		for (size_t i = c->part->gpu_from;
		     i < v.count && i < c->part->gpu_to; i++) {
			sn_text_add(l, "%s{", i > c->part->gpu_from ? "," : "");
			emit_members(l, c, f, i);
			sn_text_add(l, "}");
		}
		sn_text_add(l, "]");
		break;
	default:
		sn_text_add(l, "null");
	}
}

/* Every record field of PARENT, in the table's order: all, always. */
static void emit_members(struct sn_text *l, const struct format_ctx *c,
			 enum sn_field parent, size_t item)
{
	const char *sep = "";

	for (int f = 0; f < SN_F_COUNT; f++) {
		if (sn_fields[f].parent != parent ||
		    !(sn_fields[f].docs & SN_IN_RECORD) ||
		    (parent == SN_F_TOP && c->part->keep &&
		     !c->part->keep((enum sn_field)f)))
			continue;
		sn_text_add(l, "%s\"%s\":", sep, sn_fields[f].key);
		emit_value(l, c, (enum sn_field)f, item);
		sep = ",";
	}
}

size_t sn_record_format(const struct sn_record *r, char *buf, size_t cap)
{
	static const struct sn_record_part whole = { .gpu_to = (size_t)-1 };
	size_t n = sn_record_format_part(r, &whole, NULL, buf, cap);

	if (!n || n + 2 > cap) {
		buf[0] = '\0';
		return 0;
	}
	buf[n++] = '\n';
	buf[n] = '\0';
	return n;
}

size_t sn_record_format_part(const struct sn_record *r,
			     const struct sn_record_part *part,
			     const char *extra, char *buf, size_t cap)
{
	struct sn_text l = { buf, cap, 0, false };
	struct format_ctx c = { .r = r, .part = part, .res = r->result };
	char day[32];
	struct tm tm;
	time_t secs = (time_t)r->time;

	if (!gmtime_r(&secs, &tm))
		memset(&tm, 0, sizeof(tm));
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(c.stamp, sizeof(c.stamp), "%s.%03dZ", day,
		 (int)((r->time - (double)secs) * 1000) % 1000);
	sn_record_gpu_model(r->result, c.model, sizeof(c.model));
	sn_text_add(&l, "{%s%s", extra ? extra : "", extra ? "," : "");
	emit_members(&l, &c, SN_F_TOP, 0);
	sn_text_add(&l, "}");
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

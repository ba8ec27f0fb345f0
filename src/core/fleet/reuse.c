/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fleet/reuse.h"
#include "protocol/helper_protocol.h"
#include "base/strutil.h"

/* Variables besides NCCL_* that change which NCCL runs, or how. */
static const char *const key_env_names[] = {
	"LD_LIBRARY_PATH", "LD_PRELOAD", "CUDA_DEVICE_ORDER",
	SN_HELPER_ENV_CONTAINER_LDPATH,
};
/* NCCL_* that do not: ras=step gives every step its own address. */
static const char *const key_env_ignored[] = { "NCCL_RAS_ADDR" };

static bool name_in(const char *entry, size_t n, const char *const *names,
		    size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (strlen(names[i]) == n && strncmp(entry, names[i], n) == 0)
			return true;
	return false;
}

struct buf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
	char *grown;

	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->cap ? b->cap * 2 : 256) + n;

		grown = realloc(b->p, cap);
		if (!grown) {
			b->oom = true;
			return;
		}
		b->p = grown;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* "LABEL" VALUE "\n", with '\\' and '\n' in VALUE escaped. */
static void buf_item(struct buf *b, const char *label, const char *value)
{
	const char *s;

	buf_add(b, label, strlen(label));
	for (s = value ? value : ""; *s; s++) {
		if (*s == '\\')
			buf_add(b, "\\\\", 2);
		else if (*s == '\n')
			buf_add(b, "\\n", 2);
		else
			buf_add(b, s, 1);
	}
	buf_add(b, "\n", 1);
}

static bool key_env_wanted(const char *entry)
{
	const char *eq = strchr(entry, '=');
	size_t n = eq ? (size_t)(eq - entry) : 0;

	if (!eq)
		return false;
	if (n > 5 && strncmp(entry, "NCCL_", 5) == 0)
		return !name_in(entry, n, key_env_ignored,
				sizeof(key_env_ignored) /
				sizeof(key_env_ignored[0]));
	return name_in(entry, n, key_env_names,
		       sizeof(key_env_names) / sizeof(key_env_names[0]));
}

/* By name; a name is unique in an environment, so ties do not matter. */
static int cmp_entry(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* FNV-1a, 64 bit: names the file; the full key is compared anyway. */
static uint64_t fnv1a64(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037ULL;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

int sn_reuse_key_build(struct sn_reuse_key *key,
		       const struct sn_reuse_inputs *in, struct sn_error *err)
{
	struct buf b = { 0 };
	const char **picked = NULL;
	size_t n = 0, count = 0, i;

	memset(key, 0, sizeof(*key));
	for (i = 0; in->envp && in->envp[i]; i++)
		count++;
	if (count) {
		picked = calloc(count, sizeof(*picked));
		if (!picked)
			goto oom;
	}
	for (i = 0; i < count; i++)
		if (key_env_wanted(in->envp[i]))
			picked[n++] = in->envp[i];
	if (n)	/* qsort's base must not be NULL, even for 0 entries */
		qsort(picked, n, sizeof(*picked), cmp_entry);
	buf_item(&b, "node=", in->node);
	buf_item(&b, "gpus=", in->gpus);
	buf_item(&b, "visible=", in->visible);
	buf_item(&b, "helper=", in->helper);
	/* Which NCCL the helper loads: the same library, or warm again. */
	buf_item(&b, "nccl=", in->nccl ? in->nccl : "");
	buf_item(&b, "nccl_default=", in->nccl_default ? in->nccl_default : "");
	/* A container step's NCCL is its image's: only that image's pass. */
	if (in->image)
		buf_item(&b, "image=", in->image);
	for (i = 0; i < n; i++)
		buf_item(&b, "env:", picked[i]);
	free(picked);
	if (b.oom)
		goto oom;
	key->text = b.p;
	key->len = b.len;
	snprintf(key->name, sizeof(key->name), "%016" PRIx64,
		 fnv1a64(b.p, b.len));
	return 0;
oom:
	free(b.p);
	sn_error_set(err, "warmup reuse: out of memory");
	return -1;
}

void sn_reuse_key_free(struct sn_reuse_key *key)
{
	free(key->text);
	memset(key, 0, sizeof(*key));
}

int sn_reuse_record_format(const struct sn_reuse_record *rec, char **buf,
			   size_t *len)
{
	char head[512];
	int n;

	n = snprintf(head, sizeof(head),
		     SN_REUSE_MAGIC "\njob=%" PRIu32 "\nuid=%lu\nstep=%" PRIu32
		     "\nmode=%s\nbytes=%lu\nmin_busbw=%.6f\nelapsed_ms=%.0f\nkey_len=%zu\n",
		     rec->job_id, (unsigned long)rec->uid, rec->step_id,
		     sn_warmup_mode_name(rec->mode), rec->bytes,
		     rec->min_busbw, rec->elapsed_ms, rec->key_len);
	if (n < 0 || (size_t)n >= sizeof(head) ||
	    (size_t)n + rec->key_len > SN_REUSE_RECORD_MAX)
		return -1;
	*buf = malloc((size_t)n + rec->key_len + 1);
	if (!*buf)
		return -1;
	memcpy(*buf, head, (size_t)n);
	memcpy(*buf + n, rec->key, rec->key_len);
	(*buf)[n + rec->key_len] = '\0';
	*len = (size_t)n + rec->key_len;
	return 0;
}

/*
 * Reads the next "NAME=" line of the header into VALUE; the line must be
 * exactly the expected name.
 */
static int header_line(const char **cursor, const char *end, const char *name,
		       char *value, size_t len)
{
	const char *nl = memchr(*cursor, '\n', (size_t)(end - *cursor));
	size_t nlen = strlen(name), vlen;

	if (!nl || (size_t)(nl - *cursor) <= nlen ||
	    strncmp(*cursor, name, nlen) != 0 || (*cursor)[nlen] != '=')
		return -1;
	vlen = (size_t)(nl - *cursor) - nlen - 1;
	if (vlen == 0 || vlen >= len)
		return -1;
	memcpy(value, *cursor + nlen + 1, vlen);
	value[vlen] = '\0';
	*cursor = nl + 1;
	return 0;
}

static int parse_double(const char *s, double *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*out = strtod(s, &end);
	return (errno || *end) ? -1 : 0;
}

int sn_reuse_record_parse(const char *buf, size_t len,
			  struct sn_reuse_record *rec, struct sn_error *err)
{
	static const char magic[] = SN_REUSE_MAGIC "\n";
	const char *cur = buf, *end = buf + len;
	char v[64];
	unsigned long long u;

	memset(rec, 0, sizeof(*rec));
	if (len < sizeof(magic) - 1 || memcmp(buf, magic, sizeof(magic) - 1)) {
		sn_error_set(err, "not a warmup record (first line)");
		return -1;
	}
	cur += sizeof(magic) - 1;
#define FIELD(name, conv) \
	if (header_line(&cur, end, name, v, sizeof(v)) < 0 || (conv)) { \
		sn_error_set(err, "bad or missing \"%s\" line", name); \
		return -1; \
	}
	FIELD("job", sn_parse_u64(v, UINT32_MAX, &u));
	rec->job_id = (uint32_t)u;
	FIELD("uid", sn_parse_u64(v, UINT32_MAX, &u));
	rec->uid = (uid_t)u;
	FIELD("step", sn_parse_u64(v, UINT32_MAX, &u));
	rec->step_id = (uint32_t)u;
	FIELD("mode", (rec->mode = sn_warmup_mode_from_name(v)) ==
		      SN_WARMUP_MODE_UNSET || rec->mode == SN_WARMUP_MODE_OFF);
	FIELD("bytes", sn_parse_u64(v, ULONG_MAX, &u));
	rec->bytes = (unsigned long)u;
	FIELD("min_busbw", parse_double(v, &rec->min_busbw));
	FIELD("elapsed_ms", parse_double(v, &rec->elapsed_ms));
	FIELD("key_len", sn_parse_u64(v, SN_REUSE_RECORD_MAX, &u));
#undef FIELD
	if ((size_t)(end - cur) != u) {
		sn_error_set(err, "the key is %zu bytes, the header says %llu",
			     (size_t)(end - cur), u);
		return -1;
	}
	rec->key = cur;
	rec->key_len = (size_t)u;
	return 0;
}

bool sn_reuse_mode_covers(enum sn_warmup_mode have, enum sn_warmup_mode want)
{
	/*
	 * The enum is ordered by thoroughness: check < comm < bandwidth.  A
	 * fabric pass is never reused and never satisfies another step: its
	 * value is the step's own nodes and network (a later step has other
	 * nodes or ports), so it neither covers nor is covered.
	 */
	return have >= SN_WARMUP_MODE_CHECK && want >= SN_WARMUP_MODE_CHECK &&
	       have <= SN_WARMUP_MODE_BANDWIDTH && have >= want;
}

int sn_reuse_record_usable(const struct sn_reuse_record *have,
			   const struct sn_reuse_record *want,
			   struct sn_error *why)
{
	char a[32], b[32];

	if (have->job_id != want->job_id) {
		sn_error_set(why, "written for job %" PRIu32, have->job_id);
		return -1;
	}
	if (have->uid != want->uid) {
		sn_error_set(why, "written for uid %lu",
			     (unsigned long)have->uid);
		return -1;
	}
	if (have->key_len != want->key_len ||
	    memcmp(have->key, want->key, want->key_len) != 0) {
		sn_error_set(why, "different node, GPUs, NCCL or NCCL_* settings");
		return -1;
	}
	if (!sn_reuse_mode_covers(have->mode, want->mode)) {
		sn_error_set(why, "%s mode passed, %s asked for",
			     sn_warmup_mode_name(have->mode),
			     sn_warmup_mode_name(want->mode));
		return -1;
	}
	if (want->mode == SN_WARMUP_MODE_BANDWIDTH) {
		/* Compared as written, so a round trip cannot differ. */
		snprintf(a, sizeof(a), "%.6f", have->min_busbw);
		snprintf(b, sizeof(b), "%.6f", want->min_busbw);
		if (have->bytes != want->bytes || strcmp(a, b) != 0) {
			sn_error_set(why, "bandwidth measured with other warmup_bytes or warmup_min_busbw");
			return -1;
		}
	}
	return 0;
}

int sn_reuse_stat_trusted(const struct stat *st, bool dir,
			  struct sn_error *why)
{
	if (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode)) {
		sn_error_set(why, "not a %s", dir ? "directory" : "regular file");
		return -1;
	}
	if (st->st_uid != 0) {
		sn_error_set(why, "owned by uid %lu, not root",
			     (unsigned long)st->st_uid);
		return -1;
	}
	if (st->st_mode & 077) {
		sn_error_set(why, "mode %04o: group or others have access",
			     (unsigned int)(st->st_mode & 07777));
		return -1;
	}
	if (!dir && st->st_nlink != 1) {
		sn_error_set(why, "%lu hard links", (unsigned long)st->st_nlink);
		return -1;
	}
	return 0;
}

/* The executable's file name, " (deleted)" aside (replaced by an upgrade). */
static bool exe_name(int at, const char *name, char *buf, size_t cap)
{
	static const char deleted[] = " (deleted)";
	char link[PATH_MAX];
	const char *base;
	ssize_t n;
	size_t len;

	n = readlinkat(at, name, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = '\0';
	len = (size_t)n;
	if (len > sizeof(deleted) - 1 &&
	    strcmp(link + len - (sizeof(deleted) - 1), deleted) == 0)
		link[len - (sizeof(deleted) - 1)] = '\0';
	base = strrchr(link, '/');
	base = base ? base + 1 : link;
	if (!*base || strlen(base) >= cap)
		return false;
	strcpy(buf, base);
	return true;
}

/* Reads file NAME of directory AT into BUF (NUL-terminated); its length. */
static ssize_t read_small(int at, const char *name, char *buf, size_t cap)
{
	int fd = openat(at, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/*
 * The real uid in a /proc/PID/status text; -1 if absent.  The one "Uid:"
 * line: the kernel escapes a newline in "Name:" (a comm any user sets).
 */
static long real_uid(const char *status)
{
	const char *line = strstr(status, "\nUid:");
	unsigned long u;

	if (!line || sscanf(line + 5, "%lu", &u) != 1)
		return -1;
	return (long)u;
}

/*
 * A slurmstepd of job JOB is a process with:
 *  - the title "slurmstepd: [JOB." ("[JOB+" for a het job) that
 *    slurmstepd.c:_set_job_log_prefix() sets (22.05 to 26.05).  Any user
 *    can give a process that title (exec -a, argv rewriting; comm through
 *    PR_SET_NAME), so it only says which job, never that it is Slurm's;
 *  - real uid 0: slurmd starts slurmstepd as root and slurmstepd only
 *    ever changes its effective uid (user_init runs with euid = the
 *    user), while no user process has a real uid 0 (a setuid-root
 *    program keeps its caller's);
 *  - the executable this code runs in (PROC/self/exe: the plugin lives in
 *    slurmstepd, whatever its path: /usr/sbin/slurmstepd, Debian's
 *    slurmstepd-wlm, a prefix build), compared by file name, so a root
 *    program started under a forged title (su, sudo, a setuid helper) is
 *    not taken for it.  Not by inode: an upgrade replaces the binary
 *    under running jobs.
 * All three are read through one PROC/PID descriptor: a PID reused
 * between the reads fails them instead of mixing two processes.  The
 * owner of PROC/PID is not used: a non-dumpable user process shows as
 * root's.  The slurmd spool's step sockets would need SlurmdSpoolDir,
 * which SPANK does not give; cgroups depend on the proctrack plugin.
 * What cannot be read does not count: at worst a live job's records go
 * and its next step warms up again.
 */
bool sn_reuse_job_alive(const char *proc, uint32_t job)
{
	char want[48], want_het[48], self[256], exe[256], text[1024];
	struct dirent *de;
	bool alive = false;
	DIR *d;
	int dfd, pfd;

	snprintf(want, sizeof(want), "slurmstepd: [%" PRIu32 ".", job);
	snprintf(want_het, sizeof(want_het), "slurmstepd: [%" PRIu32 "+", job);
	/* By path: valgrind answers "/proc/self/exe" with its guest. */
	snprintf(text, sizeof(text), "%s/self/exe", proc);
	if (!exe_name(AT_FDCWD, text, self, sizeof(self)))
		return true;	/* cannot tell: keep the records */
	d = opendir(proc);
	if (!d)
		return true;
	dfd = dirfd(d);
	while (!alive && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pfd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY |
			     O_NOFOLLOW | O_CLOEXEC);
		if (pfd < 0)
			continue;
		alive = read_small(pfd, "cmdline", text, 64) > 0 &&
			(strncmp(text, want, strlen(want)) == 0 ||
			 strncmp(text, want_het, strlen(want_het)) == 0) &&
			read_small(pfd, "status", text, sizeof(text)) > 0 &&
			real_uid(text) == 0 &&
			exe_name(pfd, "exe", exe, sizeof(exe)) &&
			strcmp(exe, self) == 0;
		close(pfd);
	}
	closedir(d);
	return alive;
}

void sn_reuse_job_dir_name(char *buf, size_t len, uint32_t job_id)
{
	snprintf(buf, len, "job-%" PRIu32, job_id);
}

bool sn_reuse_job_dir_parse(const char *name, uint32_t *job_id)
{
	unsigned long long u;

	if (strncmp(name, "job-", 4) != 0 || name[4] == '0' ||
	    sn_parse_u64(name + 4, UINT32_MAX, &u) < 0)
		return false;
	*job_id = (uint32_t)u;
	return true;
}

/* SPDX-License-Identifier: MIT */
/*
 * The node's .prom file (prom.h): the lock, the read back, the atomic
 * rewrite.  The series themselves are prom_state.c's.
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

#include "base/clock.h"
#include "fleet/prom.h"
#include "base/textbuf.h"

#define PROM_MAX_BYTES 65536
/* A lock holder only reads and rewrites a small file. */
#define LOCK_WAIT_MS 5000

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
	struct sn_prom_state *st = NULL;
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
	st = malloc(sizeof(*st));
	text = malloc(PROM_MAX_BYTES);
	if (!st || !text) {
		sn_error_set(err, "out of memory");
		goto out;
	}
	if (read_state(path, st, err) < 0)
		goto out;
	if (sn_prom_state_add(st, r) < 0) {
		sn_error_set(err, "more than %d series: not written",
			     SN_PROM_MAX_SAMPLES);
		goto out;
	}
	len = sn_prom_render(st, r, text, PROM_MAX_BYTES);
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
	free(st);
	free(text);
	close(lock);
	return rc;
}

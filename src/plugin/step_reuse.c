/* SPDX-License-Identifier: MIT */
/*
 * slurmstepd: one warmup per node, GPU set, NCCL and NCCL_* settings per
 * job (src/core/fleet/reuse.h has the key and the record).  Design and threat
 * model: docs/design.md ("Warmup reuse") and docs/security.md.
 *
 *  - Records live in warmup_reuse_dir (default /run/spank-nccl, tmpfs),
 *    root:root 0700, one root-only directory job-<JOBID> per job.  Only
 *    root writes them: user_init runs with the real uid 0 and the job
 *    user's euid (Slurm's _drop_privileges() in slurmstepd/mgr.c), so the
 *    I/O below runs in the privileged section (as_root.h): root for
 *    those calls, the user's ids again right after.
 *  - A record is used only if the directory chain and the file are owned
 *    by root with no group/other access, the file has one link, and its
 *    job, uid and whole key match (a hash only names the file).
 *  - Only passes are written; a failed run removes the record of its key.
 *  - Removal: the batch step's and the extern step's slurm_spank_exit()
 *    remove the job's directory (both run as root at the job's end on
 *    their nodes); a warmup step also removes the directories of jobs
 *    that have no slurmstepd left on this node (sn_reuse_job_alive: a
 *    root process running slurmstepd's executable with the title
 *    "slurmstepd: [JOB."; a title alone any user can forge).  Nothing
 *    runs for jobs that never use --nccl-warmup except one failing
 *    openat() in the batch/extern step's exit.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <slurm/slurm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin.h"
#include "as_root.h"
#include "fleet/reuse.h"
#include "spank_wrap.h"
#include "step_tell.h"

#ifndef SLURM_EXTERN_CONT
#define SLURM_EXTERN_CONT 0xfffffffc
#endif

/* "batch", or the step number, for messages. */
static const char *step_name(uint32_t step_id, char *buf, size_t len)
{
	if (step_id == SLURM_BATCH_SCRIPT)
		return "batch";
	snprintf(buf, len, "%" PRIu32, step_id);
	return buf;
}

/* Opens (creating if asked) a root-only directory NAME under AT. */
static int open_dir(int at, const char *name, bool create,
		    struct sn_error *why)
{
	struct stat st;
	int fd;

	if (create && mkdirat(at, name, 0700) == 0) {
		fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				      O_CLOEXEC);
		/* mkdir took the umask (and a setgid parent's group). */
		if (fd >= 0 && (fchown(fd, 0, 0) < 0 || fchmod(fd, 0700) < 0)) {
			sn_error_set(why, "%s: %s", name, strerror(errno));
			close(fd);
			return -1;
		}
		if (fd >= 0)
			close(fd);
	}
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		sn_error_set(why, "%s: %s", name, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || sn_reuse_stat_trusted(&st, true, why) < 0) {
		struct sn_error inner = *why;

		sn_error_set(why, "%s: %s", name, inner.msg);
		close(fd);
		return -1;
	}
	return fd;
}

/* A DIR stream over descriptor FD (taken over, closed on failure). */
static DIR *dir_stream(int fd)
{
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

/* Unlinks every entry of directory NAME under AT, then NAME itself. */
static void remove_job_dir(int at, const char *name)
{
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				  O_CLOEXEC);
	DIR *d = dir_stream(fd);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(fd, de->d_name, 0);
	closedir(d);
	if (unlinkat(at, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		sn_log_info("warmup reuse: cannot remove %s: %s", name,
			    strerror(errno));
}

/* Removes the directories of other jobs that left this node. */
static void remove_gone_jobs(int base, uint32_t own_job)
{
	DIR *d = dir_stream(dup(base));
	struct dirent *de;
	uint32_t job;

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!sn_reuse_job_dir_parse(de->d_name, &job) || job == own_job)
			continue;
		/* Title, real uid 0 and executable: reuse.c says why. */
		if (sn_reuse_job_alive("/proc", job))
			continue;
		remove_job_dir(base, de->d_name);
		sn_log_info("warmup reuse: removed the records of job %" PRIu32 " (no step left on this node)",
			    job);
	}
	closedir(d);
}

/* The step's environment values that go into the key. */
static int build_key(struct sn_plugin *p, spank_t sp,
		     const struct sn_job_ids *ids, const char *node,
		     const char *visible, struct sn_reuse_key *key)
{
	char gpus[512] = "";
	struct sn_error err;
	struct sn_reuse_inputs in = {
		.node = node,
		.gpus = gpus,
		.visible = visible,
		.helper = p->cfg.warmup_helper,
		.nccl = p->warmup_req.nccl,
		.nccl_default = p->cfg.warmup_nccl,
		/* In a container (step_container.c): its image, and the
		 * helper's environment, which has the image's NCCL_*. */
		.image = p->container_pid > 0 ? p->container_image : NULL,
		.envp = p->container_pid > 0 && p->helper_env ?
			p->helper_env : sn_spank_job_env(sp),
	};

	/* Physical GPU indices: a batch step has only the job's. */
	if (ids->step_id == SLURM_BATCH_SCRIPT ||
	    sn_spank_getenv(sp, "SLURM_STEP_GPUS", gpus, sizeof(gpus)) != 1)
		if (sn_spank_getenv(sp, "SLURM_JOB_GPUS", gpus,
				    sizeof(gpus)) != 1)
			gpus[0] = '\0';
	if (sn_reuse_key_build(key, &in, &err) < 0) {
		sn_log_info("%s", err.msg);
		return -1;
	}
	return 0;
}

static void want_record(const struct sn_plugin *p,
			const struct sn_job_ids *ids,
			enum sn_warmup_mode mode, const struct sn_reuse_key *key,
			struct sn_reuse_record *want)
{
	memset(want, 0, sizeof(*want));
	want->job_id = ids->job_id;
	want->uid = ids->uid;
	want->step_id = ids->step_id;
	want->mode = mode;
	if (mode == SN_WARMUP_MODE_BANDWIDTH) {
		want->bytes = p->cfg.warmup_bytes;
		want->min_busbw = p->cfg.warmup_min_busbw_gbps;
	}
	want->key = key->text;
	want->key_len = key->len;
}

/* Reads record NAME in directory DIRFD; 0 and *HAVE when trusted. */
static int read_record(int dirfd, const char *name, char *buf, size_t len,
		       struct sn_reuse_record *have, struct sn_error *why)
{
	struct stat st;
	ssize_t n;
	size_t got = 0;
	int fd;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
				 O_NONBLOCK);
	if (fd < 0) {
		sn_error_set(why, "%s", errno == ENOENT ? "no record" :
			     strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || sn_reuse_stat_trusted(&st, false, why) < 0) {
		close(fd);
		return -1;
	}
	while (got < len && (n = read(fd, buf + got, len - got)) > 0)
		got += (size_t)n;
	close(fd);
	return sn_reuse_record_parse(buf, got, have, why);
}

/* What lookup and store share: the key, root and the open directories. */
struct session {
	struct sn_reuse_key key;
	struct sn_priv priv;
	int base, job;
	char dir[32];
	struct sn_error why;
};

/*
 * 0 with S ready (root, base open, job open if it exists or CREATE; not
 * root and neither open if the section could not be entered); then
 * session_close().  -1 when there is no key: nothing entered or open.
 */
static int session_open(struct sn_plugin *p, spank_t sp,
			const struct sn_job_ids *ids, const char *node,
			const char *visible, bool create, struct session *s)
{
	memset(s, 0, sizeof(*s));
	s->base = s->job = -1;
	if (build_key(p, sp, ids, node, visible, &s->key) < 0)
		return -1;
	if (sn_priv_enter(&s->priv, "warmup reuse") < 0)
		return 0;	/* logged; the step warms up */
	sn_reuse_job_dir_name(s->dir, sizeof(s->dir), ids->job_id);
	s->base = open_dir(AT_FDCWD, p->cfg.warmup_reuse_dir, true, &s->why);
	if (s->base < 0) {
		sn_log_info("warmup reuse: %s (warmup_reuse_dir must be root's, mode 0700): warming up without reuse",
			    s->why.msg);
		return 0;
	}
	s->job = open_dir(s->base, s->dir, create, &s->why);
	return 0;
}

/* Closes everything and leaves the section (-1 if that fails). */
static int session_close(struct session *s)
{
	if (s->job >= 0)
		close(s->job);
	if (s->base >= 0)
		close(s->base);
	sn_reuse_key_free(&s->key);
	return sn_priv_leave(&s->priv);
}

int sn_step_reuse_lookup(struct sn_plugin *p, spank_t sp,
			 const struct sn_job_ids *ids, const char *node,
			 const char *visible, enum sn_warmup_mode mode)
{
	struct sn_reuse_record have, want;
	struct session s;
	char step_buf[16], *buf = NULL;
	const char *step;
	int reused = 0;

	/* A fabric warmup proves the step's own nodes: always run it. */
	if (!p->cfg.warmup_reuse || mode == SN_WARMUP_MODE_FABRIC ||
	    session_open(p, sp, ids, node, visible, false, &s) < 0)
		return 0;
	if (s.base >= 0)
		remove_gone_jobs(s.base, ids->job_id);
	/* fresh: the user asked for a new warmup. */
	if (p->warmup_req.fresh || s.job < 0)
		goto out;
	buf = malloc(SN_REUSE_RECORD_MAX);
	if (!buf)
		goto out;
	want_record(p, ids, mode, &s.key, &want);
	if (read_record(s.job, s.key.name, buf, SN_REUSE_RECORD_MAX, &have,
			&s.why) < 0 ||
	    sn_reuse_record_usable(&have, &want, &s.why) < 0) {
		if (strcmp(s.why.msg, "no record") == 0)
			goto out;	/* the first step with this key */
		sn_log_info("job %u step %u on %s: warmup record not reused: %s",
			    ids->job_id, ids->step_id, node, s.why.msg);
		goto out;
	}
	reused = 1;
	step = step_name(have.step_id, step_buf, sizeof(step_buf));
	/* Not "nccl-warmup passed": that line counts real runs.  Through
	 * the container gate where there is one (step_container.c). */
	sn_step_log_result(p, "job %u step %u on %s: nccl-warmup reused: %s mode passed in step %s of this job (%.0f ms saved)",
			   ids->job_id, ids->step_id, node,
			   sn_warmup_mode_name(have.mode), step,
			   have.elapsed_ms);
	if (p->warmup_req.verbose) {
		char line[512];

		snprintf(line, sizeof(line),
			 "warmup ok on %s: reused the %s-mode pass of step %s of this job (same GPUs, NCCL and NCCL_* settings%s%s; add ',fresh' to warm up again)",
			 node, sn_warmup_mode_name(have.mode), step,
			 p->container_pid > 0 ? ", container image " : "",
			 p->container_pid > 0 ? p->container_image : "");
		sn_step_tell(p, false, line);
	}
out:
	free(buf);
	if (session_close(&s) < 0)
		reused = -1;
	return reused;
}

/* Writes BUF as record NAME in DIRFD: a root-only temporary, renamed. */
static int write_record(int dirfd, const char *name, const char *buf,
			size_t len)
{
	char tmp[64];
	ssize_t n;
	size_t done = 0;
	int fd, rc = -1;

	snprintf(tmp, sizeof(tmp), ".%s.%ld", name, (long)getpid());
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (fchown(fd, 0, 0) == 0 && fchmod(fd, 0600) == 0) {
		while (done < len && (n = write(fd, buf + done, len - done)) > 0)
			done += (size_t)n;
		rc = done == len ? 0 : -1;
	}
	if (close(fd) < 0)
		rc = -1;
	if (rc == 0)
		rc = renameat(dirfd, tmp, dirfd, name);
	if (rc < 0)
		unlinkat(dirfd, tmp, 0);
	return rc;
}

int sn_step_reuse_store(struct sn_plugin *p, spank_t sp,
			const struct sn_job_ids *ids, const char *node,
			const char *visible, enum sn_warmup_mode mode,
			bool passed, double elapsed_ms)
{
	struct sn_reuse_record rec;
	struct session s;
	char *buf = NULL;
	size_t len;

	/*
	 * A fabric pass is never recorded (never reused); a fabric failure
	 * of this node forgets its earlier pass like any failure (the caller
	 * skips the failures another node caused).
	 */
	if (!p->cfg.warmup_reuse || (mode == SN_WARMUP_MODE_FABRIC && passed) ||
	    session_open(p, sp, ids, node, visible, passed, &s) < 0)
		return 0;
	if (s.job < 0) {
		if (passed && s.base >= 0)
			sn_log_info("warmup reuse: cannot record the pass: %s",
				    s.why.msg);
	} else if (!passed) {
		/* A failure is never reused, nor what passed before it. */
		unlinkat(s.job, s.key.name, 0);
	} else {
		want_record(p, ids, mode, &s.key, &rec);
		rec.elapsed_ms = elapsed_ms;
		if (sn_reuse_record_format(&rec, &buf, &len) < 0 ||
		    write_record(s.job, s.key.name, buf, len) < 0)
			sn_log_info("warmup reuse: cannot write %s/%s/%s: %s",
				    p->cfg.warmup_reuse_dir, s.dir, s.key.name,
				    strerror(errno));
	}
	free(buf);
	return session_close(&s);
}

void sn_step_reuse_job_end(struct sn_plugin *p, spank_t sp)
{
	struct sn_priv priv = SN_PRIV_INIT;
	struct sn_job_ids ids;
	char dir[32];
	int base;

	if (!p->config_ok || !p->cfg.warmup_reuse ||
	    sn_spank_job_ids(sp, &ids) < 0 ||
	    (ids.step_id != SLURM_BATCH_SCRIPT &&
	     ids.step_id != SLURM_EXTERN_CONT))
		return;
	/* Root already (the job's end): the section changes nothing. */
	if (sn_priv_enter(&priv, "warmup reuse") == 0) {
		/* Not created here: a job that never warmed up costs one
		 * openat(). */
		base = open(p->cfg.warmup_reuse_dir,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (base >= 0) {
			sn_reuse_job_dir_name(dir, sizeof(dir), ids.job_id);
			remove_job_dir(base, dir);
			close(base);
		}
	}
	/* A failure is logged there; nothing of the job's runs after exit. */
	sn_priv_leave(&priv);
}

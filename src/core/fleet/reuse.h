/* SPDX-License-Identifier: MIT */
/*
 * Warmup reuse: one warmup per node, GPU set, NCCL library and NCCL_*
 * settings per job.  After a pass, slurmstepd (as root) writes a record
 *
 *   <warmup_reuse_dir>/job-<JOBID>/<16 hex digits of the key's hash>
 *
 * and a later step of the same job with the same key skips the helper.
 * This module is the pure part: the key, the record's text and the checks
 * a record and its files must pass.  src/plugin/step_reuse.c does the I/O.
 *
 * The key is text, compared byte for byte (the hash only names the file):
 *   node=<host name>
 *   gpus=<SLURM_STEP_GPUS, or SLURM_JOB_GPUS in the batch step>
 *   visible=<CUDA_VISIBLE_DEVICES>
 *   helper=<warmup_helper>
 *   nccl=, nccl_default=<the step's and the site's NCCL paths>
 *   image=<the step's pyxis --container-image>  (container steps only)
 *   env:<NAME>=<VALUE> for LD_LIBRARY_PATH, LD_PRELOAD, CUDA_DEVICE_ORDER,
 *                      the container's library path (helper_protocol.h)
 *                      and every NCCL_* variable but NCCL_RAS_ADDR
 *                      (one per step, ras.h), sorted by name; for a
 *                      container step, the helper's: the image's NCCL_*
 * (the NCCL library the helper loads follows from LD_PRELOAD and
 * LD_LIBRARY_PATH; the physical GPU indices tell apart steps that see the
 * same CUDA_VISIBLE_DEVICES under ConstrainDevices).  Newlines and
 * backslashes in values are escaped, so each line is one item.
 */
#ifndef SN_REUSE_H
#define SN_REUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/error.h"
#include "config/options.h"

#define SN_REUSE_RECORD_MAX 65536
#define SN_REUSE_MAGIC "spank-nccl warmup pass 1"

struct sn_reuse_key {
	char *text;		/* malloc'd, NUL-terminated */
	size_t len;
	char name[17];		/* file name: 16 hex digits */
};

struct sn_reuse_inputs {
	const char *node;
	const char *gpus;	/* physical indices, may be "" */
	const char *visible;	/* CUDA_VISIBLE_DEVICES */
	const char *helper;
	const char *nccl;	/* the step's nccl=PATH, "" if none */
	const char *nccl_default;	/* the site's warmup_nccl=, "" if none */
	const char *image;	/* pyxis's --container-image, NULL on the host */
	char *const *envp;	/* the helper's environment, NULL-terminated */
};

/* What a record says, and what a step wants from one. */
struct sn_reuse_record {
	uint32_t job_id;
	uid_t uid;
	uint32_t step_id;	/* the step whose warmup passed */
	enum sn_warmup_mode mode;
	unsigned long bytes;	/* bandwidth mode only, else 0 */
	double min_busbw;	/* bandwidth mode only, else 0 */
	double elapsed_ms;	/* what the reuse saves */
	const char *key;	/* points into the parsed buffer */
	size_t key_len;
};

int sn_reuse_key_build(struct sn_reuse_key *key,
		       const struct sn_reuse_inputs *in, struct sn_error *err);
void sn_reuse_key_free(struct sn_reuse_key *key);

/* A malloc'd record text in *BUF (length *LEN). */
int sn_reuse_record_format(const struct sn_reuse_record *rec, char **buf,
			   size_t *len);
/* Strict: any unknown, missing or malformed line refuses the record. */
int sn_reuse_record_parse(const char *buf, size_t len,
			  struct sn_reuse_record *rec, struct sn_error *err);
/*
 * 0 when HAVE (a parsed record) proves what WANT asks for: same job, user
 * and key, and a mode at least as thorough (bandwidth > comm > check; a
 * bandwidth request needs the same message size and floor; fabric is
 * never reused, either way).  -1 and why.
 */
int sn_reuse_record_usable(const struct sn_reuse_record *have,
			   const struct sn_reuse_record *want,
			   struct sn_error *why);
bool sn_reuse_mode_covers(enum sn_warmup_mode have, enum sn_warmup_mode want);

/*
 * What only root can have made: owned by uid 0, the right type, no access
 * for group or others, one link (a record), not a symlink (lstat/fstat).
 */
int sn_reuse_stat_trusted(const struct stat *st, bool dir,
			  struct sn_error *why);

/*
 * Whether a slurmstepd of job JOB runs on this node, seen through PROC
 * ("/proc"; a fake tree in tests).  A process title alone proves nothing
 * (any user can set one); see reuse.c for what is checked.  True when
 * PROC or PROC/self/exe cannot be read (cannot tell: keep the records).
 */
bool sn_reuse_job_alive(const char *proc, uint32_t job);

/* "job-<ID>" and back. */
void sn_reuse_job_dir_name(char *buf, size_t len, uint32_t job_id);
bool sn_reuse_job_dir_parse(const char *name, uint32_t *job_id);

#endif

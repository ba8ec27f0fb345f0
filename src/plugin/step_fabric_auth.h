/* SPDX-License-Identifier: MIT */
/*
 * slurmstepd: which authentication a fabric warmup uses (plugstack.conf's
 * fabric_auth=, else slurm.conf's AuthType; slurm_auth.h) and, for the
 * per-step key, the key itself, derived as root from the site key: in
 * slurmstepd where libcrypto is already mapped there (step_key.h; in a
 * thread beside the helper's start), else by nccl-warmup
 * --fabric-key-derive while the helper starts (spank_nccl.so links no
 * crypto library); written into a pipe the
 * helper inherits (docs/security.md, "Fabric warmup: network peers").
 */
#ifndef SN_STEP_FABRIC_AUTH_H
#define SN_STEP_FABRIC_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sn_plugin;
struct sn_job_ids;

struct sn_fabric_key_thread;

/* The derivation running beside the helper: in slurmstepd, a thread
 * (step_fabric_auth.c); else a process, its pid and its stderr. */
struct sn_fabric_key_job {
	struct sn_fabric_key_thread *thread;
	pid_t pid;
	int err_fd;
	/* slurmstepd stayed root (as_root.h): the step's tasks must fail. */
	bool priv_lost;
};

/*
 * 0 with *KEY_FD -1 (MUNGE) or the read end of a pipe (close-on-exec)
 * that the derivation (JOB) writes the step key into; -1 with MESSAGE
 * (one line for the user) when neither mechanism is usable.
 */
int sn_step_fabric_auth(const struct sn_plugin *p,
			const struct sn_job_ids *ids, int *key_fd,
			struct sn_fabric_key_job *job, char *message,
			size_t len);
/* After the helper: joins or reaps JOB; its failure to slurmd's log. */
void sn_step_fabric_auth_end(struct sn_fabric_key_job *job, const char *node);

#endif

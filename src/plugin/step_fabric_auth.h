/* SPDX-License-Identifier: MIT */
/*
 * slurmstepd: which authentication a fabric warmup uses (plugstack.conf's
 * fabric_auth=, else slurm.conf's AuthType; slurm_auth.h) and, for the
 * per-step key, the key itself: derived as root from the site key by
 * nccl-warmup --fabric-key-derive (spank_nccl.so links no crypto library),
 * handed to the helper on an inherited pipe (docs/security.md, "Fabric
 * warmup: network peers").
 */
#ifndef SN_STEP_FABRIC_AUTH_H
#define SN_STEP_FABRIC_AUTH_H

#include <stddef.h>

struct sn_plugin;
struct sn_job_ids;

/*
 * 0 with *KEY_FD -1 (MUNGE) or the read end of a pipe (close-on-exec)
 * holding the step key; -1 with MESSAGE (one line for the user) when
 * neither mechanism is usable.
 */
int sn_step_fabric_auth(const struct sn_plugin *p,
			const struct sn_job_ids *ids, int *key_fd,
			char *message, size_t len);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Which authentication the fabric warmup uses (plugstack.conf's
 * fabric_auth=, docs/security.md "Fabric warmup: network peers"): MUNGE
 * where Slurm runs AuthType=auth/munge, the per-step key derived from
 * slurm.key where it runs auth/slurm (no munged), chosen from slurm.conf.
 */
#ifndef SN_SLURM_AUTH_H
#define SN_SLURM_AUTH_H

#include <stddef.h>

#include "base/error.h"

enum sn_fabric_auth {
	SN_FABRIC_AUTH_AUTO = 0,	/* from slurm.conf's AuthType (default) */
	SN_FABRIC_AUTH_MUNGE,
	SN_FABRIC_AUTH_KEY,
};

/* Where slurm.conf is when slurmstepd has no SLURM_CONF (Debian's, RPM's). */
#define SN_SLURM_CONF_DEFAULT "/etc/slurm/slurm.conf"
/* Where a configless slurmd keeps the slurm.conf it fetched. */
#define SN_SLURM_CONFLESS_DIR "/run/slurm/conf"

struct sn_slurm_auth {
	char auth_type[64];	/* AuthType=, "" if not set */
	char cluster[128];	/* ClusterName=, "" if not set */
	char key[4096];		/* slurm.key beside slurm.conf */
};

/* "auto", "munge", "key" -> *OUT; -1 for anything else. */
int sn_auth_choice_parse(const char *value, enum sn_fabric_auth *out);
const char *sn_auth_choice_name(enum sn_fabric_auth a);
/*
 * AuthType= and ClusterName= of slurm.conf at PATH (keys in any case, '#'
 * comments; Include lines are not followed) and the slurm.key beside it
 * (configless: beside SN_SLURM_CONF_DEFAULT).
 * -1 (ERR set) when it cannot be read.
 */
int sn_slurm_auth_read(const char *path, struct sn_slurm_auth *out,
		       struct sn_error *err);
/*
 * WANT with AUTO resolved by AUTH_TYPE: auth/munge -> MUNGE, auth/slurm
 * -> KEY.  -1 (ERR set: one line for the user) when neither applies.
 */
int sn_auth_choice_resolve(enum sn_fabric_auth want, const char *auth_type,
			   enum sn_fabric_auth *out, struct sn_error *err);

#endif

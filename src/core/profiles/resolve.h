/* SPDX-License-Identifier: MIT */
/*
 * Profile resolution: site default profiles, then the requested ones, left
 * to right, flattened into one ordered plan of environment operations.
 *
 * - An unknown name is an error listing the known profiles.
 * - Two *requested* profiles that disagree on a variable (different values,
 *   or set vs. unset vs. merge, or the same merge key with different values)
 *   are an error naming both profiles, the variable and both values.
 * - A requested profile that disagrees with a site default silently
 *   replaces the site default's operation (the user asked for it).
 * - Identical operations from two profiles collapse into one.
 * - A request with "none" drops the site defaults too.
 */
#ifndef SN_RESOLVE_H
#define SN_RESOLVE_H

#include "base/error.h"
#include "config/options.h"
#include "profiles/profile_file.h"

struct sn_plan {
	struct sn_env_op *ops;	/* copies; var/value/profile owned by the plan */
	size_t n_ops;
	/*
	 * "a,b,c": the requested profiles, after the site defaults that still
	 * contribute an operation; ends in ",..." if it does not fit.
	 */
	char names[512];
};

int sn_resolve(const struct sn_profile_set *set,
	       const struct sn_profile_request *site_defaults,
	       const struct sn_profile_request *requested,
	       struct sn_plan *plan, struct sn_error *err);
void sn_plan_free(struct sn_plan *plan);

/*
 * What PROFILE does, in the file's words: "set A=1; merge B K:V; unset C"
 * ("..." at the end when cut).
 */
void sn_profile_ops_format(const struct sn_profile *profile, char *buf,
			   size_t len);
/* Writes "name1, name2, ..." of every profile in SET into BUF. */
void sn_profile_names(const struct sn_profile_set *set, char *buf, size_t len);

#endif

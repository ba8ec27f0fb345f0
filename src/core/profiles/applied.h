/* SPDX-License-Identifier: MIT */
/*
 * What spank-nccl changed in a step's environment, carried in the job
 * environment as SPANK_NCCL_APPLIED.  A batch step's profile values end up
 * in the environment that the script's own srun steps inherit; with this
 * record a step first puts back what an earlier step's profiles changed
 * (where the value is still the profile's, i.e. the user did not touch
 * it), so `srun --nccl-profile=Y` inside `#SBATCH --nccl-profile=X`
 * replaces X instead of stacking on it, and X's values are not mistaken
 * for the user's own.
 *
 * Encoding: entries "VAR=BEFORE:AFTER" joined by ','; BEFORE and AFTER are
 * lower-case hex of the value, or '-' for "unset".
 */
#ifndef SN_APPLIED_H
#define SN_APPLIED_H

#include <stddef.h>

#include "base/envlist.h"
#include "base/error.h"

#define SN_ENV_APPLIED "SPANK_NCCL_APPLIED"
#define SN_APPLIED_MAX_ENTRIES 256

struct sn_applied_entry {
	char *var;
	char *before;	/* NULL: was unset */
	char *after;	/* NULL: we unset it */
};

struct sn_applied {
	struct sn_applied_entry *entries;
	size_t n;
};

int sn_applied_add(struct sn_applied *a, const char *var, const char *before,
		   const char *after);
/* Returns a malloc'd string ("" for no entries), NULL on out of memory. */
char *sn_applied_encode(const struct sn_applied *a);
int sn_applied_decode(const char *text, struct sn_applied *a,
		      struct sn_error *err);
void sn_applied_free(struct sn_applied *a);

/*
 * Puts back BEFORE for every entry whose variable still holds AFTER.
 * Returns the number of variables restored, -1 on a failing callback.
 */
int sn_applied_revert(const struct sn_applied *a, struct sn_env *env);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The known names of one setting (docs/design.md, "Aliases").  A fixed
 * table: which names a program reads is a fact of that program, not site
 * policy.
 */
#include <string.h>

#include "profiles/env_alias.h"

static const char *const groups[][3] = {
	/*
	 * PyTorch's caching allocator: PYTORCH_ALLOC_CONF is the primary
	 * name since 2.10, PYTORCH_CUDA_ALLOC_CONF the older one; 2.9.1
	 * honoured expandable_segments on CUDA only under the old name
	 * (pytorch/pytorch #183387) and 2.11 reads the old name first when
	 * both are set (measured): with different values the version
	 * decides.  See the expandable-segments profile.
	 */
	{ "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", NULL },
};

const char *const *sn_env_alias_group(const char *var)
{
	for (size_t g = 0; var && g < sizeof(groups) / sizeof(groups[0]); g++)
		for (size_t i = 0; groups[g][i]; i++)
			if (strcmp(groups[g][i], var) == 0)
				return groups[g];
	return NULL;
}

bool sn_env_same_setting(const char *a, const char *b)
{
	const char *const *group;

	if (strcmp(a, b) == 0)
		return true;
	group = sn_env_alias_group(a);
	for (size_t i = 0; group && group[i]; i++)
		if (strcmp(group[i], b) == 0)
			return true;
	return false;
}

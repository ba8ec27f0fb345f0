/* SPDX-License-Identifier: MIT */
/* Loading the profile file and resolving a request, shared by both sides. */
#include <string.h>

#include "plugin.h"

bool sn_plan_needed(const struct sn_plugin *p)
{
	if (p->profile_req.none)
		return false;
	return p->profile_req.count > 0 || p->cfg.default_profiles.count > 0;
}

int sn_profiles_load(struct sn_plugin *p, struct sn_error *err)
{
	if (p->profiles_loaded)
		return 0;
	if (sn_profile_set_load(&p->profiles, p->cfg.profiles_path, err) < 0)
		return -1;
	p->profiles_loaded = true;
	return 0;
}

int sn_plan_prepare(struct sn_plugin *p, struct sn_error *err)
{
	if (p->have_plan) {
		sn_plan_free(&p->plan);
		p->have_plan = false;
	}
	if (sn_profiles_load(p, err) < 0)
		return -1;
	if (sn_resolve(&p->profiles, &p->cfg.default_profiles,
		       &p->profile_req, &p->plan, err) < 0)
		return -1;
	p->have_plan = true;
	return 0;
}

/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "config/ras.h"
#include "base/strutil.h"

#define RAS_ADDR "NCCL_RAS_ADDR"
#define RAS_ENABLE "NCCL_RAS_ENABLE"

static const char *const names[] = {
	[SN_RAS_STEP] = "step",
	[SN_RAS_OFF] = "off",
	[SN_RAS_NCCL] = "nccl",
};

int sn_ras_policy_parse(const char *s, enum sn_ras_policy *out)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (sn_streq_nocase(s, names[i])) {
			*out = (enum sn_ras_policy)i;
			return 0;
		}
	}
	return -1;
}

const char *sn_ras_policy_name(enum sn_ras_policy p)
{
	return (size_t)p < sizeof(names) / sizeof(names[0]) ? names[p] : "?";
}

/* Murmur3's 32-bit finaliser: job ids that differ by one land far apart. */
static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

unsigned int sn_step_port(const struct sn_port_range *range, uint32_t jobid,
			  uint32_t stepid, unsigned int attempt)
{
	uint64_t size = (uint64_t)range->hi - range->lo + 1;
	uint64_t off = (uint64_t)mix32(jobid) + stepid + attempt;

	return range->lo + (unsigned int)(off % size);
}

/* Whether VAR is set: a value too long to read is set too. */
static bool env_has(struct sn_env *env, const char *var, char *buf,
		    size_t len)
{
	buf[0] = '\0';
	return env->get(env->ctx, var, buf, len) != 0;
}

static int env_set(struct sn_env *env, const char *var, const char *value,
		   struct sn_error *err)
{
	if (env->set(env->ctx, var, value) < 0) {
		sn_error_set(err, "cannot set %s in the job environment", var);
		return -1;
	}
	return 0;
}

static int apply_step(const struct sn_port_range *range, uint32_t jobid,
		      uint32_t stepid, struct sn_env *env,
		      sn_port_free_fn port_free, void *ctx, char *done,
		      size_t len, struct sn_error *err)
{
	char user[256], mark[256], addr[32];
	unsigned int port = sn_step_port(range, jobid, stepid, 0);
	unsigned int k;
	bool have = env_has(env, RAS_ADDR, user, sizeof(user));
	bool ours = env_has(env, SN_ENV_RAS_MARK, mark, sizeof(mark)) &&
		    user[0] && strcmp(user, mark) == 0;

	/* The user's own address; an inherited one of ours is replaced. */
	if (have && !ours) {
		snprintf(done, len, "%s set by the user, kept", RAS_ADDR);
		return 0;
	}
	for (k = 0; k < SN_RAS_ATTEMPTS; k++) {
		unsigned int p = sn_step_port(range, jobid, stepid, k);

		if (port_free(ctx, p) == 1) {
			port = p;
			break;
		}
	}
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	if (env_set(env, RAS_ADDR, addr, err) < 0 ||
	    env_set(env, SN_ENV_RAS_MARK, addr, err) < 0)
		return -1;
	if (k == SN_RAS_ATTEMPTS)
		snprintf(done, len, "%s=%s (ports %u-%u of ras_ports= all taken)",
			 RAS_ADDR, addr, sn_step_port(range, jobid, stepid, 0),
			 sn_step_port(range, jobid, stepid, k - 1));
	else
		snprintf(done, len, "%s=%s", RAS_ADDR, addr);
	return 0;
}

int sn_ras_apply(enum sn_ras_policy policy, const struct sn_port_range *range,
		 uint32_t jobid, uint32_t stepid, struct sn_env *env,
		 sn_port_free_fn port_free, void *ctx, char *done, size_t len,
		 struct sn_error *err)
{
	char user[64];

	snprintf(done, len, "NCCL's RAS left as NCCL sets it");
	if (policy == SN_RAS_STEP)
		return apply_step(range, jobid, stepid, env, port_free, ctx,
				  done, len, err);
	if (policy != SN_RAS_OFF)
		return 0;
	if (env_has(env, RAS_ENABLE, user, sizeof(user))) {
		snprintf(done, len, "%s set by the user, kept", RAS_ENABLE);
		return 0;
	}
	if (env_set(env, RAS_ENABLE, "0", err) < 0)
		return -1;
	snprintf(done, len, "%s=0", RAS_ENABLE);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * health= and health_busy_mib=: the GPU health checks' policy, parsed the
 * same way by spank_nccl.so (plugstack.conf) and nccl-warmup (--health).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gpu/health.h"
#include "base/strutil.h"

static const char *const check_names[SN_HC_COUNT] = {
	"busy", "row_remap", "retired_pages", "ecc", "persistence",
	"compute_mode", "pcie", "nvlink", "clocks",
};

static const char *const level_names[] = { "off", "warn", "fail" };

/* The defaults: faults that break or slow the job fail it; persistence
 * mode off, a downtrained PCIe link and slowdown clocks only warn. */
static const enum sn_health_level default_level[SN_HC_COUNT] = {
	SN_HL_FAIL, SN_HL_FAIL, SN_HL_FAIL, SN_HL_FAIL, SN_HL_WARN,
	SN_HL_FAIL, SN_HL_WARN, SN_HL_FAIL, SN_HL_WARN,
};

const char *sn_health_check_name(enum sn_health_check c)
{
	return (unsigned int)c < SN_HC_COUNT ? check_names[c] : "?";
}

const char *sn_health_level_name(enum sn_health_level l)
{
	return (unsigned int)l <= SN_HL_FAIL ? level_names[l] : "?";
}

void sn_health_policy_defaults(struct sn_health_policy *p)
{
	memcpy(p->level, default_level, sizeof(p->level));
	p->busy_mib = SN_HEALTH_BUSY_MIB_DEFAULT;
}

static int parse_level(const char *s, size_t len, enum sn_health_level *out)
{
	for (int l = SN_HL_OFF; l <= SN_HL_FAIL; l++) {
		if (strlen(level_names[l]) == len &&
		    strncasecmp(s, level_names[l], len) == 0) {
			*out = (enum sn_health_level)l;
			return 0;
		}
	}
	return -1;
}

static int parse_item(const char *item, size_t len,
		      struct sn_health_policy *p, struct sn_error *err)
{
	const char *colon = memchr(item, ':', len);
	enum sn_health_level level;
	size_t name_len;
	int c;

	if (!colon && len == 7 && strncasecmp(item, "default", 7) == 0) {
		memcpy(p->level, default_level, sizeof(p->level));
		return 0;
	}
	if (!colon) {
		if (parse_level(item, len, &level) < 0) {
			sn_error_set(err, "\"%.*s\" is not default, fail, warn or off, nor CHECK:LEVEL (e.g. health=fail,pcie:warn)",
				     (int)(len > 64 ? 64 : len), item);
			return -1;
		}
		for (c = 0; c < SN_HC_COUNT; c++)
			p->level[c] = level;
		return 0;
	}
	name_len = (size_t)(colon - item);
	for (c = 0; c < SN_HC_COUNT; c++)
		if (strlen(check_names[c]) == name_len &&
		    strncasecmp(item, check_names[c], name_len) == 0)
			break;
	if (c == SN_HC_COUNT) {
		sn_error_set(err, "unknown health check \"%.*s\": the checks are busy, row_remap, retired_pages, ecc, persistence, compute_mode, pcie, nvlink, clocks",
			     (int)(name_len > 64 ? 64 : name_len), item);
		return -1;
	}
	if (parse_level(colon + 1, len - name_len - 1, &level) < 0) {
		sn_error_set(err, "health check %s: level \"%.*s\" is not fail, warn or off",
			     check_names[c], (int)(len - name_len - 1 > 32 ?
						  32 : len - name_len - 1),
			     colon + 1);
		return -1;
	}
	p->level[c] = level;
	return 0;
}

int sn_health_policy_parse(const char *spec, struct sn_health_policy *p,
			   struct sn_error *err)
{
	struct sn_health_policy next = *p;
	const char *s = spec;

	if (!*spec) {
		sn_error_set(err, "empty health policy: give default, fail, warn, off or CHECK:LEVEL items");
		return -1;
	}
	for (;;) {
		size_t len = strcspn(s, ",");

		if (len == 0) {
			sn_error_set(err, "empty item in health policy \"%.64s\": remove the extra comma",
				     spec);
			return -1;
		}
		if (parse_item(s, len, &next, err) < 0)
			return -1;
		if (!s[len])
			break;
		s += len + 1;
	}
	*p = next;
	return 0;
}

void sn_health_policy_format(const struct sn_health_policy *p, char *out,
			     size_t len)
{
	size_t o = 0;

	if (len)
		out[0] = '\0';
	for (int c = 0; c < SN_HC_COUNT && o < len; c++) {
		int n = snprintf(out + o, len - o, "%s%s:%s", c ? "," : "",
				 check_names[c],
				 sn_health_level_name(p->level[c]));

		if (n < 0)
			break;
		o += (size_t)n;
	}
}

int sn_health_parse_busy_mib(const char *value, unsigned long long *out)
{
	return sn_parse_u64(value, SN_HEALTH_BUSY_MIB_MAX, out);
}

/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "helper_args.h"
#include "protocol/helper_protocol.h"

void sn_argv_init(struct sn_argv *a)
{
	memset(a, 0, sizeof(*a));
}

void sn_argv_add(struct sn_argv *a, const char *word)
{
	if (a->full || a->argc >= SN_ARGV_MAX) {
		a->full = true;
		return;
	}
	a->argv[a->argc++] = (char *)word;
}

void sn_argv_addf(struct sn_argv *a, const char *fmt, ...)
{
	size_t room = sizeof(a->text) - a->text_len;
	char *word = a->text + a->text_len;
	va_list ap;
	int n;

	if (a->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(word, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room) {
		word[0] = '\0';
		a->full = true;
		return;
	}
	a->text_len += (size_t)n + 1;
	sn_argv_add(a, word);
}

void sn_argv_opt(struct sn_argv *a, const char *option, const char *value)
{
	if (a->argc + 2 > SN_ARGV_MAX) {
		a->full = true;
		return;
	}
	sn_argv_add(a, option);
	sn_argv_add(a, value);
}

void sn_format_gbps(char *buf, size_t len, double gbps)
{
	size_t n;

	snprintf(buf, len, "%.6f", gbps);
	n = strlen(buf);
	while (n > 1 && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 1 && buf[n - 1] == '.')
		buf[--n] = '\0';
}

void sn_helper_args_common(struct sn_argv *a, const struct sn_config *cfg,
			   enum sn_warmup_mode mode, const char *node,
			   int result_fd)
{
	char health[SN_HEALTH_SPEC_MAX], floor[32];

	sn_argv_add(a, cfg->warmup_helper);
	sn_argv_opt(a, "--" SN_HELPER_OPT_MODE, sn_warmup_mode_name(mode));
	sn_argv_add(a, "--" SN_HELPER_OPT_TIMEOUT);
	sn_argv_addf(a, "%u", cfg->warmup_timeout_s);
	sn_argv_opt(a, "--" SN_HELPER_OPT_NODE, node);
	sn_argv_add(a, "--" SN_HELPER_OPT_JSON);
	sn_argv_add(a, "--" SN_HELPER_OPT_RESULT_FD);
	sn_argv_addf(a, "%d", result_fd);
	sn_argv_opt(a, "--" SN_HELPER_OPT_TEARDOWN,
		    sn_teardown_name(cfg->warmup_teardown_exit));
	if (cfg->warmup_nccl[0])
		sn_argv_opt(a, "--" SN_HELPER_OPT_NCCL_DEFAULT,
			    cfg->warmup_nccl);
	if (cfg->health_given) {
		sn_health_policy_format(&cfg->health, health, sizeof(health));
		sn_argv_add(a, "--" SN_HELPER_OPT_HEALTH);
		sn_argv_addf(a, "%s", health);
		sn_argv_add(a, "--" SN_HELPER_OPT_HEALTH_BUSY_MIB);
		sn_argv_addf(a, "%llu", cfg->health.busy_mib);
	}
	if (mode == SN_WARMUP_MODE_BANDWIDTH) {
		sn_format_gbps(floor, sizeof(floor), cfg->warmup_min_busbw_gbps);
		sn_argv_add(a, "--" SN_HELPER_OPT_BYTES);
		sn_argv_addf(a, "%lu", cfg->warmup_bytes);
		sn_argv_add(a, "--" SN_HELPER_OPT_MIN_BUSBW);
		sn_argv_addf(a, "%s", floor);
	}
}

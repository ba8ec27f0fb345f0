/* SPDX-License-Identifier: MIT */
/*
 * plugstack.conf arguments: the input is split into argv on whitespace and
 * NUL (as slurmstepd splits the plugstack.conf line) and parsed.
 *
 * Invariants: a rejected line leaves the configuration untouched and says
 * why; an accepted one holds values inside their documented ranges.
 */
#include <stdbool.h>

#include "config/config.h"
#include "protocol/helper_protocol.h"
#include "fuzz_util.h"
#include "config/options.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sn_config cfg, defaults;
	struct sn_error err = { { 0 } };
	char *argv[MAX_ARGS];
	char *text = malloc(size + 1);
	int argc = 0;
	size_t i;
	bool in_word = false;

	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	for (i = 0; i < size; i++) {
		char c = text[i];

		if (c == ' ' || c == '\t' || c == '\n' || c == '\0') {
			text[i] = '\0';
			in_word = false;
		} else if (!in_word) {
			in_word = true;
			if (argc == MAX_ARGS)
				break;
			argv[argc++] = &text[i];
		}
	}
	sn_config_defaults(&cfg);
	defaults = cfg;
	if (sn_config_parse(&cfg, argc, argv, &err) != 0) {
		FUZZ_CHECK(fuzz_error_set(err.msg));
		FUZZ_CHECK(memcmp(&cfg, &defaults, sizeof(cfg)) == 0);
	} else {
		FUZZ_CHECK(cfg.warmup_timeout_s >= 1 &&
			   cfg.warmup_timeout_s <= SN_WARMUP_TIMEOUT_MAX_S);
		FUZZ_CHECK(cfg.profiles_path[0] == '/');
		FUZZ_CHECK(cfg.warmup_helper[0] == '/');
		FUZZ_CHECK(memchr(cfg.profiles_path, '\0', PATH_MAX));
		FUZZ_CHECK(cfg.warmup_mode >= SN_WARMUP_MODE_OFF &&
			   cfg.warmup_mode <= SN_WARMUP_MODE_FABRIC);
		FUZZ_CHECK(cfg.fabric_ports.lo >= 1024 &&
			   cfg.fabric_ports.lo <= cfg.fabric_ports.hi &&
			   cfg.fabric_ports.hi <= 65535);
		FUZZ_CHECK(cfg.warmup_policy == SN_POLICY_FAIL ||
			   cfg.warmup_policy == SN_POLICY_WARN);
		FUZZ_CHECK(cfg.warmup_min_busbw_gbps >= 0 &&
			   cfg.warmup_min_busbw_gbps ==
				   cfg.warmup_min_busbw_gbps);
		FUZZ_CHECK(cfg.fabric_min_busbw_gbps >= 0 &&
			   cfg.fabric_min_busbw_gbps <= SN_WARMUP_BUSBW_MAX);
		FUZZ_CHECK(cfg.warmup_bytes > 0);
		FUZZ_CHECK(cfg.default_profiles.count <= SN_PROFILE_REQUEST_MAX);
		for (i = 0; i < cfg.default_profiles.count; i++)
			FUZZ_CHECK(sn_profile_name_valid(
				cfg.default_profiles.names[i]));
	}
	free(text);
	return 0;
}

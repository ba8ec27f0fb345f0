/* SPDX-License-Identifier: MIT */
/*
 * The user's option values: --nccl-profile / SPANK_NCCL_PROFILE and
 * --nccl-warmup / SPANK_NCCL_WARMUP.  The first byte picks the parser
 * (even: profile list, odd: warmup), the rest is the value.
 *
 * Invariants: a rejection zeroes the request and names the option; an
 * accepted profile list holds valid, distinct names, "list"/"none" alone;
 * an accepted warmup value has a known mode.
 */
#include <stdbool.h>

#include "fuzz_util.h"
#include "config/options.h"

static void profile(const char *value)
{
	struct sn_profile_request req, zero;
	struct sn_error err = { { 0 } };
	size_t i, j;

	memset(&zero, 0, sizeof(zero));
	if (sn_profile_option_parse(value, &req, &err) != 0) {
		FUZZ_CHECK(strncmp(err.msg, "--nccl-profile: ", 16) == 0);
		FUZZ_CHECK(memcmp(&req, &zero, sizeof(req)) == 0);
		return;
	}
	FUZZ_CHECK(req.given);
	FUZZ_CHECK(req.count <= SN_PROFILE_REQUEST_MAX);
	FUZZ_CHECK(!(req.list && req.none));
	FUZZ_CHECK(!((req.list || req.none) && req.count));
	FUZZ_CHECK(req.list || req.none || req.count);
	for (i = 0; i < req.count; i++) {
		FUZZ_CHECK(sn_profile_name_valid(req.names[i]));
		/* Every accepted name is in the value as given. */
		FUZZ_CHECK(strstr(value, req.names[i]));
		for (j = 0; j < i; j++)
			FUZZ_CHECK(strcmp(req.names[i], req.names[j]) != 0);
	}
}

static void warmup(const char *value)
{
	struct sn_warmup_request req;
	struct sn_error err = { { 0 } };

	if (sn_warmup_option_parse(value, &req, &err) != 0) {
		FUZZ_CHECK(strncmp(err.msg, "--nccl-warmup: ", 15) == 0);
		FUZZ_CHECK(!req.given && !req.verbose &&
			   req.mode == SN_WARMUP_MODE_UNSET);
		return;
	}
	FUZZ_CHECK(req.given);
	FUZZ_CHECK(req.mode <= SN_WARMUP_MODE_FABRIC);
	FUZZ_CHECK(strcmp(sn_warmup_mode_name(req.mode), "unknown") != 0);
	/* The mode word round-trips through its name. */
	if (req.mode != SN_WARMUP_MODE_UNSET)
		FUZZ_CHECK(sn_warmup_mode_from_name(
				   sn_warmup_mode_name(req.mode)) == req.mode);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *value;

	if (size == 0) {
		warmup(NULL);
		return 0;
	}
	value = fuzz_strndup(data + 1, size - 1);
	if (data[0] & 1)
		warmup(value);
	else
		profile(value);
	free(value);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The profile file installed by "make install" (etc/nccl-profiles.conf)
 * must parse and define the profiles the documentation names.  The file's
 * text is parsed directly, so the checkout's ownership and umask do not
 * matter here (sn_profile_set_load's checks are covered elsewhere).
 */
#include "core_testutil.h"

#include <errno.h>
#include <stdlib.h>

#include "profiles/profile_file.h"

#ifndef SHIPPED_PROFILES
#error "SHIPPED_PROFILES must name etc/nccl-profiles.conf"
#endif

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text;
	size_t n;

	if (!f)
		fail_msg("%s: %s (the shipped profile file must exist)", path,
			 strerror(errno));
	text = calloc(1, SN_PROFILE_FILE_MAX_BYTES + 2);
	assert_non_null(text);
	n = fread(text, 1, SN_PROFILE_FILE_MAX_BYTES + 1, f);
	assert_int_equal(ferror(f), 0);
	fclose(f);
	assert_true(n <= SN_PROFILE_FILE_MAX_BYTES);
	assert_int_equal(strlen(text), n);
	return text;
}

static void test_shipped_file(void **state)
{
	static const char *const required[] = {
		"nccl-cumem-off", "ppo-tree", "expandable-segments",
		"quiet-logs",
	};
	struct sn_profile_set set;
	struct sn_error err = { "" };
	char *text = read_all(SHIPPED_PROFILES);
	size_t i;

	if (sn_profile_set_parse(&set, text, SHIPPED_PROFILES, &err) != 0)
		fail_msg("%s", err.msg);
	for (i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		const struct sn_profile *p = sn_profile_set_find(&set, required[i]);

		if (!p)
			fail_msg("profile \"%s\" missing from %s", required[i],
				 SHIPPED_PROFILES);
		/* --nccl-profile=list shows the description. */
		if (!p->description)
			fail_msg("profile \"%s\" has no description", required[i]);
	}
	if (set.n_rules < 3)
		fail_msg("%s defines %zu rules; at least 3 expected",
			 SHIPPED_PROFILES, set.n_rules);
	for (i = 0; i < set.n_rules; i++)
		assert_true(set.rules[i].n_conds > 0);
	sn_profile_set_free(&set);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

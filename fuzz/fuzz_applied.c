/* SPDX-License-Identifier: MIT */
/*
 * The SPANK_NCCL_APPLIED record a batch step leaves in the environment of
 * its srun steps (the user can edit it before running srun).
 *
 * Invariants: decoding is canonical, so encode(decode(x)) == x for every
 * accepted x; a rejection leaves no entries and says why; revert only
 * touches variables the record names, and only where they still hold the
 * recorded value.
 */
#include <stdbool.h>

#include "profiles/applied.h"
#include "base/envlist.h"
#include "fuzz_util.h"

static char *const start_env[] = {
	"NCCL_DEBUG=WARN",
	"NCCL_ALGO=tree,ring;allreduce:tree",
	"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
	"A=",
	"HOME=/home/user",
	NULL,
};

static bool named(const struct sn_applied *a, const char *var)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (strcmp(a->entries[i].var, var) == 0)
			return true;
	return false;
}

static void revert(const struct sn_applied *a)
{
	struct sn_envlist list, orig;
	struct sn_env env;
	size_t i;
	int restored;

	if (sn_envlist_init_from(&list, start_env) < 0 ||
	    sn_envlist_init_from(&orig, start_env) < 0)
		abort();
	sn_envlist_bind(&list, &env);
	restored = sn_applied_revert(a, &env);
	/* A variable may fail to be set (e.g. a name with '='): -1 is fine. */
	FUZZ_CHECK(restored >= -1 && (restored < 0 || (size_t)restored <= a->n));
	/* Variables the record does not name are untouched. */
	for (i = 0; start_env[i]; i++) {
		char name[64];
		const char *eq = strchr(start_env[i], '=');
		const char *now;

		memcpy(name, start_env[i], (size_t)(eq - start_env[i]));
		name[eq - start_env[i]] = '\0';
		if (named(a, name))
			continue;
		now = sn_envlist_get(&list, name);
		FUZZ_CHECK(now && strcmp(now, eq + 1) == 0);
	}
	sn_envlist_free(&list);
	sn_envlist_free(&orig);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sn_applied a;
	struct sn_error err = { { 0 } };
	char *text = fuzz_strndup(data, size), *again;

	if (sn_applied_decode(text, &a, &err) != 0) {
		FUZZ_CHECK(fuzz_error_set(err.msg));
		FUZZ_CHECK(a.n == 0 && a.entries == NULL);
		free(text);
		return 0;
	}
	FUZZ_CHECK(a.n <= SN_APPLIED_MAX_ENTRIES);
	again = sn_applied_encode(&a);
	FUZZ_CHECK(again != NULL);
	if (strcmp(again, text) != 0) {
		fprintf(stderr, "round trip: \"%s\" -> \"%s\"\n", text, again);
		abort();
	}
	revert(&a);
	sn_applied_free(&a);
	free(again);
	free(text);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * NCCL RAS's JSON status (written by the job's NCCL, read by
 * spank-nccl-status).
 *
 * Invariants: a rejection says why; an accepted document's counts stay
 * in their bounds, every communicator's ranks lie inside the rank table,
 * and the verdict of each marks exactly n_odd present ranks odd, each
 * off the most common count, which n_rest ranks hold.
 */
#include "protocol/ras_status.h"
#include "fuzz_util.h"

static struct sn_ras_status st;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sn_error err;

	if (sn_ras_parse(&st, (const char *)data, size, &err) != 0) {
		FUZZ_CHECK(fuzz_error_set(err.msg));
		return 0;
	}
	FUZZ_CHECK(st.n_comms >= 0 && st.n_comms <= SN_RAS_MAX_COMMS);
	FUZZ_CHECK(st.n_ranks >= 0 && st.n_ranks <= SN_RAS_MAX_RANKS);
	FUZZ_CHECK(st.n_colls >= 0 && st.n_colls <= SN_RAS_MAX_COLLS);
	for (int c = 0; c < st.n_comms; c++) {
		struct sn_ras_verdict v;
		int odd = 0, missing = 0;

		FUZZ_CHECK(st.comms[c].first >= 0 && st.comms[c].n >= 0 &&
			   st.comms[c].first + st.comms[c].n <= st.n_ranks);
		sn_ras_verdict(&st, c, &v);
		for (int i = st.comms[c].first;
		     i < st.comms[c].first + st.comms[c].n; i++) {
			const struct sn_ras_rank *k = &st.ranks[i];

			missing += k->missing;
			if (!k->odd)
				continue;
			odd++;
			FUZZ_CHECK(!k->missing && v.coll >= 0);
			FUZZ_CHECK(k->counts[v.coll] != v.rest_count);
		}
		FUZZ_CHECK(odd == v.n_odd && missing == v.missing);
		FUZZ_CHECK(v.dead <= v.missing);
		FUZZ_CHECK(v.coll < 0 || (v.n_rest >= 1 &&
					  v.coll < st.n_colls));
	}
	return 0;
}

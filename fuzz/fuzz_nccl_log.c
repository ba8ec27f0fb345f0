/* SPDX-License-Identifier: MIT */
/*
 * NCCL's INFO log (NCCL_DEBUG_FILE: written by NCCL in the job's
 * process, read by the helper).
 *
 * Invariants: the answer is "" (refused) or one of NET/IB, NET/Socket,
 * "NET/Plugin" or "NET/Plugin NAME…" in printable ASCII, and only when the
 * input holds NCCL's "Using network " line; a too-small buffer is
 * refused, never overrun.
 */
#include <string.h>	/* memmem: run.sh builds with -D_GNU_SOURCE */

#include "gpu/nccl_log.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[SN_TRANSPORT_MAX], small[4] = "abc";
	int rc = sn_nccl_transport((const char *)data, size, out, sizeof(out));

	if (rc == 0) {
		FUZZ_CHECK(strcmp(out, "NET/IB") == 0 ||
			   strcmp(out, "NET/Socket") == 0 ||
			   strcmp(out, "NET/Plugin") == 0 ||
			   strncmp(out, "NET/Plugin ", 11) == 0);
		for (size_t i = 0; out[i]; i++)
			FUZZ_CHECK(out[i] >= 0x20 && out[i] < 0x7f);
		FUZZ_CHECK(memmem(data, size, "NCCL INFO Using network ",
				  24) != NULL);
	} else {
		FUZZ_CHECK(rc == -1 && out[0] == '\0');
	}
	FUZZ_CHECK(sn_nccl_transport((const char *)data, size, small,
				     sizeof(small)) == -1 && small[0] == '\0');
	return 0;
}

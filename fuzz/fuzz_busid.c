/* SPDX-License-Identifier: MIT */
/*
 * PCI bus IDs as cudaDeviceGetPCIBusId reports them, and the duplicate
 * check over a node's GPUs.  Each input line is one GPU: "BUSID" or
 * "BUSID mig".
 *
 * Invariants: a parsed ID is in range and round-trips through its
 * canonical form; a reported duplicate is a real pair (same ID, not two
 * MIG instances); none reported means no such pair exists.
 */
#include <stdbool.h>
#include <strings.h>

#include "gpu/busid.h"
#include "fuzz_util.h"

#define MAX_GPUS 64

static void check_one(const char *text)
{
	struct sn_pci_busid id, again;
	char canon[32];

	if (sn_busid_parse(text, &id) != 0)
		return;
	FUZZ_CHECK(id.bus <= 0xff && id.device <= 0x1f && id.function <= 7);
	snprintf(canon, sizeof(canon), "%08x:%02x:%02x.%x", id.domain, id.bus,
		 id.device, id.function);
	FUZZ_CHECK(sn_busid_parse(canon, &again) == 0);
	FUZZ_CHECK(sn_busid_equal(&id, &again));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sn_gpu_identity *gpus = calloc(MAX_GPUS, sizeof(*gpus));
	char *text = fuzz_strndup(data, size), *line, *save = NULL;
	size_t n = 0, a = 0, b = 0, i, j;
	bool dup, expect = false, any_mig = false;

	if (!gpus)
		abort();
	for (line = strtok_r(text, "\n", &save); line && n < MAX_GPUS;
	     line = strtok_r(NULL, "\n", &save)) {
		char *space = strchr(line, ' ');

		gpus[n].index = (int)n;
		if (space) {
			*space = '\0';
			gpus[n].mig = strcmp(space + 1, "mig") == 0;
		}
		snprintf(gpus[n].busid, sizeof(gpus[n].busid), "%s", line);
		check_one(line);
		n++;
	}
	dup = sn_busid_find_duplicate(gpus, n, &a, &b);
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (sn_gpu_same_busid(&gpus[i], &gpus[j]) &&
			    !(gpus[i].mig && gpus[j].mig))
				expect = true;
	FUZZ_CHECK(dup == expect);
	if (dup) {
		FUZZ_CHECK(a < b && b < n);
		FUZZ_CHECK(sn_gpu_same_busid(&gpus[a], &gpus[b]));
		FUZZ_CHECK(!(gpus[a].mig && gpus[b].mig));
	}
	for (i = 0; i < n; i++)
		any_mig = any_mig || gpus[i].mig;
	FUZZ_CHECK(sn_busid_any_mig(gpus, n) == any_mig);
	free(gpus);
	free(text);
	return 0;
}

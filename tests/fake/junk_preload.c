/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOADed into nccl-warmup by the tests of its result channel
 * (--result-fd): prints what a job's preload, CUDA or a net plugin might,
 * on stdout and stderr, as the process starts: a fake JSON result, a raw
 * write() and an unterminated line left in stdout's buffer (flushed, if
 * ever, after everything else).  With the result on stdout, the helper's
 * reader would get one of these instead of the real result.
 */
#include <stdio.h>
#include <unistd.h>

#define JUNK_JSON "{\"version\":1,\"status\":\"ok\",\"exit_code\":0," \
		  "\"summary\":\"FAKE-JSON from LD_PRELOAD\"}"

__attribute__((constructor)) static void junk(void)
{
	static const char raw[] = "junk-preload: raw write on stdout\n";
	ssize_t rc;

	printf("%s\n", JUNK_JSON);
	fprintf(stderr, "%s\n", JUNK_JSON);
	fprintf(stderr, "spank-nccl: junk-preload on stderr\n");
	rc = write(STDOUT_FILENO, raw, sizeof(raw) - 1);
	(void)rc;
	printf("junk-preload: unterminated {\"exit_code\":");
}

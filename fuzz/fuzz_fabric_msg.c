/* SPDX-License-Identifier: MIT */
/*
 * The fabric warmup's coordination messages (one line each, from other
 * nodes over TCP: untrusted).
 *
 * Invariants: an accepted line re-encodes to a line that decodes to the
 * same message (busbw to the encoder's 3 decimals); node names hold only
 * node-name characters and texts only printable ASCII, so nothing a peer
 * sends can forge a second line or a log line.
 */
#include <ctype.h>
#include <math.h>

#include "fabric_msg.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_strndup(data, size), line[SN_FABRIC_MSG_MAX];
	struct sn_fabric_msg a, b;
	struct sn_error err;
	const char *c;

	if (sn_fabric_msg_decode(text, &a, &err) == 0) {
		for (c = a.node; *c; c++)
			FUZZ_CHECK(isalnum((unsigned char)*c) || *c == '-' ||
				   *c == '_' || *c == '.');
		for (c = a.text; *c; c++)
			FUZZ_CHECK(*c >= 0x20 && *c < 0x7f);
		if (sn_fabric_msg_encode(&a, line, sizeof(line), &err) == 0) {
			FUZZ_CHECK(strchr(line, '\n') == line + strlen(line) - 1);
			line[strlen(line) - 1] = '\0';
			FUZZ_CHECK(sn_fabric_msg_decode(line, &b, &err) == 0);
			FUZZ_CHECK(a.type == b.type && a.jobid == b.jobid &&
				   a.stepid == b.stepid && a.index == b.index &&
				   a.nodes == b.nodes && a.gpus == b.gpus &&
				   a.status == b.status &&
				   a.rank_base == b.rank_base &&
				   a.nranks == b.nranks && a.port == b.port &&
				   a.blame == b.blame &&
				   fabs(a.busbw - b.busbw) <= 0.0005 +
				   a.busbw * 1e-12 &&
				   strcmp(a.node, b.node) == 0 &&
				   strcmp(a.text, b.text) == 0);
		}
	}
	free(text);
	return 0;
}

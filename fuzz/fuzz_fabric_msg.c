/* SPDX-License-Identifier: MIT */
/*
 * The fabric warmup's coordination messages (one line each, from other
 * nodes over TCP: untrusted), the sealed payloads a MUNGE credential
 * carries (bytes, any content) and the AUTH lines.
 *
 * Invariants: an accepted line re-encodes to a line that decodes to the
 * same message (busbw to the encoder's 3 decimals); node names hold only
 * node-name characters and texts only printable ASCII, so nothing a peer
 * sends can forge a second line or a log line.
 */
#include <ctype.h>
#include <math.h>

#include "fabric/fabric_msg.h"
#include "protocol/helper_protocol.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_strndup(data, size), line[SN_FABRIC_MSG_MAX];
	char cred[SN_FABRIC_CRED_MAX];
	struct sn_fabric_msg a, b;
	struct sn_error err;
	const char *c;

	/*
	 * A payload unsealed for one connection: only HELLO, WELCOME and
	 * REFUSE, within bounds, and only for exactly these endpoints.
	 */
	if (sn_fabric_unseal_text(data, size, "10.0.0.2:41000",
				  "10.0.0.1:29400", &a, &err) == 0) {
		FUZZ_CHECK(a.type == SN_FMSG_HELLO || a.type == SN_FMSG_WELCOME ||
			   a.type == SN_FMSG_REFUSE);
		FUZZ_CHECK(size > 40 && memcmp(data, "SNFB2 SEAL 10.0.0.2:41000 10.0.0.1:29400\n", 41) == 0);
	}
	if (sn_fabric_auth_cred(text, cred, sizeof(cred), &err) == 0) {
		/* MUNGE's credential or the step key's (fabric_key.h). */
		FUZZ_CHECK(strncmp(cred, "MUNGE:", 6) == 0 ||
			   strncmp(cred, "SNK1:", 5) == 0);
		FUZZ_CHECK(sn_fabric_auth_line(cred, line, sizeof(line), &err) == 0);
	}
	if (sn_fabric_msg_decode(text, &a, &err) == 0) {
		FUZZ_CHECK(a.type != SN_FMSG_HELLO ||
			   (a.gpus <= SN_FABRIC_GPUS_MAX && a.index < a.nodes &&
			    a.nodes <= SN_FABRIC_NODES_MAX));
		FUZZ_CHECK(a.status <= SN_WARMUP_EXIT_LAST);
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
				   a.nranks == b.nranks &&
				   memcmp(a.nccl_id, b.nccl_id,
					  sizeof(a.nccl_id)) == 0 &&
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

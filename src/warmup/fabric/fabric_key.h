/* SPDX-License-Identifier: MIT */
/*
 * The fabric warmup's authentication without munged (AuthType=auth/slurm):
 * a per-step key, HKDF-SHA256 over the site's key (slurm.key, or
 * plugstack.conf's fabric_key=) with our own label, bound to the cluster,
 * job, step and uid (helper_protocol.h's SN_STEP_KEY_*).  Root derives
 * it: slurmstepd itself where libcrypto is mapped there (step_key.c),
 * else nccl-warmup --fabric-key-derive, run by spank_nccl.so beside the
 * helper, which never sees the site key)
 * and the helper reads it from an inherited descriptor (--fabric-key-fd).
 *
 * A credential is "SNK1:NONCE:TIME:PAYLOAD:MAC": NONCE 16 bytes of
 * getrandom(2) (hex), TIME the sender's clock (s), PAYLOAD base64, MAC
 * HMAC-SHA256 of all that under the step's key (hex).  The payload already names both
 * TCP endpoints (sn_fabric_seal_text); the receiver refuses a MAC that
 * does not verify (another step's key, another user's, a forgery), a
 * TIME more than FABRIC_AUTH_TTL_S away, and a NONCE it has seen.
 */
#ifndef WU_FABRIC_KEY_H
#define WU_FABRIC_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "protocol/helper_protocol.h"

#define FABRIC_KEY_BYTES SN_STEP_KEY_BYTES
#define FABRIC_KEY_NONCE_BYTES 16
#define FABRIC_KEY_SEEN_MAX 1024	/* nonces remembered (a ring) */
#define FABRIC_KEY_TAG "SNK1:"
/* The site key's first bytes that count (slurm.key is 32..1024 bytes). */
#define FABRIC_SITE_KEY_MAX SN_STEP_KEY_SITE_MAX

struct fabric_key {
	unsigned char key[FABRIC_KEY_BYTES];
	unsigned char seen[FABRIC_KEY_SEEN_MAX][FABRIC_KEY_NONCE_BYTES];
	size_t n_seen;		/* total ever seen; the ring holds the last */
};

/* The step's key: HKDF-SHA256(SITE) with the label and the ids. */
int fabric_key_derive(const unsigned char *site, size_t site_len,
		      const char *cluster, uint32_t job, uint32_t step,
		      uint32_t uid, unsigned char out[FABRIC_KEY_BYTES],
		      struct sn_error *err);
/* The step's key from descriptor FD (read whole, then closed). */
int fabric_key_read_fd(struct fabric_key *k, int fd, struct sn_error *err);
int fabric_key_seal(struct fabric_key *k, const void *payload, size_t len,
		    char *cred, size_t credlen, struct sn_error *err);
/* 0: PAYLOAD (*LEN in: its size; out: the length) is authentic; -1 else. */
int fabric_key_unseal(struct fabric_key *k, const char *cred, void *payload,
		      size_t *len, struct sn_error *err);
/*
 * nccl-warmup --fabric-key-derive SITE_KEY CLUSTER JOB STEP UID: run as
 * root by spank_nccl.so; the step's key (hex) on descriptor 3.  The exit
 * code; any failure is one line on stderr.
 */
int fabric_key_derive_main(int argc, char **argv);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The step key derived in this process (slurmstepd), through the
 * libcrypto.so.3 that is already mapped there: AuthType=auth/slurm's
 * auth_slurm.so links libjwt, which links it.  dlopen(RTLD_NOLOAD) only
 * finds it: spank_nccl.so never loads a library and has no DT_NEEDED on
 * libcrypto.  The same derivation as nccl-warmup --fabric-key-derive
 * (fabric_key.c; helper_protocol.h's SN_STEP_KEY_*), byte for byte
 * (tests/unit/test_step_key.c); the site key's read and the key's line
 * are both's (protocol/step_key_io.h).  Libc only, no SPANK call: the bench's
 * stand-in for slurmstepd (bench/fabric-key-inproc.c) builds it too.
 */
#ifndef SN_STEP_KEY_H
#define SN_STEP_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/helper_protocol.h"
#include "protocol/step_key_io.h"

/* The libcrypto this process has: NULL or a handle from sn_step_key_open. */
struct sn_step_key_lib;

/*
 * libcrypto.so.3 if this process has it mapped, with the functions the
 * derivation needs; NULL (WHY set) if not.  Loads nothing.
 */
struct sn_step_key_lib *sn_step_key_open(char *why, size_t len);
void sn_step_key_close(struct sn_step_key_lib *lib);

/* The step's key into OUT; -1 (WHY) if libcrypto fails. */
int sn_step_key_derive(const struct sn_step_key_lib *lib,
		       const unsigned char *site, size_t site_len,
		       const char *cluster, uint32_t job, uint32_t step,
		       uint32_t uid, unsigned char out[SN_STEP_KEY_BYTES],
		       char *why, size_t len);

#endif

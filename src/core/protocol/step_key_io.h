/* SPDX-License-Identifier: MIT */
/*
 * The step key's two ends that need no crypto (helper_protocol.h's
 * SN_STEP_KEY_*): the site key's read and the key's line on the pipe.
 * One copy for slurmstepd's derivation (src/plugin/step_key.c) and
 * nccl-warmup --fabric-key-derive (src/warmup/fabric/fabric_key.c).
 * Libc only: the bench's stand-in for slurmstepd builds it too.
 */
#ifndef SN_STEP_KEY_IO_H
#define SN_STEP_KEY_IO_H

#include <stddef.h>

#include "protocol/helper_protocol.h"

/*
 * The first SN_STEP_KEY_SITE_MAX bytes of the site key at PATH (not
 * following a symlink) into SITE (that size), *N its length; -1 (WHY)
 * if unreadable or shorter than SN_STEP_KEY_BYTES.  As the process is:
 * the caller takes root.
 */
int sn_step_key_site_read(const char *path, unsigned char *site, size_t *n,
			  char *why, size_t len);

/* KEY's line (hex and a newline, as the helper reads it) on FD; -1 (WHY). */
int sn_step_key_write(int fd, const unsigned char key[SN_STEP_KEY_BYTES],
		      char *why, size_t len);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Who is talking, for the fabric coordination: MUNGE, which every Slurm
 * cluster with AuthType=auth/munge already runs on every node, and which
 * vouches for the uid of the process that made a credential (munged reads
 * it from the kernel: SO_PEERCRED) and refuses a credential decoded twice
 * (its replay cache).  The helper runs as the job's user on each node, so
 * a credential made by the same uid is one of the step's processes or a
 * process of that user; a process of any other user cannot make one.
 * Credentials are restricted to that uid (MUNGE_OPT_UID_RESTRICTION), so
 * no other user can decode one either.
 *
 * Or, where no munged runs (AuthType=auth/slurm), a per-step key that
 * root derived from the site's key (fabric_key.h): only the step's own
 * helpers hold it, so it proves the step, not only the uid.
 */
#ifndef WU_FABRIC_AUTH_H
#define WU_FABRIC_AUTH_H

#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"

/* Seconds a credential is valid: far above one HELLO's round trip. */
#define FABRIC_AUTH_TTL_S 60

struct fabric_key;

struct fabric_auth {
	struct fabric_key *key;	/* the step's key, or NULL: MUNGE */
	void *enc;		/* munge_ctx_t for encoding */
	void *dec;		/* munge_ctx_t for decoding */
	uid_t uid;		/* this process's: the job's user */
};

enum fabric_unseal {
	FABRIC_UNSEAL_OK = 0,
	FABRIC_UNSEAL_FOREIGN,	/* made by another user */
	FABRIC_UNSEAL_INVALID,	/* not a credential, forged, replayed, expired */
	FABRIC_UNSEAL_NO_MUNGE,	/* munged did not answer here */
};

/*
 * KEY_FD >= 0: the step's key on that descriptor (read, closed);
 * else MUNGE through SOCKET ("" or NULL: libmunge's default).
 */
int fabric_auth_open(struct fabric_auth *a, const char *socket, int key_fd,
		     struct sn_error *err);
void fabric_auth_close(struct fabric_auth *a);
/* A credential sealing PAYLOAD (LEN bytes) into CRED (its text). */
int fabric_auth_seal(struct fabric_auth *a, const void *payload, size_t len,
		     char *cred, size_t credlen, struct sn_error *err);
/*
 * The payload of CRED into PAYLOAD (*LEN: its size in, the payload's
 * length out), only if a process of this uid made it: FABRIC_UNSEAL_OK,
 * else why not (ERR says it, for the log).
 */
enum fabric_unseal fabric_auth_unseal(struct fabric_auth *a, const char *cred,
				      void *payload, size_t *len,
				      struct sn_error *err);

#endif

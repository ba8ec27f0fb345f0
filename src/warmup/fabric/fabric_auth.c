/* SPDX-License-Identifier: MIT */
/* MUNGE credentials for the fabric coordination (fabric_auth.h). */
#include <errno.h>
#include <munge.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fabric_auth.h"

int fabric_auth_open(struct fabric_auth *a, const char *socket,
		     struct sn_error *err)
{
	munge_ctx_t enc = munge_ctx_create(), dec = munge_ctx_create();
	munge_err_t rc = EMUNGE_NO_MEMORY;

	memset(a, 0, sizeof(*a));
	a->uid = getuid();
	if (enc && dec) {
		rc = munge_ctx_set(enc, MUNGE_OPT_UID_RESTRICTION, a->uid);
		if (rc == EMUNGE_SUCCESS)
			rc = munge_ctx_set(enc, MUNGE_OPT_TTL, FABRIC_AUTH_TTL_S);
		if (rc == EMUNGE_SUCCESS && socket && *socket)
			rc = munge_ctx_set(enc, MUNGE_OPT_SOCKET, socket);
		if (rc == EMUNGE_SUCCESS && socket && *socket)
			rc = munge_ctx_set(dec, MUNGE_OPT_SOCKET, socket);
	}
	if (rc != EMUNGE_SUCCESS) {
		sn_error_set(err, "MUNGE context: %s", munge_strerror(rc));
		if (enc)
			munge_ctx_destroy(enc);
		if (dec)
			munge_ctx_destroy(dec);
		return -1;
	}
	a->enc = enc;
	a->dec = dec;
	return 0;
}

void fabric_auth_close(struct fabric_auth *a)
{
	if (a->enc)
		munge_ctx_destroy(a->enc);
	if (a->dec)
		munge_ctx_destroy(a->dec);
	a->enc = a->dec = NULL;
}

int fabric_auth_seal(struct fabric_auth *a, const void *payload, size_t len,
		     char *cred, size_t credlen, struct sn_error *err)
{
	char *c = NULL;
	munge_err_t rc = munge_encode(&c, a->enc, payload, (int)len);

	if (rc != EMUNGE_SUCCESS) {
		sn_error_set(err, "MUNGE cannot make a credential (%s): the fabric warmup authenticates the step's nodes with MUNGE; is munged running (munge_socket= in plugstack.conf names a non-default socket)?",
			     munge_ctx_strerror(a->enc) ? munge_ctx_strerror(a->enc) :
			     munge_strerror(rc));
		free(c);
		return -1;
	}
	if (strlen(c) >= credlen) {
		sn_error_set(err, "a MUNGE credential of %zu bytes is too long",
			     strlen(c));
		free(c);
		return -1;
	}
	memcpy(cred, c, strlen(c) + 1);
	free(c);
	return 0;
}

enum fabric_unseal fabric_auth_unseal(struct fabric_auth *a, const char *cred,
				      void *payload, size_t *len,
				      struct sn_error *err)
{
	void *buf = NULL;
	int n = 0;
	uid_t uid = (uid_t)-1;
	gid_t gid;
	munge_err_t rc = munge_decode(cred, a->dec, &buf, &n, &uid, &gid);
	enum fabric_unseal r = FABRIC_UNSEAL_OK;

	if (rc == EMUNGE_SOCKET || rc == EMUNGE_NO_MEMORY) {
		sn_error_set(err, "munged did not answer: %s", munge_strerror(rc));
		r = FABRIC_UNSEAL_NO_MUNGE;
	} else if (rc == EMUNGE_CRED_UNAUTHORIZED ||
		   (rc == EMUNGE_SUCCESS && uid != a->uid)) {
		/* Made by another user (or restricted to one). */
		sn_error_set(err, "a credential of uid %ld, not the job's uid %ld",
			     rc == EMUNGE_SUCCESS ? (long)uid : -1L,
			     (long)a->uid);
		r = FABRIC_UNSEAL_FOREIGN;
	} else if (rc != EMUNGE_SUCCESS) {
		sn_error_set(err, "invalid credential: %s", munge_strerror(rc));
		r = FABRIC_UNSEAL_INVALID;
	} else if (n <= 0 || (size_t)n > *len) {
		sn_error_set(err, "a credential with a payload of %d bytes", n);
		r = FABRIC_UNSEAL_INVALID;
	} else {
		memcpy(payload, buf, (size_t)n);
		*len = (size_t)n;
	}
	free(buf);
	return r;
}

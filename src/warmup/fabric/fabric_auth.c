/* SPDX-License-Identifier: MIT */
/* Credentials for the fabric coordination (fabric_auth.h): MUNGE's, or
 * the per-step key's (fabric_key.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef SN_HAVE_MUNGE
#include <munge.h>
#endif
#include <openssl/crypto.h>

#include "fabric_auth.h"
#include "fabric_key.h"

static int open_key(struct fabric_auth *a, int key_fd, struct sn_error *err)
{
	a->key = calloc(1, sizeof(*a->key));
	if (!a->key) {
		close(key_fd);
		sn_error_set(err, "out of memory");
		return -1;
	}
	if (fabric_key_read_fd(a->key, key_fd, err) < 0) {
		free(a->key);
		a->key = NULL;
		return -1;
	}
	return 0;
}

#ifndef SN_HAVE_MUNGE
int fabric_auth_open(struct fabric_auth *a, const char *socket, int key_fd,
		     struct sn_error *err)
{
	(void)socket;
	memset(a, 0, sizeof(*a));
	a->uid = getuid();
	if (key_fd >= 0)
		return open_key(a, key_fd, err);
	sn_error_set(err, "this nccl-warmup was built without MUNGE and spank_nccl.so gave it no step key: set fabric_auth=key in plugstack.conf (AuthType=auth/slurm sites), or install a helper built with MUNGE");
	return -1;
}

void fabric_auth_close(struct fabric_auth *a)
{
	if (a->key)
		OPENSSL_cleanse(a->key, sizeof(*a->key));
	free(a->key);
	a->key = NULL;
}

int fabric_auth_seal(struct fabric_auth *a, const void *payload, size_t len,
		     char *cred, size_t credlen, struct sn_error *err)
{
	return fabric_key_seal(a->key, payload, len, cred, credlen, err);
}

enum fabric_unseal fabric_auth_unseal(struct fabric_auth *a, const char *cred,
				      void *payload, size_t *len,
				      struct sn_error *err)
{
	return fabric_key_unseal(a->key, cred, payload, len, err) < 0 ?
	       FABRIC_UNSEAL_INVALID : FABRIC_UNSEAL_OK;
}
#else
int fabric_auth_open(struct fabric_auth *a, const char *socket, int key_fd,
		     struct sn_error *err)
{
	munge_ctx_t enc, dec;
	munge_err_t rc = EMUNGE_NO_MEMORY;

	memset(a, 0, sizeof(*a));
	a->uid = getuid();
	if (key_fd >= 0)
		return open_key(a, key_fd, err);
	enc = munge_ctx_create();
	dec = munge_ctx_create();
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
	if (a->key)
		OPENSSL_cleanse(a->key, sizeof(*a->key));
	free(a->key);
	a->key = NULL;
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
	munge_err_t rc;

	if (a->key)
		return fabric_key_seal(a->key, payload, len, cred, credlen, err);
	rc = munge_encode(&c, a->enc, payload, (int)len);
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
	munge_err_t rc;
	enum fabric_unseal r = FABRIC_UNSEAL_OK;

	if (a->key)
		return fabric_key_unseal(a->key, cred, payload, len, err) < 0 ?
		       FABRIC_UNSEAL_INVALID : FABRIC_UNSEAL_OK;
	rc = munge_decode(cred, a->dec, &buf, &n, &uid, &gid);
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
#endif

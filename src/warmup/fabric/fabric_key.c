/* SPDX-License-Identifier: MIT */
/* The per-step key and its credentials (fabric_key.h): OpenSSL's libcrypto. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>

#include "fabric_auth.h"
#include "fabric_key.h"
#include "base/strutil.h"
#include "fabric/fabric_msg.h"
#include "protocol/helper_protocol.h"
#include "protocol/step_key_io.h"

#define MAC_HEX (2 * 32)

static void hex(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/* 2N lowercase hex digits of IN (not NUL-terminated) into N bytes. */
static int unhex(const char *in, size_t n, unsigned char *out)
{
	for (size_t i = 0; i < n; i++) {
		int hi = sn_hex_digit(in[2 * i], false);
		int lo = sn_hex_digit(in[2 * i + 1], false);

		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

int fabric_key_derive(const unsigned char *site, size_t site_len,
		      const char *cluster, uint32_t job, uint32_t step,
		      uint32_t uid, unsigned char out[FABRIC_KEY_BYTES],
		      struct sn_error *err)
{
	char info[512], md[] = "SHA256", salt[] = SN_STEP_KEY_SALT;
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *c = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	int n = snprintf(info, sizeof(info), SN_STEP_KEY_INFO, cluster,
			 (unsigned int)job, (unsigned int)step,
			 (unsigned int)uid);
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, md, 0),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, salt,
						  strlen(salt)),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
						  (void *)site, site_len),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info,
						  n > 0 ? (size_t)n : 0),
		OSSL_PARAM_construct_end(),
	};
	int ok = c && n > 0 && (size_t)n < sizeof(info) &&
		 EVP_KDF_derive(c, out, FABRIC_KEY_BYTES, params) > 0;

	EVP_KDF_CTX_free(c);
	EVP_KDF_free(kdf);
	if (!ok)
		sn_error_set(err, "HKDF-SHA256 failed (libcrypto)");
	return ok ? 0 : -1;
}

int fabric_key_read_fd(struct fabric_key *k, int fd, struct sn_error *err)
{
	char buf[2 * FABRIC_KEY_BYTES + 2];
	size_t got = 0;
	ssize_t n;

	memset(k, 0, sizeof(*k));
	/*
	 * libcrypto's first HMAC sets up its provider (0.5-1 ms): done
	 * here, while root's derivation may still run, not on the join's
	 * path after the key came.  The process's OpenSSL set-up is left
	 * as it is: the job's libraries share it.
	 */
	EVP_MAC_free(EVP_MAC_fetch(NULL, "HMAC", NULL));
	EVP_MD_free(EVP_MD_fetch(NULL, "SHA256", NULL));
	while (got < sizeof(buf) &&
	       ((n = read(fd, buf + got, sizeof(buf) - got)) > 0 ||
		(n < 0 && errno == EINTR)))
		got += n > 0 ? (size_t)n : 0;
	close(fd);
	if (got > 2 * FABRIC_KEY_BYTES && buf[2 * FABRIC_KEY_BYTES] == '\n')
		got--;
	if (got != 2 * FABRIC_KEY_BYTES ||
	    unhex(buf, FABRIC_KEY_BYTES, k->key) < 0) {
		OPENSSL_cleanse(buf, sizeof(buf));
		sn_error_set(err, "no step key on descriptor %d: spank_nccl.so's derivation as root failed (slurmd's log says why; fabric_key= in plugstack.conf, or slurm.key beside slurm.conf)",
			     fd);
		return -1;
	}
	OPENSSL_cleanse(buf, sizeof(buf));
	return 0;
}

static void mac(const struct fabric_key *k, const char *text, size_t n,
		char out[MAC_HEX + 1])
{
	unsigned char md[32];
	unsigned int mdlen = sizeof(md);

	HMAC(EVP_sha256(), k->key, FABRIC_KEY_BYTES,
	     (const unsigned char *)text, n, md, &mdlen);
	hex(md, sizeof(md), out);
}

int fabric_key_seal(struct fabric_key *k, const void *payload, size_t len,
		    char *cred, size_t credlen, struct sn_error *err)
{
	unsigned char nonce[FABRIC_KEY_NONCE_BYTES];
	char nonce_hex[2 * FABRIC_KEY_NONCE_BYTES + 1], m[MAC_HEX + 1];
	size_t b64 = 4 * ((len + 2) / 3), at;
	int n;

	/*
	 * The kernel's CSPRNG, which seeds libcrypto's: RAND_bytes' first
	 * call sets up its DRBG, 1.2-5 ms on the join's path.
	 */
	if (getrandom(nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce)) {
		sn_error_set(err, "no random nonce: getrandom: %s",
			     strerror(errno));
		return -1;
	}
	hex(nonce, sizeof(nonce), nonce_hex);
	n = snprintf(cred, credlen, FABRIC_KEY_TAG "%s:%lld:", nonce_hex,
		     (long long)time(NULL));
	if (n < 0 || (size_t)n + b64 + 1 + MAC_HEX + 1 > credlen) {
		sn_error_set(err, "a payload of %zu bytes is too long", len);
		return -1;
	}
	at = (size_t)n;
	EVP_EncodeBlock((unsigned char *)cred + at, payload, (int)len);
	at += b64;
	mac(k, cred, at, m);
	snprintf(cred + at, credlen - at, ":%s", m);
	return 0;
}

/* Whether NONCE was seen; remembers it. */
static bool replayed(struct fabric_key *k, const unsigned char *nonce)
{
	size_t held = k->n_seen < FABRIC_KEY_SEEN_MAX ? k->n_seen :
		      FABRIC_KEY_SEEN_MAX;

	for (size_t i = 0; i < held; i++)
		if (memcmp(k->seen[i], nonce, FABRIC_KEY_NONCE_BYTES) == 0)
			return true;
	memcpy(k->seen[k->n_seen++ % FABRIC_KEY_SEEN_MAX], nonce,
	       FABRIC_KEY_NONCE_BYTES);
	return false;
}

int fabric_key_unseal(struct fabric_key *k, const char *cred, void *payload,
		      size_t *len, struct sn_error *err)
{
	const size_t tag = strlen(FABRIC_KEY_TAG), nh = 2 * FABRIC_KEY_NONCE_BYTES;
	unsigned char nonce[FABRIC_KEY_NONCE_BYTES];
	unsigned char buf[SN_FABRIC_PAYLOAD_MAX + 3];
	const char *t, *p, *last;
	char m[MAC_HEX + 1], *end;
	long long when;
	size_t b64;
	int n;

	last = strrchr(cred, ':');
	if (strncmp(cred, FABRIC_KEY_TAG, tag) != 0 || !last ||
	    strlen(last + 1) != MAC_HEX || strlen(cred) < tag + nh + 1 ||
	    cred[tag + nh] != ':') {
		sn_error_set(err, "not a key credential");
		return -1;
	}
	mac(k, cred, (size_t)(last - cred), m);
	if (CRYPTO_memcmp(m, last + 1, MAC_HEX) != 0) {
		sn_error_set(err, "MAC does not verify (another step's or user's key, or forged)");
		return -1;
	}
	/* Authentic from here: only the step's own helpers hold the key. */
	t = cred + tag + nh + 1;
	errno = 0;
	when = strtoll(t, &end, 10);
	p = end + 1;
	if (errno || end == t || *end != ':' || p > last ||
	    unhex(cred + tag, FABRIC_KEY_NONCE_BYTES, nonce) < 0) {
		sn_error_set(err, "a malformed key credential");
		return -1;
	}
	if (llabs(when - (long long)time(NULL)) > FABRIC_AUTH_TTL_S) {
		sn_error_set(err, "a credential %llds old (TTL %d s)",
			     (long long)time(NULL) - when, FABRIC_AUTH_TTL_S);
		return -1;
	}
	if (replayed(k, nonce)) {
		sn_error_set(err, "a replayed credential");
		return -1;
	}
	b64 = (size_t)(last - p);
	if (b64 % 4 || b64 / 4 * 3 > sizeof(buf) ||
	    (n = EVP_DecodeBlock(buf, (const unsigned char *)p, (int)b64)) < 0) {
		sn_error_set(err, "a credential whose payload does not decode");
		return -1;
	}
	n -= (b64 && p[b64 - 1] == '=') + (b64 > 1 && p[b64 - 2] == '=');
	if (n <= 0 || (size_t)n > *len) {
		sn_error_set(err, "a credential with a payload of %d bytes", n);
		return -1;
	}
	memcpy(payload, buf, (size_t)n);
	*len = (size_t)n;
	return 0;
}

static int derive_fail(const char *why, const char *what)
{
	fprintf(stderr, "spank-nccl: fabric key: %s%s\n", why, what);
	return 2;
}

static int parse_u32(const char *s, uint32_t *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || end == s || *end || x > UINT32_MAX || s[0] == '-')
		return -1;
	*v = (uint32_t)x;
	return 0;
}

int fabric_key_derive_main(int argc, char **argv)
{
	static unsigned char site[FABRIC_SITE_KEY_MAX];
	unsigned char key[FABRIC_KEY_BYTES];
	struct sn_error e = { .msg = "" };
	uint32_t ids[3];
	size_t len = 0;
	int rc;

	/*
	 * No openssl.cnf, nor the legacy name tables (EVP_get_*byname):
	 * nothing of them is used, and they were most of the start-up.
	 */
	OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG |
			    OPENSSL_INIT_NO_ADD_ALL_CIPHERS |
			    OPENSSL_INIT_NO_ADD_ALL_DIGESTS, NULL);
	if (argc != 7 || parse_u32(argv[4], &ids[0]) < 0 ||
	    parse_u32(argv[5], &ids[1]) < 0 || parse_u32(argv[6], &ids[2]) < 0)
		return derive_fail("usage: nccl-warmup " SN_HELPER_FABRIC_KEY_DERIVE,
				   " SITE_KEY CLUSTER JOB STEP UID");
	if (sn_step_key_site_read(argv[2], site, &len, e.msg,
				  sizeof(e.msg)) < 0)
		return derive_fail(e.msg, "");
	rc = fabric_key_derive(site, len, argv[3], ids[0], ids[1], ids[2], key,
			       &e);
	OPENSSL_cleanse(site, len);
	if (rc == 0)
		rc = sn_step_key_write(3, key, e.msg, sizeof(e.msg));
	OPENSSL_cleanse(key, sizeof(key));
	return rc < 0 ? derive_fail(e.msg, "") : 0;
}

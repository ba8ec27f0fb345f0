/* SPDX-License-Identifier: MIT */
/*
 * The step key in slurmstepd (step_key.h): OpenSSL 3's EVP_KDF HKDF, as
 * fabric_key.c calls it, through function pointers of our own types.
 * No OpenSSL header: the plugin builds where none is installed (the
 * helper needs them, the plugin does not).  These are the soname's ABI,
 * fixed for every libcrypto.so.3: OSSL_PARAM's layout (openssl/params.h,
 * "struct ossl_param_st") and the functions' signatures (openssl/kdf.h,
 * openssl/params.h).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "step_key.h"

#define LIBCRYPTO "libcrypto.so.3"

struct ossl_param {
	const char *key;
	unsigned int data_type;
	void *data;
	size_t data_size;
	size_t return_size;
};

typedef void *(*kdf_fetch_fn)(void *libctx, const char *algorithm,
			      const char *properties);
typedef void *(*kdf_ctx_new_fn)(void *kdf);
typedef int (*kdf_derive_fn)(void *ctx, unsigned char *key, size_t keylen,
			     const struct ossl_param params[]);
typedef void (*free_fn)(void *p);
typedef struct ossl_param (*param_utf8_fn)(const char *key, char *buf,
					   size_t bsize);
typedef struct ossl_param (*param_octets_fn)(const char *key, void *buf,
					     size_t bsize);
typedef struct ossl_param (*param_end_fn)(void);

struct sn_step_key_lib {
	void *handle;
	kdf_fetch_fn kdf_fetch;
	kdf_ctx_new_fn kdf_ctx_new;
	kdf_derive_fn kdf_derive;
	free_fn kdf_ctx_free, kdf_free;
	param_utf8_fn param_utf8;
	param_octets_fn param_octets;
	param_end_fn param_end;
};

struct sn_step_key_lib *sn_step_key_open(char *why, size_t len)
{
	struct sn_step_key_lib *lib;
	const char *missing = NULL;
	/* RTLD_NOLOAD: NULL unless the process already has it. */
	void *h = dlopen(LIBCRYPTO, RTLD_NOW | RTLD_NOLOAD);

	if (!h) {
		snprintf(why, len, "%s is not mapped in this process", LIBCRYPTO);
		return NULL;
	}
	lib = calloc(1, sizeof(*lib));
	if (!lib) {
		dlclose(h);
		snprintf(why, len, "out of memory");
		return NULL;
	}
	lib->handle = h;
#define SYM(field, type, name) \
	if (!missing && !(lib->field = (type)dlsym(h, name))) \
		missing = name;
	SYM(kdf_fetch, kdf_fetch_fn, "EVP_KDF_fetch")
	SYM(kdf_ctx_new, kdf_ctx_new_fn, "EVP_KDF_CTX_new")
	SYM(kdf_derive, kdf_derive_fn, "EVP_KDF_derive")
	SYM(kdf_ctx_free, free_fn, "EVP_KDF_CTX_free")
	SYM(kdf_free, free_fn, "EVP_KDF_free")
	SYM(param_utf8, param_utf8_fn, "OSSL_PARAM_construct_utf8_string")
	SYM(param_octets, param_octets_fn, "OSSL_PARAM_construct_octet_string")
	SYM(param_end, param_end_fn, "OSSL_PARAM_construct_end")
#undef SYM
	if (missing) {
		snprintf(why, len, "%s has no %s", LIBCRYPTO, missing);
		sn_step_key_close(lib);
		return NULL;
	}
	return lib;
}

void sn_step_key_close(struct sn_step_key_lib *lib)
{
	if (!lib)
		return;
	dlclose(lib->handle);	/* the process's own reference stays */
	free(lib);
}

int sn_step_key_derive(const struct sn_step_key_lib *lib,
		       const unsigned char *site, size_t site_len,
		       const char *cluster, uint32_t job, uint32_t step,
		       uint32_t uid, unsigned char out[SN_STEP_KEY_BYTES],
		       char *why, size_t len)
{
	char info[512], md[] = "SHA256", salt[] = SN_STEP_KEY_SALT;
	int n = snprintf(info, sizeof(info), SN_STEP_KEY_INFO, cluster,
			 (unsigned int)job, (unsigned int)step,
			 (unsigned int)uid);
	void *kdf, *c;
	int ok;

	if (n <= 0 || (size_t)n >= sizeof(info)) {
		snprintf(why, len, "a ClusterName too long for the key's label");
		return -1;
	}
	/* fabric_key.c's names: OSSL_KDF_PARAM_DIGEST, _SALT, _KEY, _INFO. */
	struct ossl_param params[] = {
		lib->param_utf8("digest", md, 0),
		lib->param_octets("salt", salt, strlen(salt)),
		lib->param_octets("key", (void *)site, site_len),
		lib->param_octets("info", info, (size_t)n),
		lib->param_end(),
	};

	/*
	 * The process's OpenSSL set-up is left as it is (its openssl.cnf
	 * loads on the first fetch, if Slurm's libjwt has not loaded it):
	 * slurmstepd's own libcrypto use shares it.
	 */
	kdf = lib->kdf_fetch(NULL, "HKDF", NULL);
	c = kdf ? lib->kdf_ctx_new(kdf) : NULL;
	ok = c && lib->kdf_derive(c, out, SN_STEP_KEY_BYTES, params) > 0;
	if (c)
		lib->kdf_ctx_free(c);
	if (kdf)
		lib->kdf_free(kdf);
	explicit_bzero(info, sizeof(info));
	if (!ok) {
		explicit_bzero(out, SN_STEP_KEY_BYTES);
		snprintf(why, len, "HKDF-SHA256 failed (%s)", LIBCRYPTO);
		return -1;
	}
	return 0;
}

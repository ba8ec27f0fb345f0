/* SPDX-License-Identifier: MIT */
/*
 * Error text carried out of the pure-C core.  The core never prints: it
 * fills a struct sn_error and the caller (plugin, helper, test) decides
 * where the message goes and adds the "spank-nccl: " prefix.
 */
#ifndef SN_ERROR_H
#define SN_ERROR_H

#define SN_ERROR_MAX 1024

struct sn_error {
	char msg[SN_ERROR_MAX];
};

void sn_error_set(struct sn_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sn_error_clear(struct sn_error *err);

#endif

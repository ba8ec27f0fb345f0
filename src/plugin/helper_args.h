/* SPDX-License-Identifier: MIT */
/*
 * nccl-warmup's command line, as the plugin builds it for the job's
 * warmup (step_warmup.c) and for the root confirmation (step_confirm.c):
 * a bounded argv (struct sn_argv) and the options both runs share.
 */
#ifndef SN_HELPER_ARGS_H
#define SN_HELPER_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"

#define SN_ARGV_MAX 47		/* words, past the NULL that ends them */
#define SN_ARGV_TEXT_MAX 2048	/* the formatted words' text */

/*
 * An argv that refuses to overflow: once a word or its text does not
 * fit, ->full is set and nothing more is added; argv[] stays
 * NULL-terminated throughout.  add keeps WORD (it must outlive the run);
 * addf keeps a formatted copy in ->text.
 */
struct sn_argv {
	char *argv[SN_ARGV_MAX + 1];
	int argc;
	bool full;
	size_t text_len;
	char text[SN_ARGV_TEXT_MAX];
};

void sn_argv_init(struct sn_argv *a);
void sn_argv_add(struct sn_argv *a, const char *word);
void sn_argv_addf(struct sn_argv *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* OPTION ("--name") and VALUE, both kept: two words, or neither. */
void sn_argv_opt(struct sn_argv *a, const char *option, const char *value);

/*
 * What every run of nccl-warmup gets from plugstack.conf: the helper's
 * path, --mode MODE --timeout --node NODE --json --result-fd FD
 * --teardown, --nccl-default (warmup_nccl=), --health and
 * --health-busy-mib (health= given), and in bandwidth mode --bytes and
 * --min-busbw.
 */
void sn_helper_args_common(struct sn_argv *a, const struct sn_config *cfg,
			   enum sn_warmup_mode mode, const char *node,
			   int result_fd);
/* GB/s as plain decimal, trailing zeros trimmed: the helper's parser
 * (sn_parse_busbw) refuses the exponent "%g" writes below 1e-4. */
void sn_format_gbps(char *buf, size_t len, double gbps);

#endif

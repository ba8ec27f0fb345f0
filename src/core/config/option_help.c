/* SPDX-License-Identifier: MIT */
/*
 * srun/sbatch/salloc --help for the two options, written from the
 * parsers' own word table (options.c) and the site's plugstack.conf, so
 * the help cannot leave out a word the parser takes or name a default
 * the site changed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config/options.h"

struct out {
	char *buf;
	size_t len;
	size_t used;
	int rc;
};

static void add(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Appends to O; a text that does not fit leaves O->rc at -1. */
static void add(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->rc < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->used) {
		o->rc = -1;
		return;
	}
	o->used += (size_t)n;
}

static int start(struct out *o, char *buf, size_t len)
{
	o->buf = buf;
	o->len = len;
	o->used = 0;
	o->rc = len ? 0 : -1;
	if (len)
		buf[0] = '\0';
	return o->rc;
}

int sn_warmup_value_synopsis(char *buf, size_t len)
{
	const struct sn_option_word *w;
	struct out o;
	size_t i, n;

	if (start(&o, buf, len) < 0)
		return -1;
	w = sn_warmup_words(&n);
	add(&o, "MODE");
	for (i = 0; i < n; i++)
		if (w[i].kind != SN_WORD_MODE)
			add(&o, "[,%s%s]", w[i].word, w[i].arg ? w[i].arg : "");
	return o.rc;
}

int sn_warmup_usage(char *buf, size_t len, enum sn_warmup_mode site_mode)
{
	const struct sn_option_word *w;
	struct out o;
	size_t i, n;
	bool first = true;

	if (start(&o, buf, len) < 0)
		return -1;
	w = sn_warmup_words(&n);
	/*
	 * Slurm hands an optional value (has_arg=2) over only after '='
	 * (plugin/submit.c): a word after a space is the command.  The
	 * synopsis is Slurm's own first line (arginfo), not repeated here:
	 * its wrapping would split it.
	 */
	add(&o, "[spank-nccl] Check GPUs and warm up NCCL on every node before the tasks start. The value is optional and follows '=' only: in \"--nccl-warmup comm\", comm is the program to run. MODE is ");
	for (i = 0; i < n; i++) {
		if (w[i].kind != SN_WORD_MODE)
			continue;
		add(&o, "%s%s (%s)", first ? "" : ", ", w[i].word, w[i].help);
		first = false;
	}
	add(&o, ". Without a value: %s, this site's default.",
	    sn_warmup_mode_name(site_mode));
	first = true;
	for (i = 0; i < n; i++) {
		if (w[i].kind == SN_WORD_MODE)
			continue;
		add(&o, "%s,%s%s (%s)", first ? " Add " : ", ", w[i].word,
		    w[i].arg ? w[i].arg : "", w[i].help);
		first = false;
	}
	add(&o, ". Env: " SN_ENV_WARMUP);
	return o.rc;
}

int sn_profile_usage(char *buf, size_t len,
		     const struct sn_profile_request *site_defaults)
{
	const struct sn_option_word *w;
	struct out o;
	size_t i, n;

	if (start(&o, buf, len) < 0)
		return -1;
	w = sn_profile_words(&n);
	add(&o, "[spank-nccl] Apply NCCL/PyTorch environment profiles to every task, left to right after this site's default profiles (");
	for (i = 0; i < site_defaults->count; i++)
		add(&o, "%s%s", i ? ", " : "", site_defaults->names[i]);
	add(&o, "%s). Or alone: ", site_defaults->count ? "" : "none");
	for (i = 0; i < n; i++)
		add(&o, "%s%s (%s)", i ? ", " : "", w[i].word, w[i].help);
	add(&o, ". Env: " SN_ENV_PROFILE);
	return o.rc;
}

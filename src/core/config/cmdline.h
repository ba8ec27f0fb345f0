/* SPDX-License-Identifier: MIT */
/*
 * The launcher's own command line (srun, sbatch, salloc), read back from
 * /proc/self/cmdline, and where an option that getopt_long just parsed
 * sits in it: the word after a bare --nccl-warmup decides whether the
 * user typed a mode that srun will run as a program (options.c says why
 * the value is optional, submit.c what is refused).
 */
#ifndef SN_CMDLINE_H
#define SN_CMDLINE_H

#include <stddef.h>

/* Larger command lines are not read (the kernel's ARG_MAX is 2 MiB+). */
#define SN_CMDLINE_MAX (4u << 20)

struct sn_cmdline {
	char *buf;		/* the NUL-separated words */
	char **argv;		/* argc pointers into buf, then NULL */
	size_t argc;
};

/* Reads PATH (a /proc/PID/cmdline); -1 if unreadable, empty or too large. */
int sn_cmdline_read(const char *path, struct sn_cmdline *cl);
/* The same from words in memory (tests); -1 on allocation failure. */
int sn_cmdline_from(struct sn_cmdline *cl, const char *const *words,
		    size_t n);
void sn_cmdline_free(struct sn_cmdline *cl);

enum sn_next_word {
	SN_NEXT_UNKNOWN,	/* the option was not found where getopt was */
	SN_NEXT_NONE,		/* nothing, or another option, follows it */
	SN_NEXT_WORD,		/* the command's first word follows it */
};

/*
 * getopt_long just returned OPTION (e.g. "--nccl-warmup", given without
 * '=') and left its optind at OPTIND: what follows the option word on CL.
 * SN_NEXT_WORD sets *WORD to the word that ended option parsing, the
 * first word of the command that srun/salloc runs or sbatch submits.
 */
enum sn_next_word sn_cmdline_word_after(const struct sn_cmdline *cl,
					int optind, const char *option,
					const char **word);

#endif

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/cmdline.h"

void sn_cmdline_free(struct sn_cmdline *cl)
{
	free(cl->buf);
	free(cl->argv);
	memset(cl, 0, sizeof(*cl));
}

/* Points cl->argv at the LEN bytes of NUL-terminated words in cl->buf. */
static int split_words(struct sn_cmdline *cl, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++)
		n += cl->buf[i] == '\0';
	cl->argv = calloc(n + 1, sizeof(*cl->argv));
	if (!cl->argv)
		return -1;
	for (i = 0; i < len; i += strlen(cl->buf + i) + 1)
		cl->argv[cl->argc++] = cl->buf + i;
	return 0;
}

int sn_cmdline_read(const char *path, struct sn_cmdline *cl)
{
	size_t len = 0, cap = 4096;
	ssize_t got;
	int fd;

	memset(cl, 0, sizeof(*cl));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	cl->buf = malloc(cap + 1);
	while (cl->buf) {
		if (len == cap) {
			char *bigger = cap < SN_CMDLINE_MAX ?
				       realloc(cl->buf, cap * 2 + 1) : NULL;

			if (!bigger)
				break;
			cl->buf = bigger;
			cap *= 2;
		}
		got = read(fd, cl->buf + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			close(fd);
			fd = -1;
			if (got < 0 || len == 0)
				break;
			/* The last word is NUL-terminated; be safe anyway. */
			if (cl->buf[len - 1] != '\0')
				cl->buf[len++] = '\0';
			if (split_words(cl, len) < 0)
				break;
			return 0;
		}
		len += (size_t)got;
	}
	if (fd >= 0)
		close(fd);
	sn_cmdline_free(cl);
	return -1;
}

int sn_cmdline_from(struct sn_cmdline *cl, const char *const *words, size_t n)
{
	size_t i, len = 0, used = 0;

	memset(cl, 0, sizeof(*cl));
	for (i = 0; i < n; i++)
		len += strlen(words[i]) + 1;
	cl->buf = malloc(len + 1);
	if (!cl->buf)
		return -1;
	for (i = 0; i < n; i++) {
		memcpy(cl->buf + used, words[i], strlen(words[i]) + 1);
		used += strlen(words[i]) + 1;
	}
	if (split_words(cl, len) < 0) {
		sn_cmdline_free(cl);
		return -1;
	}
	return 0;
}

/*
 * W as getopt_long matches OPTION: the whole name or an unambiguous
 * prefix of it ("--nccl-w"), and no "=VALUE".
 */
static bool is_option_word(const char *w, const char *option)
{
	size_t n = strlen(w);

	return n > 2 && w[0] == '-' && w[1] == '-' && !strchr(w, '=') &&
	       strncmp(w, option, n) == 0;
}

/*
 * Could getopt_long have read ARGV[FIRST..LAST) as options, without
 * stopping?  With "+" it stops at the first word that is not an option
 * and not the separate argument of the option before it, and after "--".
 * A necessary condition only (which options take an argument is srun's
 * business): it keeps a script's own arguments, "sbatch job.sh
 * --nccl-warmup comm", from passing for sbatch's options.
 */
static bool options_only(char *const *argv, size_t first, size_t last)
{
	const char *prev;
	size_t k;

	for (k = first; k < last; k++) {
		if (strcmp(argv[k], "--") == 0)
			return false;
		if (argv[k][0] == '-' && argv[k][1])
			continue;
		if (k == first)
			return false;
		prev = argv[k - 1];
		if (prev[0] != '-' || !prev[1] || strchr(prev, '='))
			return false;
	}
	return true;
}

/*
 * How srun, sbatch and salloc parse their command line, read in
 * SchedMD/slurm at tags slurm-22-05-8-1, slurm-24-11-5-1 and
 * slurm-26-05-3-1 (the same in all three):
 *  - getopt_long() over main()'s argv with an option string that starts
 *    with "+" (slurm_option_table_create(), src/common/slurm_opt.c), so
 *    parsing stops at the first word that is not an option: the command
 *    (srun, salloc) or the script (sbatch).  Nothing is permuted, and
 *    /proc/self/cmdline holds the same words.
 *  - SPANK callbacks run inside that loop (slurm_process_option() ->
 *    spank_process_option()), in the main pass only; the early passes
 *    skip SPANK options.  getopt_long has then moved optind past the
 *    option; a value that is optional (has_arg=2) is never taken from
 *    the next word, so argv[optind] is what follows the option.
 *  - A heterogeneous job's components: srun/salloc/sbatch parse each
 *    component with argv moved to its ":" (het_job_argv +=
 *    het_job_argc_off in srun_job.c, salloc.c, sbatch.c), so optind
 *    counts from a ":" of the full line.
 *  - #SBATCH lines are parsed by the same loop over an argv of their own
 *    ("sbatch" and the directives' words, _opt_batch_script()): optind
 *    then points into that, which the checks below almost always reject
 *    (UNKNOWN); a word left over there is refused by sbatch itself
 *    ("Invalid directive found in batch script").
 * So each place where the component could start (the beginning, each
 * ":") is tried; the answer counts only if every place that fits agrees.
 */
enum sn_next_word sn_cmdline_word_after(const struct sn_cmdline *cl,
					int optind, const char *option,
					const char **word)
{
	enum sn_next_word found = SN_NEXT_UNKNOWN, here;
	const char *seen = NULL, *next;
	size_t o, pos;

	*word = NULL;
	if (optind < 2 || !cl->argv)
		return SN_NEXT_UNKNOWN;
	for (o = 0; o < cl->argc; o++) {
		if (o > 0 && strcmp(cl->argv[o], ":") != 0)
			continue;
		pos = o + (size_t)optind - 1;
		if (pos >= cl->argc || !is_option_word(cl->argv[pos], option) ||
		    !options_only(cl->argv, o + 1, pos))
			continue;
		next = pos + 1 < cl->argc ? cl->argv[pos + 1] : NULL;
		here = SN_NEXT_WORD;
		if (!next || (next[0] == '-' && next[1]) ||
		    strcmp(next, ":") == 0) {
			here = SN_NEXT_NONE;
			next = NULL;
		}
		if (found == SN_NEXT_UNKNOWN) {
			found = here;
			seen = next;
		} else if (found != here ||
			   (next && strcmp(next, seen) != 0)) {
			return SN_NEXT_UNKNOWN;
		}
	}
	*word = seen;
	return found;
}

/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config/options.h"
#include "base/strutil.h"

#define OPT_PROFILE "--nccl-profile"
#define OPT_WARMUP "--nccl-warmup"
#define VALID_MODES SN_WARMUP_MODES

/*
 * The words of the two values: what the parsers below accept, and the one
 * source of srun --help (option_help.c) and of the lists in spank-nccl(8)
 * and docs/user-guide.md (tests/unit/test_option_docs.c compares them).
 * Modes first, in SN_WARMUP_MODES order.
 */
static const struct sn_option_word warmup_words[] = {
	{ "off", NULL, SN_WORD_MODE, SN_WARMUP_MODE_OFF,
	  "no warmup; cancels one from #SBATCH or " SN_ENV_WARMUP },
	{ "check", NULL, SN_WORD_MODE, SN_WARMUP_MODE_CHECK,
	  "GPUs only: count, CUDA contexts, duplicate PCI bus IDs" },
	{ "comm", NULL, SN_WORD_MODE, SN_WARMUP_MODE_COMM,
	  "check, then an NCCL communicator and verified collectives on each node" },
	{ "bandwidth", NULL, SN_WORD_MODE, SN_WARMUP_MODE_BANDWIDTH,
	  "comm, then a timed all-reduce against the site's bus-bandwidth floor" },
	{ "fabric", NULL, SN_WORD_MODE, SN_WARMUP_MODE_FABRIC,
	  "comm with one communicator across all the step's nodes, testing the network" },
	{ "verbose", NULL, SN_WORD_FLAG, SN_WORD_VERBOSE,
	  "print each node's summary also on success" },
	{ "fresh", NULL, SN_WORD_FLAG, SN_WORD_FRESH,
	  "warm up even if an earlier step of the job passed on the same GPUs" },
	{ "nccl=", "PATH", SN_WORD_PATH, SN_WORD_NCCL,
	  "the NCCL the job loads: libnccl.so.2 or its directory, absolute" },
};

static const struct sn_option_word profile_words[] = {
	{ "list", NULL, SN_WORD_ALONE, SN_WORD_LIST,
	  "print the site's profiles and exit" },
	{ "none", NULL, SN_WORD_ALONE, SN_WORD_NONE,
	  "no profiles, not even the site's defaults" },
};

#define N_WORDS(t) (sizeof(t) / sizeof((t)[0]))

const struct sn_option_word *sn_warmup_words(size_t *n)
{
	*n = N_WORDS(warmup_words);
	return warmup_words;
}

const struct sn_option_word *sn_profile_words(size_t *n)
{
	*n = N_WORDS(profile_words);
	return profile_words;
}

/* The entry of TABLE for WORD (ASCII case ignored), or NULL. */
static const struct sn_option_word *find_word(const struct sn_option_word *t,
					      size_t n, const char *word)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (sn_streq_nocase(word, t[i].word))
			return &t[i];
	return NULL;
}

static bool is_name_char(char c, bool first)
{
	if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return !first && (c == '.' || c == '_' || c == '-');
}

bool sn_profile_name_valid(const char *name)
{
	size_t i;

	if (!name || !is_name_char(name[0], true))
		return false;
	for (i = 1; name[i]; i++) {
		if (!is_name_char(name[i], false))
			return false;
	}
	return i < SN_PROFILE_NAME_MAX;
}

/*
 * Copies the next comma-separated element of *CURSOR into BUF, trimmed,
 * and advances *CURSOR past it.  Returns -1 if the element does not fit.
 */
static int next_element(const char **cursor, char *buf, size_t len)
{
	const char *start = *cursor;
	const char *end = strchr(start, ',');
	size_t n = end ? (size_t)(end - start) : strlen(start);

	*cursor = end ? end + 1 : NULL;
	if (n >= len) {
		/* Keep a prefix for the message, flagged as cut. */
		memcpy(buf, start, len - 1);
		buf[len - 1] = '\0';
		return -1;
	}
	memcpy(buf, start, n);
	buf[n] = '\0';
	sn_strtrim(buf);
	return 0;
}

/*
 * The list grammar shared by --nccl-profile and default_profiles=.
 * Messages are written without a subject so each caller can name itself.
 */
static int profile_list_parse(const char *value, struct sn_profile_request *req,
			      char *msg, size_t msglen)
{
	const char *cursor = value;
	char shown[SN_PROFILE_NAME_MAX + 8];
	char elem[SN_PROFILE_NAME_MAX * 2];
	const struct sn_option_word *w;
	bool names = false;
	size_t i;

	memset(req, 0, sizeof(*req));
	req->given = true;
	if (sn_option_value_absent(value)) {
		snprintf(msg, msglen, "empty value: give profile names separated by commas, \"list\" or \"none\"");
		return -1;
	}
	while (cursor) {
		if (next_element(&cursor, elem, sizeof(elem)) < 0) {
			sn_str_printable(shown, sizeof(shown), elem);
			snprintf(msg, msglen, "profile name \"%s\" is too long: at most %d characters",
				 shown, SN_PROFILE_NAME_MAX - 1);
			return -1;
		}
		sn_str_printable(shown, sizeof(shown), elem);
		if (!*elem) {
			snprintf(msg, msglen, "empty profile name in the list: separate names with single commas, e.g. a,b");
			return -1;
		}
		w = find_word(profile_words, N_WORDS(profile_words), elem);
		/* Exact case: "List" stays a (valid) profile name. */
		if (w && strcmp(elem, w->word) == 0) {
			bool *flag = w->id == SN_WORD_LIST ? &req->list : &req->none;

			if (names || req->list || req->none) {
				snprintf(msg, msglen, "\"%s\" must be given alone, not combined with other names",
					 elem);
				return -1;
			}
			*flag = true;
			continue;
		}
		if (req->list || req->none) {
			snprintf(msg, msglen, "\"%s\" must be given alone, not combined with other names",
				 req->list ? "list" : "none");
			return -1;
		}
		if (strlen(elem) >= SN_PROFILE_NAME_MAX) {
			snprintf(msg, msglen, "profile name \"%s\" is too long: at most %d characters",
				 shown, SN_PROFILE_NAME_MAX - 1);
			return -1;
		}
		if (!sn_profile_name_valid(elem)) {
			snprintf(msg, msglen, "invalid profile name \"%s\": use letters, digits, '.', '_' and '-', starting with a letter or digit",
				 shown);
			return -1;
		}
		for (i = 0; i < req->count; i++) {
			if (strcmp(req->names[i], elem) == 0) {
				snprintf(msg, msglen, "profile \"%s\" is given twice: name each profile once",
					 elem);
				return -1;
			}
		}
		if (req->count == SN_PROFILE_REQUEST_MAX) {
			snprintf(msg, msglen, "too many profiles: at most %d",
				 SN_PROFILE_REQUEST_MAX);
			return -1;
		}
		sn_strlcpy(req->names[req->count++], elem, SN_PROFILE_NAME_MAX);
		names = true;
	}
	return 0;
}

/*
 * How Slurm hands over an option given without a value (has_arg=2, as
 * --nccl-warmup), read in SchedMD/slurm at tags slurm-22-05-8-1,
 * slurm-24-11-7-1 and slurm-26-05-3-1 (src/common/plugstack.c up to 22.05,
 * src/common/spank.c since 23.02; identical in all three):
 *  - srun/sbatch/salloc's own command line: the callback gets NULL.
 *  - _option_setenv() then exports _SLURM_SPANK_OPTION_<plugin>_<opt>
 *    with "" for NULL (the batch step's and a step's slurmstepd call the
 *    callback with that "", remote=1), and passes the NULL on to
 *    spank_set_job_env(), whose xstrcat() writes "(null)" for a NULL
 *    string (src/common/xstring.c, _xstrcat()).  sbatch/salloc export it
 *    as SLURM_SPANK__SLURM_SPANK_OPTION_<plugin>_<opt>=(null) in the job.
 *  - An srun/sbatch/salloc inside that job reads it back in
 *    spank_process_env_options() and calls the callback with the text
 *    "(null)" (remote=0); a refusal there makes it print "Invalid argument
 *    ((null)) for environment variable" and exit, before its own options.
 * So NULL, "" and "(null)" all mean "no value".
 */
bool sn_option_value_absent(const char *value)
{
	return !value || !*value || strcmp(value, "(null)") == 0;
}

int sn_profile_option_parse(const char *value, struct sn_profile_request *req,
			    struct sn_error *err)
{
	char msg[SN_ERROR_MAX - sizeof(OPT_PROFILE ": ")];

	if (profile_list_parse(value, req, msg, sizeof(msg)) == 0)
		return 0;
	memset(req, 0, sizeof(*req));
	sn_error_set(err, OPT_PROFILE ": %s", msg);
	return -1;
}

int sn_profile_list_parse_for(const char *value, struct sn_profile_request *req,
			      const char *subject, struct sn_error *err)
{
	char msg[SN_ERROR_MAX];

	if (profile_list_parse(value, req, msg, sizeof(msg)) == 0)
		return 0;
	memset(req, 0, sizeof(*req));
	sn_error_set(err, "%s: %s", subject, msg);
	return -1;
}

/* The PATH word ("nccl=") that CURSOR starts with, or NULL. */
static const struct sn_option_word *path_word(const char *cursor)
{
	size_t i;

	for (i = 0; i < N_WORDS(warmup_words); i++)
		if (warmup_words[i].kind == SN_WORD_PATH &&
		    strncasecmp(cursor, warmup_words[i].word,
				strlen(warmup_words[i].word)) == 0)
			return &warmup_words[i];
	return NULL;
}

/*
 * "nccl=PATH" (the rest of the value up to the next comma): the NCCL the
 * step's warmup loads when the job does not preload one (nccl-warmup
 * --nccl).  Absolute, since nccl-warmup runs in the job's directory.
 */
static int nccl_word(const char **cursor, struct sn_warmup_request *out,
		     struct sn_error *err)
{
	const char *path = *cursor + 5;
	size_t n = strcspn(path, ",");

	*cursor = path[n] ? path + n + 1 : NULL;
	if (n == 0 || path[0] != '/' || n >= sizeof(out->nccl)) {
		sn_error_set(err, OPT_WARMUP ": nccl= needs the absolute path of libnccl.so.2 or of its directory (at most %zu characters, no commas), e.g. nccl=$VIRTUAL_ENV/lib/python3.12/site-packages/nvidia/nccl/lib",
			     sizeof(out->nccl) - 1);
		return -1;
	}
	memcpy(out->nccl, path, n);
	out->nccl[n] = '\0';
	if (sn_str_has_control(out->nccl)) {
		sn_error_set(err, OPT_WARMUP ": nccl= path contains control characters");
		return -1;
	}
	return 0;
}

int sn_warmup_option_parse(const char *value, struct sn_warmup_request *req,
			   struct sn_error *err)
{
	const struct sn_option_word *w;
	const char *cursor = value;
	char shown[40];
	char elem[64];
	struct sn_warmup_request out = { .given = true };

	memset(req, 0, sizeof(*req));
	if (sn_option_value_absent(value)) {
		*req = out;	/* bare --nccl-warmup: the site's mode */
		return 0;
	}
	while (cursor && *value) {
		int fits;

		if (path_word(cursor)) {
			if (nccl_word(&cursor, &out, err) < 0)
				return -1;
			continue;
		}
		fits = next_element(&cursor, elem, sizeof(elem));

		sn_str_printable(shown, sizeof(shown), elem);
		if (fits == 0 && !*elem) {
			sn_str_printable(shown, sizeof(shown), value);
			sn_error_set(err, OPT_WARMUP ": empty word in \"%s\": give MODE[,verbose][,fresh] with MODE one of " VALID_MODES,
				     shown);
			return -1;
		}
		w = fits == 0 ? find_word(warmup_words, N_WORDS(warmup_words),
					  elem) : NULL;
		if (!w || w->kind == SN_WORD_PATH) {
			sn_error_set(err, OPT_WARMUP ": unknown word \"%s\": use one of " VALID_MODES ", optionally followed by \",verbose\" and/or \",fresh\"",
				     shown);
			return -1;
		}
		if (w->id == SN_WORD_VERBOSE) {
			out.verbose = true;
			continue;
		}
		if (w->id == SN_WORD_FRESH) {
			out.fresh = true;
			continue;
		}
		if (out.mode != SN_WARMUP_MODE_UNSET &&
		    out.mode != (enum sn_warmup_mode)w->id) {
			sn_error_set(err, OPT_WARMUP ": two modes, \"%s\" and \"%s\": give one of " VALID_MODES,
				     sn_warmup_mode_name(out.mode), w->word);
			return -1;
		}
		out.mode = (enum sn_warmup_mode)w->id;
	}
	*req = out;
	return 0;
}

const char *sn_warmup_mode_name(enum sn_warmup_mode mode)
{
	size_t i;

	if (mode == SN_WARMUP_MODE_UNSET)
		return "default";
	for (i = 0; i < N_WORDS(warmup_words); i++)
		if (warmup_words[i].kind == SN_WORD_MODE &&
		    warmup_words[i].id == (int)mode)
			return warmup_words[i].word;
	return "unknown";
}

enum sn_warmup_mode sn_warmup_mode_from_name(const char *word)
{
	const struct sn_option_word *w;

	if (!word)
		return SN_WARMUP_MODE_UNSET;
	w = find_word(warmup_words, N_WORDS(warmup_words), word);
	if (!w || w->kind != SN_WORD_MODE)
		return SN_WARMUP_MODE_UNSET;
	return (enum sn_warmup_mode)w->id;
}

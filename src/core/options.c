/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "options.h"
#include "strutil.h"

#define OPT_PROFILE "--nccl-profile"
#define OPT_WARMUP "--nccl-warmup"
#define VALID_MODES SN_WARMUP_MODES

static const char *const mode_names[] = {
	[SN_WARMUP_MODE_UNSET] = "default",
	[SN_WARMUP_MODE_OFF] = "off",
	[SN_WARMUP_MODE_CHECK] = "check",
	[SN_WARMUP_MODE_COMM] = "comm",
	[SN_WARMUP_MODE_BANDWIDTH] = "bandwidth",
	[SN_WARMUP_MODE_FABRIC] = "fabric",
};

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
		if (strcmp(elem, "list") == 0 || strcmp(elem, "none") == 0) {
			bool *flag = elem[0] == 'l' ? &req->list : &req->none;

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
	const char *cursor = value;
	char shown[40];
	char elem[64];
	enum sn_warmup_mode mode;
	struct sn_warmup_request out = { .given = true };

	memset(req, 0, sizeof(*req));
	if (sn_option_value_absent(value)) {
		*req = out;	/* bare --nccl-warmup: the site's mode */
		return 0;
	}
	while (cursor && *value) {
		int fits;

		if (strncasecmp(cursor, "nccl=", 5) == 0) {
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
		if (fits == 0 && sn_streq_nocase(elem, "verbose")) {
			out.verbose = true;
			continue;
		}
		if (fits == 0 && sn_streq_nocase(elem, "fresh")) {
			out.fresh = true;
			continue;
		}
		mode = fits == 0 ? sn_warmup_mode_from_name(elem)
				 : SN_WARMUP_MODE_UNSET;
		if (mode == SN_WARMUP_MODE_UNSET) {
			sn_error_set(err, OPT_WARMUP ": unknown word \"%s\": use one of " VALID_MODES ", optionally followed by \",verbose\" and/or \",fresh\"",
				     shown);
			return -1;
		}
		if (out.mode != SN_WARMUP_MODE_UNSET && out.mode != mode) {
			sn_error_set(err, OPT_WARMUP ": two modes, \"%s\" and \"%s\": give one of " VALID_MODES,
				     mode_names[out.mode], mode_names[mode]);
			return -1;
		}
		out.mode = mode;
	}
	*req = out;
	return 0;
}

const char *sn_warmup_mode_name(enum sn_warmup_mode mode)
{
	if ((size_t)mode >= sizeof(mode_names) / sizeof(mode_names[0]))
		return "unknown";
	return mode_names[mode];
}

enum sn_warmup_mode sn_warmup_mode_from_name(const char *word)
{
	size_t i;

	if (!word)
		return SN_WARMUP_MODE_UNSET;
	for (i = SN_WARMUP_MODE_OFF;
	     i < sizeof(mode_names) / sizeof(mode_names[0]); i++) {
		if (sn_streq_nocase(word, mode_names[i]))
			return (enum sn_warmup_mode)i;
	}
	return SN_WARMUP_MODE_UNSET;
}

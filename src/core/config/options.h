/* SPDX-License-Identifier: MIT */
/*
 * Parsing of the two user-facing option values, shared by the command-line
 * callbacks and the SPANK_NCCL_* environment-variable forms:
 *
 *   --nccl-profile=NAME[,NAME...] | list | none
 *   --nccl-warmup[=MODE[,verbose][,fresh][,nccl=PATH]]
 *                     MODE: off | check | comm | bandwidth | fabric
 *
 * The words are a table (options.c), which also gives srun --help its
 * text (option_help.c) and which the unit tests compare with the man
 * page and the user guide.
 */
#ifndef SN_OPTIONS_H
#define SN_OPTIONS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define SN_PROFILE_NAME_MAX 64
#define SN_PROFILE_REQUEST_MAX 32

/* Environment-variable forms of the options (the command line wins). */
#define SN_ENV_PROFILE "SPANK_NCCL_PROFILE"
#define SN_ENV_WARMUP "SPANK_NCCL_WARMUP"
/* Every warmup mode, for messages (the names of sn_warmup_mode_name). */
#define SN_WARMUP_MODES "off, check, comm, bandwidth, fabric"

struct sn_profile_request {
	bool given;		/* option or env var was present */
	bool list;		/* "list": print profiles and exit */
	bool none;		/* "none": no profiles, not even site defaults */
	size_t count;
	char names[SN_PROFILE_REQUEST_MAX][SN_PROFILE_NAME_MAX];
};

enum sn_warmup_mode {
	SN_WARMUP_MODE_UNSET = 0,	/* use the site default mode */
	SN_WARMUP_MODE_OFF,
	SN_WARMUP_MODE_CHECK,
	SN_WARMUP_MODE_COMM,
	SN_WARMUP_MODE_BANDWIDTH,
	SN_WARMUP_MODE_FABRIC,	/* comm over every node of the step */
};

/* What a word of an option's value is (the parsers' table, options.c). */
enum sn_word_kind {
	SN_WORD_MODE,		/* a warmup mode: at most one per value */
	SN_WORD_FLAG,		/* ",verbose", ",fresh" */
	SN_WORD_PATH,		/* "nccl=PATH": the rest up to the next comma */
	SN_WORD_ALONE,		/* --nccl-profile's "list" and "none" */
};

/* The id of a word that is not a mode (a mode's id is its enum value). */
enum {
	SN_WORD_VERBOSE = 100,
	SN_WORD_FRESH,
	SN_WORD_NCCL,
	SN_WORD_LIST,
	SN_WORD_NONE,
};

struct sn_option_word {
	const char *word;	/* as typed; a PATH word ends in '=' */
	const char *arg;	/* what a PATH word takes ("PATH"), else NULL */
	enum sn_word_kind kind;
	int id;			/* enum sn_warmup_mode or SN_WORD_* */
	const char *help;	/* one phrase, for srun --help */
};

/* The words of each value, in the order help and documentation list them. */
const struct sn_option_word *sn_warmup_words(size_t *n);
const struct sn_option_word *sn_profile_words(size_t *n);

struct sn_warmup_request {
	bool given;
	enum sn_warmup_mode mode;	/* UNSET when given without a mode */
	bool verbose;
	bool fresh;	/* never reuse an earlier pass of the same job */
	char nccl[PATH_MAX];	/* nccl=PATH: the step's NCCL, "" if none */
};

/*
 * True for every way Slurm encodes "option given without a value": NULL,
 * "" and the literal "(null)" (see options.c for where each comes from).
 */
bool sn_option_value_absent(const char *value);

/* True if NAME is a valid profile name: [A-Za-z0-9][A-Za-z0-9._-]*, < 64. */
bool sn_profile_name_valid(const char *name);

int sn_profile_option_parse(const char *value, struct sn_profile_request *req,
			    struct sn_error *err);

/*
 * The same grammar for another source of profile names (plugstack.conf's
 * default_profiles=): errors begin with SUBJECT instead of the option.
 */
int sn_profile_list_parse_for(const char *value, struct sn_profile_request *req,
			      const char *subject, struct sn_error *err);

/* VALUE may be NULL, "" or "(null)": bare --nccl-warmup. */
int sn_warmup_option_parse(const char *value, struct sn_warmup_request *req,
			   struct sn_error *err);

const char *sn_warmup_mode_name(enum sn_warmup_mode mode);

/*
 * option_help.c, from the table above: the value's synopsis,
 * "MODE[,verbose][,fresh][,nccl=PATH]", and the --help text of each
 * option, naming the site's defaults.  -1 if BUF is too small (Slurm
 * prints at most 4095 characters of a usage text).
 */
int sn_warmup_value_synopsis(char *buf, size_t len);
int sn_warmup_usage(char *buf, size_t len, enum sn_warmup_mode site_mode);
int sn_profile_usage(char *buf, size_t len,
		     const struct sn_profile_request *site_defaults);
/* Returns SN_WARMUP_MODE_UNSET for an unknown word. */
enum sn_warmup_mode sn_warmup_mode_from_name(const char *word);

#endif

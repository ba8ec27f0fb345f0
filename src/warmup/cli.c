/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "warmup.h"

#define WU_DEFAULT_TIMEOUT_S 60.0
#define WU_MAX_TIMEOUT_S 3600.0
#define WU_DEFAULT_BYTES (64ULL << 20)
#define WU_MAX_BYTES (16ULL << 30)

const char *wu_mode_name(enum wu_mode mode)
{
	switch (mode) {
	case WU_MODE_CHECK: return "check";
	case WU_MODE_COMM: return "comm";
	case WU_MODE_BANDWIDTH: return "bandwidth";
	}
	return "?";
}

void wu_cli_usage(void)
{
	fputs("Usage: nccl-warmup [--mode check|comm|bandwidth] [--timeout SECONDS]\n"
	      "                   [--bytes N[K|M|G]] [--min-busbw GBPS] [--json]\n"
	      "                   [--teardown clean|exit] [--quiet] [--node NAME]\n"
	      "                   [--nccl FILE|DIR] [--nccl-default FILE|DIR]\n"
	      "                   [--help] [--version]\n"
	      "\n"
	      "Checks the GPUs this process can see and that NCCL can build a\n"
	      "communicator over them.  Exit status 0 when ready; see nccl-warmup(1).\n"
	      "\n"
	      "  --mode check       enumerate GPUs, check for duplicate PCI bus IDs\n"
	      "  --mode comm        also init one NCCL communicator and verify an\n"
	      "                     all-reduce (default)\n"
	      "  --mode bandwidth   also time an all-reduce of --bytes (default 64M)\n"
	      "  --timeout SECONDS  overall deadline, 0 < SECONDS <= 3600 (default 60)\n"
	      "  --min-busbw GBPS   fail (exit 7) below this bus bandwidth\n"
	      "  --json             print one JSON object on stdout\n"
	      "  --teardown clean   destroy the communicators and free memory before\n"
	      "                     exiting (default)\n"
	      "  --teardown exit    leave that to process exit (faster)\n"
	      "  --quiet            no summary line on success\n"
	      "  --node NAME        node name for messages (default: hostname)\n"
	      "  --nccl FILE|DIR    the NCCL the step named (after one in LD_PRELOAD)\n"
	      "  --nccl-default FILE|DIR\n"
	      "                     the site's NCCL, after LD_LIBRARY_PATH; then the\n"
	      "                     system's libnccl.so.2 (see nccl-warmup(1))\n",
	      stdout);
}

static int parse_mode(const char *v, struct wu_options *opt, char *err,
		      size_t len)
{
	if (strcmp(v, "check") == 0)
		opt->mode = WU_MODE_CHECK;
	else if (strcmp(v, "comm") == 0)
		opt->mode = WU_MODE_COMM;
	else if (strcmp(v, "bandwidth") == 0)
		opt->mode = WU_MODE_BANDWIDTH;
	else {
		snprintf(err, len,
			 "invalid --mode '%s': use check, comm or bandwidth", v);
		return -1;
	}
	return 0;
}

/* A finite decimal number in [MIN, MAX]; MIN_OPEN excludes MIN itself. */
static int parse_real(const char *opt_name, const char *v, double min,
		      bool min_open, double max, double *out, char *err,
		      size_t len)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (!*v || isspace((unsigned char)*v) || *end || errno ||
	    !isfinite(d) || d < min || (min_open && d == min) || d > max) {
		snprintf(err, len,
			 "invalid %s '%s': give a number %s %g and <= %g",
			 opt_name, v, min_open ? ">" : ">=", min, max);
		return -1;
	}
	*out = d;
	return 0;
}

static int parse_bytes(const char *v, unsigned long long *out, char *err,
		       size_t len)
{
	unsigned long long n, mult = 1;
	char *end;

	errno = 0;
	if (!isdigit((unsigned char)*v))
		goto bad;
	n = strtoull(v, &end, 10);
	if (errno)
		goto bad;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': mult = 1ULL << 10; end++; break;
	case 'm': case 'M': mult = 1ULL << 20; end++; break;
	case 'g': case 'G': mult = 1ULL << 30; end++; break;
	default: goto bad;
	}
	if (*end || n > WU_MAX_BYTES / mult || n * mult < 4)
		goto bad;
	*out = n * mult;
	return 0;
bad:
	snprintf(err, len,
		 "invalid --bytes '%s': give N, NK, NM or NG (binary units), from 4 bytes to 16G",
		 v);
	return -1;
}

static int parse_node(const char *v, struct wu_options *opt, char *err,
		      size_t len)
{
	size_t n = strlen(v);

	for (size_t i = 0; i < n; i++) {
		if (!isalnum((unsigned char)v[i]) && !strchr("._-", v[i]))
			n = 0;
	}
	if (n == 0 || n > WU_NODE_MAX) {
		snprintf(err, len,
			 "invalid --node '%.80s': 1-%d characters of A-Z a-z 0-9 . _ -",
			 v, WU_NODE_MAX);
		return -1;
	}
	memcpy(opt->node, v, n + 1);
	return 0;
}

static void default_node(struct wu_options *opt)
{
	char host[256] = "";

	if (gethostname(host, sizeof(host) - 1) != 0 || !host[0])
		strcpy(host, "unknown");
	host[WU_NODE_MAX] = '\0';
	snprintf(opt->node, sizeof(opt->node), "%s", host);
}

static int parse_teardown(const char *v, struct wu_options *opt, char *err,
			  size_t err_len)
{
	if (strcmp(v, "clean") == 0 || strcmp(v, "exit") == 0) {
		opt->teardown_exit = v[0] == 'e';
		return 0;
	}
	snprintf(err, err_len,
		 "invalid --teardown '%.40s': give clean or exit", v);
	return -1;
}

/* An absolute path: the helper runs with the job's working directory. */
static int parse_nccl_path(const char *name, const char *v, char *out,
			   size_t out_len, char *err, size_t err_len)
{
	if (v[0] == '/' && strlen(v) < out_len) {
		snprintf(out, out_len, "%s", v);
		return 0;
	}
	snprintf(err, err_len,
		 "invalid %s '%.80s': give the absolute path of libnccl.so.2 or of its directory",
		 name, v);
	return -1;
}

/* Options that take a value accept "--opt VALUE" and "--opt=VALUE". */
static const char *const value_opts[] = {
	"--mode", "--timeout", "--bytes", "--min-busbw", "--node", "--teardown",
	"--nccl", "--nccl-default", NULL,
};

enum wu_cli_result wu_cli_parse(int argc, char **argv,
				struct wu_options *opt, char *err,
				size_t err_len)
{
	memset(opt, 0, sizeof(*opt));
	default_node(opt);
	opt->mode = WU_MODE_COMM;
	opt->timeout_s = WU_DEFAULT_TIMEOUT_S;
	opt->bytes = WU_DEFAULT_BYTES;
	err[0] = '\0';

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *value = NULL;
		char name[32];
		int rc = 0;

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			wu_cli_usage();
			return WU_CLI_EXIT_OK;
		}
		if (strcmp(arg, "--version") == 0) {
			printf("nccl-warmup (spank-nccl) %s\n", WU_VERSION);
			return WU_CLI_EXIT_OK;
		}
		if (strcmp(arg, "--json") == 0) {
			opt->json = true;
			continue;
		}
		if (strcmp(arg, "--quiet") == 0) {
			opt->quiet = true;
			continue;
		}
		snprintf(name, sizeof(name), "%.*s",
			 (int)strcspn(arg, "="), arg);
		for (int k = 0; value_opts[k]; k++) {
			if (strcmp(name, value_opts[k]) != 0)
				continue;
			if (arg[strlen(name)] == '=')
				value = arg + strlen(name) + 1;
			else if (i + 1 < argc)
				value = argv[++i];
			else {
				snprintf(err, err_len, "%s needs a value", name);
				return WU_CLI_USAGE;
			}
		}
		if (!value) {
			snprintf(err, err_len,
				 "unknown argument '%.80s' (see nccl-warmup --help)",
				 arg);
			return WU_CLI_USAGE;
		}
		if (strcmp(name, "--mode") == 0)
			rc = parse_mode(value, opt, err, err_len);
		else if (strcmp(name, "--timeout") == 0)
			rc = parse_real("--timeout", value, 0, true,
					WU_MAX_TIMEOUT_S, &opt->timeout_s,
					err, err_len);
		else if (strcmp(name, "--bytes") == 0)
			rc = parse_bytes(value, &opt->bytes, err, err_len);
		else if (strcmp(name, "--min-busbw") == 0)
			rc = parse_real("--min-busbw", value, 0, false, 1e6,
					&opt->min_busbw_gbps, err, err_len);
		else if (strcmp(name, "--node") == 0)
			rc = parse_node(value, opt, err, err_len);
		else if (strcmp(name, "--teardown") == 0)
			rc = parse_teardown(value, opt, err, err_len);
		else if (strcmp(name, "--nccl") == 0)
			rc = parse_nccl_path(name, value, opt->nccl_user,
					     sizeof(opt->nccl_user), err,
					     err_len);
		else if (strcmp(name, "--nccl-default") == 0)
			rc = parse_nccl_path(name, value, opt->nccl_admin,
					     sizeof(opt->nccl_admin), err,
					     err_len);
		if (rc)
			return WU_CLI_USAGE;
	}
	return WU_CLI_RUN;
}

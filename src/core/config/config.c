/* SPDX-License-Identifier: MIT */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "config/node_path.h"
#include "protocol/helper_protocol.h"
#include "base/strutil.h"

#define STR_(x) #x
#define STR(x) STR_(x)
/* A row's field: where it is, how long. */
#define FIELD(f) offsetof(struct sn_config, f), \
	sizeof(((struct sn_config *)0)->f)

/* Every message names the whole argument as written in plugstack.conf. */
#define ARG_ERROR(err, arg, ...) do { \
	char shown_[256]; \
	sn_str_printable(shown_, sizeof(shown_), (arg)); \
	char detail_[512]; \
	snprintf(detail_, sizeof(detail_), __VA_ARGS__); \
	sn_error_set((err), "plugstack.conf argument \"%s\": %s", shown_, \
		     detail_); \
} while (0)

#define KEY_ARGS const struct sn_config_key *key, struct sn_config *cfg, \
	const char *value, const char *arg, struct sn_error *err
/* The field of KEY's row in CFG. */
#define AT(cfg, key) ((char *)(cfg) + (key)->off)

static int parse_abs_path(char *dst, size_t len, const char *value,
			  const char *arg, struct sn_error *err)
{
	if (value[0] != '/') {
		ARG_ERROR(err, arg, "expected an absolute path (starting with '/')");
		return -1;
	}
	if (sn_str_has_control(value)) {
		ARG_ERROR(err, arg, "the path contains control characters");
		return -1;
	}
	if (sn_strlcpy(dst, value, len) < 0) {
		ARG_ERROR(err, arg, "the path is too long (at most %zu bytes)",
			  len - 1);
		return -1;
	}
	return 0;
}

/* The shared setters: each writes its row's field (FIELD). */

static int set_path(KEY_ARGS)
{
	return parse_abs_path(AT(cfg, key), key->len, value, arg, err);
}

/*
 * Fleet record sinks (record.h, prom.h): admin paths, never the user's;
 * "%n" is the node name (one file or directory per node on a shared file
 * system, as slurm.conf's SlurmdLogFile=%n).
 */
static int set_sink_path(KEY_ARGS)
{
	if (!sn_record_path_valid(value)) {
		ARG_ERROR(err, arg, "only %%n (the node name) and %%%% may follow a '%%'");
		return -1;
	}
	return set_path(key, cfg, value, arg, err);
}

static int set_yes_no(KEY_ARGS)
{
	bool *field = (bool *)AT(cfg, key);

	if (sn_streq_nocase(value, "yes")) {
		*field = true;
	} else if (sn_streq_nocase(value, "no")) {
		*field = false;
	} else {
		ARG_ERROR(err, arg, "expected yes or no");
		return -1;
	}
	return 0;
}

static int set_gbps(KEY_ARGS)
{
	if (sn_parse_busbw(value, (double *)AT(cfg, key)) < 0) {
		ARG_ERROR(err, arg, "expected a bus bandwidth in GB/s between 0 and %.0f, e.g. 100 or 37.5 (0: no floor)",
			  SN_WARMUP_BUSBW_MAX);
		return -1;
	}
	return 0;
}

static int set_ports(KEY_ARGS)
{
	struct sn_error why;

	if (sn_port_range_parse(value, (struct sn_port_range *)AT(cfg, key),
				&why) < 0) {
		ARG_ERROR(err, arg, "%s, e.g. %s=%s", why.msg, key->name,
			  key->def);
		return -1;
	}
	return 0;
}

/* The setters of one key each. */

static int set_default_profiles(KEY_ARGS)
{
	char shown[256];
	char subject[320];

	(void)key;
	sn_str_printable(shown, sizeof(shown), arg);
	snprintf(subject, sizeof(subject), "plugstack.conf argument \"%s\"",
		 shown);
	if (sn_profile_list_parse_for(value, &cfg->default_profiles, subject,
				      err) < 0)
		return -1;
	if (cfg->default_profiles.list) {
		memset(&cfg->default_profiles, 0, sizeof(cfg->default_profiles));
		ARG_ERROR(err, arg, "\"list\" is a user request, not a profile: name the profiles every step gets, or \"none\"");
		return -1;
	}
	return 0;
}

static int set_timeout(KEY_ARGS)
{
	(void)key;
	if (sn_parse_timeout_s(value, &cfg->warmup_timeout_s) < 0) {
		ARG_ERROR(err, arg, "expected whole seconds between 1 and %d",
			  SN_WARMUP_TIMEOUT_MAX_S);
		return -1;
	}
	return 0;
}

static int set_mode(KEY_ARGS)
{
	enum sn_warmup_mode mode = sn_warmup_mode_from_name(value);

	(void)key;
	if (mode == SN_WARMUP_MODE_UNSET) {
		ARG_ERROR(err, arg, "expected one of " SN_WARMUP_MODES);
		return -1;
	}
	cfg->warmup_mode = mode;
	return 0;
}

static int set_policy(KEY_ARGS)
{
	(void)key;
	if (sn_streq_nocase(value, "fail")) {
		cfg->warmup_policy = SN_POLICY_FAIL;
	} else if (sn_streq_nocase(value, "warn")) {
		cfg->warmup_policy = SN_POLICY_WARN;
	} else {
		ARG_ERROR(err, arg, "expected fail (refuse the step) or warn (print and run it)");
		return -1;
	}
	return 0;
}

static int set_bytes(KEY_ARGS)
{
	unsigned long long v;

	(void)key;
	if (sn_parse_bytes(value, &v) < 0) {
		ARG_ERROR(err, arg, "expected a size from 1K to 16G: a whole number with an optional K, M or G suffix, e.g. 64M");
		return -1;
	}
	cfg->warmup_bytes = (unsigned long)v;
	return 0;
}

static int set_teardown(KEY_ARGS)
{
	(void)key;
	if (sn_parse_teardown(value, &cfg->warmup_teardown_exit) < 0) {
		ARG_ERROR(err, arg, "expected exit (let process exit release the GPUs) or clean (destroy and free first)");
		return -1;
	}
	return 0;
}

static int set_reuse_dir(KEY_ARGS)
{
	/* Record names are appended: leave room for "/job-N/<hash>". */
	return parse_abs_path(AT(cfg, key), key->len - 64, value, arg, err);
}

static int set_transport(KEY_ARGS)
{
	(void)key;
	if (sn_parse_fabric_transport(value, &cfg->fabric_refuse_socket) < 0) {
		ARG_ERROR(err, arg, "expected any (every network NCCL picks passes) or no-socket (NCCL's TCP socket transport between nodes fails the fabric warmup: for sites with InfiniBand, RoCE or a net plugin)");
		return -1;
	}
	return 0;
}

static int set_fabric_auth(KEY_ARGS)
{
	(void)key;
	if (sn_auth_choice_parse(value, &cfg->fabric_auth) < 0) {
		ARG_ERROR(err, arg, "expected auto (from slurm.conf's AuthType), munge or key (a key derived from slurm.key or fabric_key=)");
		return -1;
	}
	return 0;
}

static int set_ras(KEY_ARGS)
{
	(void)key;
	if (sn_ras_policy_parse(value, &cfg->ras) < 0) {
		ARG_ERROR(err, arg, "expected step (each step's NCCL RAS on its own port), off (NCCL_RAS_ENABLE=0) or nccl (NCCL's defaults)");
		return -1;
	}
	return 0;
}

static int set_ras_sample(KEY_ARGS)
{
	unsigned long long v;

	(void)key;
	if (strcasecmp(value, "off") == 0) {
		cfg->ras_sample_s = 0;
		return 0;
	}
	if (sn_parse_u64(value, SN_RAS_SAMPLE_MAX_S, &v) < 0 || v < 1) {
		ARG_ERROR(err, arg, "expected whole seconds between 1 and %d, or off",
			  SN_RAS_SAMPLE_MAX_S);
		return -1;
	}
	cfg->ras_sample_s = (unsigned int)v;
	return 0;
}

static int set_health(KEY_ARGS)
{
	struct sn_error why;

	(void)key;
	if (sn_health_policy_parse(value, &cfg->health, &why) < 0) {
		ARG_ERROR(err, arg, "%s", why.msg);
		return -1;
	}
	cfg->health_given = true;
	return 0;
}

static int set_health_busy(KEY_ARGS)
{
	if (sn_health_parse_busy_mib(value, &cfg->health.busy_mib) < 0) {
		ARG_ERROR(err, arg, "expected whole MiB from 0 to %llu (memory other processes may hold on a GPU before the busy check counts it), e.g. health_busy_mib=%s",
			  SN_HEALTH_BUSY_MIB_MAX, key->def);
		return -1;
	}
	cfg->health_given = true;
	return 0;
}

/*
 * The keys.  A new key: its field in struct sn_config, a row here (most
 * take a shared setter: set_path, set_sink_path, set_yes_no, set_gbps,
 * set_ports); the build writes the docs' key lists from this table.
 */
static const struct sn_config_key keys[] = {
	{ "profiles", "PATH", "SYSCONFDIR/nccl-profiles.conf",
	  "The profile file, an absolute path; it must be owned by root and not writable by group or others.",
	  set_path, FIELD(profiles_path) },
	{ "default_profiles", "NAME[,NAME...]", NULL,
	  "Profiles applied to every step, before the requested ones; a user opts out with `--nccl-profile=none`. "
	  "If they cannot be applied, a step that asked for no profile runs without them, with one warning.",
	  set_default_profiles, FIELD(default_profiles) },
	{ "warmup_helper", "PATH", "LIBEXECDIR/nccl-warmup",
	  "The nccl-warmup(8) binary, an absolute path; never taken from the user.",
	  set_path, FIELD(warmup_helper) },
	{ "warmup_timeout", "SECONDS", STR(SN_WARMUP_TIMEOUT_DEFAULT_S),
	  "Deadline of one warmup, 1 to " STR(SN_WARMUP_TIMEOUT_MAX_S) " (srun abandons a launch after 600 s).",
	  set_timeout, FIELD(warmup_timeout_s) },
	{ "warmup_mode", "MODE", "comm",
	  "Mode of a bare `--nccl-warmup`: " SN_WARMUP_MODES ".",
	  set_mode, FIELD(warmup_mode) },
	{ "warmup_policy", "fail|warn", "fail",
	  "`fail`: a failed warmup fails the step's tasks; `warn`: the failure is printed and the step runs.",
	  set_policy, FIELD(warmup_policy) },
	{ "warmup_min_busbw", "GBPS", "0",
	  "Bus bandwidth floor of `--nccl-warmup=bandwidth`, in GB/s (0: no floor).",
	  set_gbps, FIELD(warmup_min_busbw_gbps) },
	{ "warmup_bytes", "N[K|M|G]", "64M",
	  "All-reduce size of `--nccl-warmup=bandwidth` (and of the fabric floor), 1K to 16G.",
	  set_bytes, FIELD(warmup_bytes) },
	{ "warmup_teardown", "exit|clean", "exit",
	  "`exit`: the helper exits right after its verdict and process exit releases the GPUs before the tasks start (0.43 s faster on 4xH200); "
	  "`clean`: ncclCommDestroy and cudaFree first.",
	  set_teardown, FIELD(warmup_teardown_exit) },
	{ "warmup_reuse", "yes|no", "yes",
	  "`yes`: a step reuses a warmup that passed earlier in the same job on the same node, GPUs, NCCL library and NCCL_* settings (users force a new one with `--nccl-warmup=MODE,fresh`); "
	  "`no`: every step warms up.",
	  set_yes_no, FIELD(warmup_reuse) },
	{ "warmup_reuse_dir", "PATH", "/run/spank-nccl",
	  "Where slurmstepd, as root, keeps the records of passed warmups: one root-only directory per job, removed when the job ends. "
	  "Keep it on a tmpfs, so that no record survives a reboot.",
	  set_reuse_dir, FIELD(warmup_reuse_dir) },
	{ "warmup_nccl", "PATH", NULL,
	  "The site's NCCL (libnccl.so.2 or its directory), warmed when the job neither preloads one, names one (`nccl=`) nor has one in its LD_LIBRARY_PATH; "
	  "none: the system's libnccl.so.2.",
	  set_path, FIELD(warmup_nccl) },
	{ "record_file", "PATH", NULL,
	  "One JSON line per warmup (pass or fail), appended by slurmstepd as root; `%n` is the node name. "
	  "Read it with spank-nccl-report(8).",
	  set_sink_path, FIELD(record_file) },
	{ "record_syslog", "yes|no", "no",
	  "The same record to syslog (daemon.info, ident spank-nccl), as @cee: JSON in parts under 1 KiB.",
	  set_yes_no, FIELD(record_syslog) },
	{ "prom_dir", "DIR", NULL,
	  "Keeps DIR/spank_nccl.prom for node_exporter's textfile collector; `%n` is the node name.",
	  set_sink_path, FIELD(prom_dir) },
	{ "fabric_ports", "LO-HI", STR(SN_FABRIC_PORT_LO_DEFAULT) "-" STR(SN_FABRIC_PORT_HI_DEFAULT),
	  "The TCP ports (1024 to 65535, or one port) where a fabric warmup's coordinator listens, on the step's first node. "
	  "Open them between the compute nodes, with the ephemeral ports NCCL uses.",
	  set_ports, FIELD(fabric_ports) },
	{ "fabric_transport", "any|no-socket", "any",
	  "`no-socket`: a fabric warmup whose NCCL uses TCP sockets (NET/Socket) between the nodes fails (exit 11), for sites with InfiniBand, RoCE or a net plugin.",
	  set_transport, FIELD(fabric_refuse_socket) },
	{ "fabric_min_busbw", "GBPS", "0",
	  "Inter-node bus bandwidth floor of a fabric warmup, timed with warmup_bytes over the communicator across the nodes (0: no floor; warmup_min_busbw does not apply).",
	  set_gbps, FIELD(fabric_min_busbw_gbps) },
	{ "fabric_munge_socket", "PATH", NULL,
	  "munged's socket, through which a fabric warmup's nodes prove to each other that they are the job's (as slurm.conf's AuthInfo=socket=); "
	  "none: libmunge's own.",
	  set_path, FIELD(fabric_munge_socket) },
	{ "fabric_auth", "auto|munge|key", "auto",
	  "How a fabric warmup's nodes prove to each other that they are the job's: `munge` (munged's credentials), `key` (a per-step key root derives from the site secret, for AuthType=auth/slurm clusters without munged) or `auto` (by slurm.conf's AuthType).",
	  set_fabric_auth, FIELD(fabric_auth) },
	{ "fabric_key", "PATH", NULL,
	  "The site secret (root-only, the same on every node) the per-step key of `fabric_auth=key` derives from; none: slurm.key beside slurm.conf.",
	  set_path, FIELD(fabric_key) },
	{ "ras", "step|off|nccl", "step",
	  "NCCL's RAS (NCCL 2.24 and later): `step` gives each step its own NCCL_RAS_ADDR on 127.0.0.1 (unless the user set one), `off` sets NCCL_RAS_ENABLE=0, `nccl` leaves NCCL's defaults. "
	  "RAS has no authentication: any local user can read a step's.",
	  set_ras, FIELD(ras) },
	{ "ras_ports", "LO-HI", STR(SN_RAS_PORT_LO_DEFAULT) "-" STR(SN_RAS_PORT_HI_DEFAULT),
	  "The 127.0.0.1 ports of `ras=step`, picked from the job and step ids.",
	  set_ports, FIELD(ras_ports) },
	{ "ras_sample", "SECONDS|off", STR(SN_RAS_SAMPLE_DEFAULT_S),
	  "With `ras=step` and `record_file=` or `record_syslog=`: every SECONDS a process of the job's user on each node asks the step's RAS, so that a step killed while its NCCL is stuck leaves RAS's verdict in its record (`hang`); `off`: none.",
	  set_ras_sample, FIELD(ras_sample_s) },
	{ "health", "POLICY", "default",
	  "The helper's GPU health checks, read from NVML before any CUDA context: `default`, `fail`, `warn` or `off` for every check and/or CHECK:LEVEL items, left to right, e.g. `health=default,pcie:fail`. "
	  "The checks: busy, row_remap, retired_pages, ecc, persistence, compute_mode, pcie, nvlink, clocks; by default each fails but persistence, pcie and clocks, which warn.",
	  set_health, FIELD(health) },
	{ "health_busy_mib", "MIB", STR(SN_HEALTH_BUSY_MIB_DEFAULT),
	  "Memory another process may hold on one of the step's GPUs before the busy check fails (exit 14).",
	  set_health_busy, FIELD(health.busy_mib) },
	{ "confirm_env", "PATH", NULL,
	  "A root-owned file of NAME=VALUE lines: the environment (beside PATH and the step's CUDA_VISIBLE_DEVICES) of the root re-check after a failed warmup that decides a node fault.",
	  set_path, FIELD(confirm_env) },
};

#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

const struct sn_config_key *sn_config_keys(size_t *n)
{
	*n = N_KEYS;
	return keys;
}

/* DEF with a leading SYSCONFDIR/ or LIBEXECDIR/ made the directory. */
static void expand_dirs(char *out, size_t len, const char *def)
{
	static const struct {
		const char *word, *dir;
	} dirs[] = { { "SYSCONFDIR/", SYSCONFDIR }, { "LIBEXECDIR/", LIBEXECDIR } };
	size_t i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (strncmp(def, dirs[i].word, strlen(dirs[i].word)) == 0) {
			snprintf(out, len, "%s/%s", dirs[i].dir,
				 def + strlen(dirs[i].word));
			return;
		}
	snprintf(out, len, "%s", def);
}

void sn_config_defaults(struct sn_config *cfg)
{
	char value[PATH_MAX];
	struct sn_error err;
	size_t k;

	memset(cfg, 0, sizeof(*cfg));
	sn_health_policy_defaults(&cfg->health);
	/* The build (sn-config-doc) fails where a default does not parse. */
	for (k = 0; k < N_KEYS; k++) {
		if (!keys[k].def)
			continue;
		expand_dirs(value, sizeof(value), keys[k].def);
		(void)keys[k].set(&keys[k], cfg, value, keys[k].name, &err);
	}
	cfg->health_given = false;	/* the defaults are not given */
}

/* "a, b, c": the keys, for the messages. */
static void key_list(char *out, size_t len)
{
	size_t k, used = 0;

	out[0] = '\0';
	for (k = 0; k < N_KEYS && used < len; k++)
		used += (size_t)snprintf(out + used, len - used, "%s%s",
					 k ? ", " : "", keys[k].name);
}

int sn_config_parse(struct sn_config *cfg, int argc, char *const argv[],
		    struct sn_error *err)
{
	/* Parse into a copy: a bad argument leaves CFG untouched. */
	struct sn_config next = *cfg;
	bool seen[N_KEYS] = { false };
	char valid[512];
	int i;
	size_t k;

	for (i = 0; i < argc; i++) {
		const char *arg = argv[i];
		const char *eq = strchr(arg, '=');
		size_t keylen = eq ? (size_t)(eq - arg) : 0;

		for (k = 0; eq && k < N_KEYS; k++) {
			if (strlen(keys[k].name) == keylen &&
			    strncmp(arg, keys[k].name, keylen) == 0)
				break;
		}
		if (!eq || k == N_KEYS) {
			key_list(valid, sizeof(valid));
			if (!eq)
				ARG_ERROR(err, arg, "expected KEY=VALUE with KEY one of %s",
					  valid);
			else
				ARG_ERROR(err, arg, "unknown key \"%.*s\": valid keys are %s",
					  (int)(keylen > 64 ? 64 : keylen), arg,
					  valid);
			return -1;
		}
		if (seen[k]) {
			ARG_ERROR(err, arg, "%s is given twice: keep one", keys[k].name);
			return -1;
		}
		seen[k] = true;
		if (eq[1] == '\0') {
			ARG_ERROR(err, arg, "empty value: remove the argument to use the default");
			return -1;
		}
		if (keys[k].set(&keys[k], &next, eq + 1, arg, err) < 0)
			return -1;
	}
	*cfg = next;
	return 0;
}

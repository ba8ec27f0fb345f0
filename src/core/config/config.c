/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "record.h"
#include "helper_protocol.h"
#include "strutil.h"

#define VALID_KEYS "profiles, default_profiles, warmup_helper, " \
	"warmup_timeout, warmup_mode, warmup_policy, warmup_min_busbw, " \
	"warmup_bytes, warmup_teardown, warmup_reuse, warmup_reuse_dir, " \
	"warmup_nccl, record_file, record_syslog, prom_dir, fabric_ports, " \
	"fabric_transport, fabric_min_busbw, fabric_munge_socket, " \
	"fabric_auth, fabric_key, " \
	"ras, ras_ports, " \
	"health, health_busy_mib, confirm_env"
/* Far above any interconnect today: a larger floor is a typo (MB/s?). */
#define MAX_MIN_BUSBW_GBPS 100000.0

typedef int (*key_parser)(struct sn_config *cfg, const char *value,
			  const char *arg, struct sn_error *err);

struct key_def {
	const char *key;
	key_parser parse;
};

/* Every message names the whole argument as written in plugstack.conf. */
#define ARG_ERROR(err, arg, ...) do { \
	char shown_[256]; \
	sn_str_printable(shown_, sizeof(shown_), (arg)); \
	char detail_[512]; \
	snprintf(detail_, sizeof(detail_), __VA_ARGS__); \
	sn_error_set((err), "plugstack.conf argument \"%s\": %s", shown_, \
		     detail_); \
} while (0)

void sn_config_defaults(struct sn_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	sn_strlcpy(cfg->profiles_path, SN_DEFAULT_PROFILES_PATH,
		   sizeof(cfg->profiles_path));
	sn_strlcpy(cfg->warmup_helper, SN_DEFAULT_WARMUP_HELPER,
		   sizeof(cfg->warmup_helper));
	cfg->warmup_timeout_s = SN_WARMUP_TIMEOUT_DEFAULT_S;
	cfg->warmup_mode = SN_WARMUP_MODE_COMM;
	cfg->warmup_policy = SN_POLICY_FAIL;
	cfg->warmup_min_busbw_gbps = 0.0;
	cfg->warmup_bytes = SN_WARMUP_BYTES_DEFAULT;
	cfg->warmup_teardown_exit = SN_WARMUP_TEARDOWN_EXIT_DEFAULT;
	cfg->warmup_reuse = true;
	sn_strlcpy(cfg->warmup_reuse_dir, SN_DEFAULT_WARMUP_REUSE_DIR,
		   sizeof(cfg->warmup_reuse_dir));
	cfg->fabric_ports.lo = SN_FABRIC_PORT_LO_DEFAULT;
	cfg->fabric_ports.hi = SN_FABRIC_PORT_HI_DEFAULT;
	cfg->fabric_refuse_socket = false;
	cfg->ras = SN_RAS_STEP;
	cfg->ras_ports.lo = SN_RAS_PORT_LO_DEFAULT;
	cfg->ras_ports.hi = SN_RAS_PORT_HI_DEFAULT;
	sn_health_policy_defaults(&cfg->health);
}

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

static int parse_profiles(struct sn_config *cfg, const char *value,
			  const char *arg, struct sn_error *err)
{
	return parse_abs_path(cfg->profiles_path, sizeof(cfg->profiles_path),
			      value, arg, err);
}

static int parse_helper(struct sn_config *cfg, const char *value,
			const char *arg, struct sn_error *err)
{
	return parse_abs_path(cfg->warmup_helper, sizeof(cfg->warmup_helper),
			      value, arg, err);
}

static int parse_default_profiles(struct sn_config *cfg, const char *value,
				  const char *arg, struct sn_error *err)
{
	char shown[256];
	char subject[320];

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

static int parse_timeout(struct sn_config *cfg, const char *value,
			 const char *arg, struct sn_error *err)
{
	if (sn_parse_timeout_s(value, &cfg->warmup_timeout_s) < 0) {
		ARG_ERROR(err, arg, "expected whole seconds between 1 and %d",
			  SN_WARMUP_TIMEOUT_MAX_S);
		return -1;
	}
	return 0;
}

static int parse_mode(struct sn_config *cfg, const char *value,
		      const char *arg, struct sn_error *err)
{
	enum sn_warmup_mode mode = sn_warmup_mode_from_name(value);

	if (mode == SN_WARMUP_MODE_UNSET) {
		ARG_ERROR(err, arg, "expected one of " SN_WARMUP_MODES);
		return -1;
	}
	cfg->warmup_mode = mode;
	return 0;
}

static int parse_policy(struct sn_config *cfg, const char *value,
			const char *arg, struct sn_error *err)
{
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

static int parse_busbw(struct sn_config *cfg, const char *value,
		       const char *arg, struct sn_error *err)
{
	if (sn_parse_busbw(value, &cfg->warmup_min_busbw_gbps) < 0) {
		ARG_ERROR(err, arg, "expected a bus bandwidth in GB/s between 0 and %.0f, e.g. 100 or 37.5 (0: no floor)",
			  SN_WARMUP_BUSBW_MAX);
		return -1;
	}
	return 0;
}

static int parse_fabric_busbw(struct sn_config *cfg, const char *value,
			      const char *arg, struct sn_error *err)
{
	if (sn_parse_busbw(value, &cfg->fabric_min_busbw_gbps) < 0) {
		ARG_ERROR(err, arg, "expected the inter-node bus bandwidth floor of a fabric warmup in GB/s between 0 and %.0f, e.g. 20 (0: no floor)",
			  SN_WARMUP_BUSBW_MAX);
		return -1;
	}
	return 0;
}

static int parse_bytes(struct sn_config *cfg, const char *value,
		       const char *arg, struct sn_error *err)
{
	unsigned long long v;

	if (sn_parse_bytes(value, &v) < 0) {
		ARG_ERROR(err, arg, "expected a size from 1K to 16G: a whole number with an optional K, M or G suffix, e.g. 64M");
		return -1;
	}
	cfg->warmup_bytes = (unsigned long)v;
	return 0;
}

static int parse_teardown(struct sn_config *cfg, const char *value,
			  const char *arg, struct sn_error *err)
{
	if (sn_parse_teardown(value, &cfg->warmup_teardown_exit) < 0) {
		ARG_ERROR(err, arg, "expected exit (let process exit release the GPUs) or clean (destroy and free first)");
		return -1;
	}
	return 0;
}

static int parse_reuse(struct sn_config *cfg, const char *value,
		       const char *arg, struct sn_error *err)
{
	if (sn_streq_nocase(value, "yes")) {
		cfg->warmup_reuse = true;
	} else if (sn_streq_nocase(value, "no")) {
		cfg->warmup_reuse = false;
	} else {
		ARG_ERROR(err, arg, "expected yes (a step reuses a pass of the same job on the same node, GPUs, NCCL and NCCL_* settings) or no (every step warms up)");
		return -1;
	}
	return 0;
}

/*
 * Fleet record sinks (record.h, prom.h): admin paths, never the user's;
 * "%n" is the node name (one file or directory per node on a shared file
 * system, as slurm.conf's SlurmdLogFile=%n).
 */
static int parse_sink_path(char *dst, size_t len, const char *value,
			   const char *arg, struct sn_error *err)
{
	if (!sn_record_path_valid(value)) {
		ARG_ERROR(err, arg, "only %%n (the node name) and %%%% may follow a '%%'");
		return -1;
	}
	return parse_abs_path(dst, len, value, arg, err);
}

static int parse_record_file(struct sn_config *cfg, const char *value,
			     const char *arg, struct sn_error *err)
{
	return parse_sink_path(cfg->record_file, sizeof(cfg->record_file),
			       value, arg, err);
}

static int parse_prom_dir(struct sn_config *cfg, const char *value,
			  const char *arg, struct sn_error *err)
{
	return parse_sink_path(cfg->prom_dir, sizeof(cfg->prom_dir), value,
			       arg, err);
}

static int parse_record_syslog(struct sn_config *cfg, const char *value,
			       const char *arg, struct sn_error *err)
{
	if (sn_streq_nocase(value, "yes")) {
		cfg->record_syslog = true;
	} else if (sn_streq_nocase(value, "no")) {
		cfg->record_syslog = false;
	} else {
		ARG_ERROR(err, arg, "expected yes (one syslog message per warmup) or no");
		return -1;
	}
	return 0;
}

static int parse_reuse_dir(struct sn_config *cfg, const char *value,
			   const char *arg, struct sn_error *err)
{
	/* Record names are appended: leave room for "/job-N/<hash>". */
	return parse_abs_path(cfg->warmup_reuse_dir,
			      sizeof(cfg->warmup_reuse_dir) - 64, value, arg,
			      err);
}

static int parse_nccl(struct sn_config *cfg, const char *value,
		      const char *arg, struct sn_error *err)
{
	return parse_abs_path(cfg->warmup_nccl, sizeof(cfg->warmup_nccl),
			      value, arg, err);
}

static int parse_fabric_ports(struct sn_config *cfg, const char *value,
			      const char *arg, struct sn_error *err)
{
	struct sn_error why;

	if (sn_port_range_parse(value, &cfg->fabric_ports, &why) < 0) {
		ARG_ERROR(err, arg, "%s, e.g. fabric_ports=%d-%d (the ports the fabric warmup may listen on, on a step's first node)",
			  why.msg, SN_FABRIC_PORT_LO_DEFAULT,
			  SN_FABRIC_PORT_HI_DEFAULT);
		return -1;
	}
	return 0;
}

static int parse_fabric_transport(struct sn_config *cfg, const char *value,
				  const char *arg, struct sn_error *err)
{
	if (sn_parse_fabric_transport(value, &cfg->fabric_refuse_socket) < 0) {
		ARG_ERROR(err, arg, "expected any (every network NCCL picks passes) or no-socket (NCCL's TCP socket transport between nodes fails the fabric warmup: for sites with InfiniBand, RoCE or a net plugin)");
		return -1;
	}
	return 0;
}

static int parse_munge_socket(struct sn_config *cfg, const char *value,
			      const char *arg, struct sn_error *err)
{
	return parse_abs_path(cfg->fabric_munge_socket,
			      sizeof(cfg->fabric_munge_socket), value, arg, err);
}

static int parse_fabric_auth(struct sn_config *cfg, const char *value,
			     const char *arg, struct sn_error *err)
{
	if (sn_auth_choice_parse(value, &cfg->fabric_auth) < 0) {
		ARG_ERROR(err, arg, "expected auto (from slurm.conf's AuthType), munge or key (a key derived from slurm.key or fabric_key=)");
		return -1;
	}
	return 0;
}

static int parse_fabric_key(struct sn_config *cfg, const char *value,
			    const char *arg, struct sn_error *err)
{
	return parse_abs_path(cfg->fabric_key, sizeof(cfg->fabric_key), value,
			      arg, err);
}

static int parse_ras(struct sn_config *cfg, const char *value,
		     const char *arg, struct sn_error *err)
{
	if (sn_ras_policy_parse(value, &cfg->ras) < 0) {
		ARG_ERROR(err, arg, "expected step (each step's NCCL RAS on its own port), off (NCCL_RAS_ENABLE=0) or nccl (NCCL's defaults)");
		return -1;
	}
	return 0;
}

static int parse_ras_ports(struct sn_config *cfg, const char *value,
			   const char *arg, struct sn_error *err)
{
	struct sn_error why;

	if (sn_port_range_parse(value, &cfg->ras_ports, &why) < 0) {
		ARG_ERROR(err, arg, "%s, e.g. ras_ports=%d-%d (the localhost ports of the steps' NCCL RAS, ras=step)",
			  why.msg, SN_RAS_PORT_LO_DEFAULT,
			  SN_RAS_PORT_HI_DEFAULT);
		return -1;
	}
	return 0;
}

static int parse_health(struct sn_config *cfg, const char *value,
			const char *arg, struct sn_error *err)
{
	struct sn_error why;

	if (sn_health_policy_parse(value, &cfg->health, &why) < 0) {
		ARG_ERROR(err, arg, "%s", why.msg);
		return -1;
	}
	cfg->health_given = true;
	return 0;
}

static int parse_health_busy(struct sn_config *cfg, const char *value,
			     const char *arg, struct sn_error *err)
{
	if (sn_health_parse_busy_mib(value, &cfg->health.busy_mib) < 0) {
		ARG_ERROR(err, arg, "expected whole MiB from 0 to %llu (memory other processes may hold on a GPU before the busy check counts it), e.g. health_busy_mib=%llu",
			  SN_HEALTH_BUSY_MIB_MAX, SN_HEALTH_BUSY_MIB_DEFAULT);
		return -1;
	}
	cfg->health_given = true;
	return 0;
}

static int parse_confirm_env(struct sn_config *cfg, const char *value,
			     const char *arg, struct sn_error *err)
{
	return parse_abs_path(cfg->confirm_env, sizeof(cfg->confirm_env),
			      value, arg, err);
}

static const struct key_def keys[] = {
	{ "profiles", parse_profiles },
	{ "default_profiles", parse_default_profiles },
	{ "warmup_helper", parse_helper },
	{ "warmup_timeout", parse_timeout },
	{ "warmup_mode", parse_mode },
	{ "warmup_policy", parse_policy },
	{ "warmup_min_busbw", parse_busbw },
	{ "warmup_bytes", parse_bytes },
	{ "warmup_teardown", parse_teardown },
	{ "warmup_reuse", parse_reuse },
	{ "warmup_reuse_dir", parse_reuse_dir },
	{ "warmup_nccl", parse_nccl },
	{ "record_file", parse_record_file },
	{ "record_syslog", parse_record_syslog },
	{ "prom_dir", parse_prom_dir },
	{ "fabric_ports", parse_fabric_ports },
	{ "fabric_transport", parse_fabric_transport },
	{ "fabric_min_busbw", parse_fabric_busbw },
	{ "fabric_munge_socket", parse_munge_socket },
	{ "fabric_auth", parse_fabric_auth },
	{ "fabric_key", parse_fabric_key },
	{ "ras", parse_ras },
	{ "ras_ports", parse_ras_ports },
	{ "health", parse_health },
	{ "health_busy_mib", parse_health_busy },
	{ "confirm_env", parse_confirm_env },
};

#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

const char *sn_config_key_name(size_t i)
{
	return i < N_KEYS ? keys[i].key : NULL;
}

int sn_config_parse(struct sn_config *cfg, int argc, char *const argv[],
		    struct sn_error *err)
{
	/* Parse into a copy: a bad argument leaves CFG untouched. */
	struct sn_config next = *cfg;
	bool seen[N_KEYS] = { false };
	int i;
	size_t k;

	for (i = 0; i < argc; i++) {
		const char *arg = argv[i];
		const char *eq = strchr(arg, '=');
		size_t keylen = eq ? (size_t)(eq - arg) : 0;

		if (!eq) {
			ARG_ERROR(err, arg, "expected KEY=VALUE with KEY one of " VALID_KEYS);
			return -1;
		}
		for (k = 0; k < N_KEYS; k++) {
			if (strlen(keys[k].key) == keylen &&
			    strncmp(arg, keys[k].key, keylen) == 0)
				break;
		}
		if (k == N_KEYS) {
			ARG_ERROR(err, arg, "unknown key \"%.*s\": valid keys are " VALID_KEYS,
				  (int)(keylen > 64 ? 64 : keylen), arg);
			return -1;
		}
		if (seen[k]) {
			ARG_ERROR(err, arg, "%s is given twice: keep one", keys[k].key);
			return -1;
		}
		seen[k] = true;
		if (eq[1] == '\0') {
			ARG_ERROR(err, arg, "empty value: remove the argument to use the default");
			return -1;
		}
		if (keys[k].parse(&next, eq + 1, arg, err) < 0)
			return -1;
	}
	*cfg = next;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * plugstack.conf arguments, e.g.
 *   required spank_nccl.so profiles=/etc/slurm/nccl-profiles.conf \
 *            default_profiles=quiet-logs warmup_timeout=60
 * Admin-owned: nothing here can be set by a user.
 */
#ifndef SN_CONFIG_H
#define SN_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "protocol/helper_protocol.h"
#include "gpu/health.h"
#include "config/options.h"
#include "config/ras.h"
#include "config/slurm_auth.h"

#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#ifndef LIBEXECDIR
#define LIBEXECDIR "/usr/libexec"
#endif

enum sn_warmup_policy {
	SN_POLICY_FAIL = 0,
	SN_POLICY_WARN,
};

struct sn_config {
	char profiles_path[PATH_MAX];
	struct sn_profile_request default_profiles;	/* site defaults */
	char warmup_helper[PATH_MAX];
	unsigned int warmup_timeout_s;
	enum sn_warmup_mode warmup_mode;	/* mode of a bare --nccl-warmup */
	enum sn_warmup_policy warmup_policy;
	double warmup_min_busbw_gbps;		/* 0: no floor */
	unsigned long warmup_bytes;		/* bandwidth-mode message size */
	/*
	 * true: the helper skips ncclCommDestroy/cudaFree and exits (the
	 * driver releases everything while it exits, before the plugin can
	 * reap it, so no GPU memory is held when the tasks start); measured
	 * 0.43 s faster on 4xH200.  false: explicit clean teardown.
	 */
	bool warmup_teardown_exit;
	/*
	 * true: a step reuses a warmup that passed earlier in the same job on
	 * the same node, GPUs, NCCL library and NCCL_* settings (reuse.h);
	 * the records live in root-only warmup_reuse_dir.
	 */
	bool warmup_reuse;
	char warmup_reuse_dir[PATH_MAX];
	/* warmup_nccl=: the site's NCCL (file or directory), tried after
	 * the job's LD_LIBRARY_PATH; "" = the system's libnccl.so.2. */
	char warmup_nccl[PATH_MAX];
	/* Fleet view: where each warmup's record goes ("" / false: off). */
	char record_file[PATH_MAX];	/* JSON lines, one per warmup */
	bool record_syslog;		/* the same line to syslog */
	char prom_dir[PATH_MAX];	/* node_exporter textfile directory */
	/*
	 * Fabric warmup (mode fabric): the ports its coordinator and NCCL's
	 * bootstrap root listen on, on the step's first node (fabric_ports=,
	 * default 29400-29499), and whether NCCL's NET/Socket between nodes
	 * fails it (fabric_transport=no-socket; default any).
	 */
	struct sn_port_range fabric_ports;
	bool fabric_refuse_socket;
	/* fabric_min_busbw=: the inter-node bus-bandwidth floor; 0: none. */
	double fabric_min_busbw_gbps;
	/*
	 * fabric_munge_socket=: munged's socket, which the fabric warmup
	 * authenticates the step's nodes through ("": libmunge's default,
	 * as for slurm.conf's AuthInfo=socket=).
	 */
	char fabric_munge_socket[PATH_MAX];
	/* fabric_auth=: munge, key or auto (slurm_auth.h); fabric_key=: the
	 * site secret the step key derives from ("": slurm.key). */
	enum sn_fabric_auth fabric_auth;
	char fabric_key[PATH_MAX];
	/*
	 * NCCL's RAS (ras.h): ras= step (each step its own NCCL_RAS_ADDR,
	 * a port of ras_ports=), off (NCCL_RAS_ENABLE=0) or nccl (untouched).
	 */
	enum sn_ras_policy ras;
	struct sn_port_range ras_ports;
	/* ras_sample=: seconds between the hang sampler's questions to a
	 * step's RAS (step_ras_sample.c); 0: off. */
	unsigned int ras_sample_s;
	/*
	 * health= and health_busy_mib=: the helper's GPU health checks
	 * (health.h); passed as --health/--health-busy-mib when given.
	 */
	struct sn_health_policy health;
	bool health_given;
	/*
	 * confirm_env=: a root-owned file of NAME=VALUE lines, the whole
	 * environment (beside PATH and the step's CUDA_VISIBLE_DEVICES) of
	 * the root confirmation that decides a node fault (verdict.h);
	 * "" = none.
	 */
	char confirm_env[PATH_MAX];
};

/*
 * The plugstack.conf keys: the one table (config.c) that the parser, its
 * messages, the defaults and the key lists of spank-nccl(8) and
 * plugstack.conf.example (built by src/report/config_doc.c) all come
 * from.  To add a key: a field above, a row in config.c's table, a test
 * in tests/unit/test_config.c.
 */
struct sn_config_key;
typedef int (*sn_config_setter)(const struct sn_config_key *key,
				struct sn_config *cfg, const char *value,
				const char *arg, struct sn_error *err);
struct sn_config_key {
	const char *name;
	const char *value;	/* the value's form in the docs: PATH, yes|no */
	/*
	 * The default as an admin writes it, parsed by sn_config_defaults;
	 * a leading SYSCONFDIR/ or LIBEXECDIR/ is the configured directory.
	 * NULL: none (empty, off).
	 */
	const char *def;
	/* For the docs: plain sentences; `word` is written literally. */
	const char *help;
	sn_config_setter set;
	size_t off, len;	/* the field that the shared setters write */
};
/* The table, in the parser's order; *N its length. */
const struct sn_config_key *sn_config_keys(size_t *n);

/* Every key at its default. */
void sn_config_defaults(struct sn_config *cfg);
/* argv as given to slurm_spank_init(); errors name the argument. */
int sn_config_parse(struct sn_config *cfg, int argc, char *const argv[],
		    struct sn_error *err);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The contract between spank_nccl.so and nccl-warmup, in one place: the
 * helper's exit codes (number, JSON status, name, hint: one table), the
 * limits and defaults of its arguments, and the parsers both sides use
 * for those arguments (the plugin for plugstack.conf, the helper for its
 * command line), so the two can never disagree on a name, limit or
 * default.  The result's fields and reader are warmup_result.h; the
 * exit codes are documented in nccl-warmup(8) and docs/design.md, which
 * tests/unit/test_helper_protocol.c checks against the table.
 */
#ifndef SN_HELPER_PROTOCOL_H
#define SN_HELPER_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/*
 * Never renumber a released code.  Reserved, not yet used: 16-19
 * (issue 23).
 */
enum sn_warmup_exit {
	SN_WARMUP_OK = 0,
	SN_WARMUP_USAGE = 1,          /* bad command line */
	SN_WARMUP_NO_GPUS = 2,        /* no visible CUDA device */
	SN_WARMUP_DUPLICATE_BUSID = 3,/* two devices report the same PCI bus ID */
	SN_WARMUP_CUDA_ERROR = 4,     /* CUDA runtime/driver call failed */
	SN_WARMUP_NCCL_ERROR = 5,     /* NCCL init or collective failed */
	SN_WARMUP_WRONG_RESULT = 6,   /* all-reduce returned a wrong value */
	SN_WARMUP_LOW_BANDWIDTH = 7,  /* bus bandwidth below the floor */
	SN_WARMUP_TIMEOUT = 8,        /* helper's own deadline expired */
	SN_WARMUP_INTERNAL = 9,       /* out of memory, I/O error, ... */
	SN_WARMUP_PEER_FAILED = 10,   /* fabric: another node is at fault */
	SN_WARMUP_TRANSPORT = 11,     /* fabric: NCCL's network refused by policy */
	SN_WARMUP_FABRIC_SETUP = 12,  /* fabric: no coordination (ports taken, MUNGE) */
	SN_WARMUP_GPU_HEALTH = 13,    /* NVML: a GPU health check failed (health=) */
	SN_WARMUP_GPU_BUSY = 14,      /* NVML: a GPU held by another process */
	SN_WARMUP_CONTAINER_NCCL = 15,/* the container image's NCCL missing or broken */
};
/* The last code: tables and tests cover 0..SN_WARMUP_EXIT_LAST. */
#define SN_WARMUP_EXIT_LAST SN_WARMUP_CONTAINER_NCCL

struct sn_warmup_exit_info {
	enum sn_warmup_exit code;
	const char *status;	/* the JSON "status" word: "duplicate_busid" */
	const char *name;	/* short name: "duplicate PCI bus ID" */
	const char *hint;	/* "WHY: WHAT TO DO" (sn_fault_tell's lines 2, 3) */
};

/* Every exit code, in order of code (index == code). */
extern const struct sn_warmup_exit_info sn_warmup_exits[];
extern const size_t sn_warmup_n_exits;

/* Short name of an exit code ("duplicate PCI bus ID", ...). */
const char *sn_warmup_exit_name(int exit_code);
/* The JSON "status" word for an exit code ("duplicate_busid", ...). */
const char *sn_warmup_exit_status(int exit_code);
/* Why and what to do for a helper exit code: "WHY: WHAT TO DO". */
const char *sn_warmup_exit_hint(int exit_code);
/* In the helper's message, what follows is detail: shown under verbose
 * and kept in the record, not on the user's three lines. */
#define SN_DETAIL_SEP "; detail: "

/*
 * nccl-warmup's long options that spank_nccl.so passes (step_warmup.c
 * writes "--" NAME, warmup/cli.c's getopt_long table reads NAME).
 */
#define SN_HELPER_OPT_MODE "mode"
#define SN_HELPER_OPT_TIMEOUT "timeout"
#define SN_HELPER_OPT_NODE "node"
#define SN_HELPER_OPT_JSON "json"
/*
 * The --json result on this inherited descriptor instead of stdout, which
 * NCCL shares (its log goes to stdout when NCCL_DEBUG is set and
 * NCCL_DEBUG_FILE is not), as do CUDA, net plugins and LD_PRELOADs.
 */
#define SN_HELPER_OPT_RESULT_FD "result-fd"
#define SN_HELPER_OPT_TEARDOWN "teardown"
#define SN_HELPER_OPT_BYTES "bytes"
#define SN_HELPER_OPT_MIN_BUSBW "min-busbw"
#define SN_HELPER_OPT_NCCL "nccl"			/* the step's nccl=PATH */
#define SN_HELPER_OPT_NCCL_DEFAULT "nccl-default"	/* warmup_nccl= */
/* A pyxis step: a task's pid and the image (step_container.c). */
#define SN_HELPER_OPT_CONTAINER_PID "container-pid"
#define SN_HELPER_OPT_CONTAINER_IMAGE "container-image"
/* The task's /proc/PID/root, opened by the root agent and inherited
 * (the task stays not dumpable: the job user cannot open it). */
#define SN_HELPER_OPT_CONTAINER_ROOT_FD "container-root-fd"
/*
 * A task in task_init has not exec'd yet: its /proc/PID/environ is
 * slurmstepd's, not the job's with the image's environment that pyxis
 * added.  The plugin passes that environment's NCCL_* as the helper's
 * own and its LD_LIBRARY_PATH under this name (step_container.c).
 */
#define SN_HELPER_ENV_CONTAINER_LDPATH "SPANK_NCCL_CONTAINER_LD_LIBRARY_PATH"
/*
 * What slurmstepd knows about the step, for the warmup across its nodes
 * (issue 15): SLURM_JOB_ID, SLURM_STEP_ID, S_JOB_NODEID, S_JOB_NNODES,
 * SLURM_STEP_NODELIST and plugstack.conf's fabric_ports=LO-HI.
 */
#define SN_HELPER_OPT_JOB_ID "job-id"
#define SN_HELPER_OPT_STEP_ID "step-id"
#define SN_HELPER_OPT_NODE_INDEX "node-index"
#define SN_HELPER_OPT_NODES "nodes"
#define SN_HELPER_OPT_NODELIST "nodelist"
#define SN_HELPER_OPT_FABRIC_PORTS "fabric-ports"
/* plugstack.conf's fabric_transport=: which NCCL networks pass. */
#define SN_HELPER_OPT_FABRIC_TRANSPORT "fabric-transport"
/* plugstack.conf's fabric_munge_socket=: munged's socket, if not libmunge's default. */
#define SN_HELPER_OPT_MUNGE_SOCKET "munge-socket"
/* The step's key (fabric_auth=key): an inherited pipe, never argv or env. */
#define SN_HELPER_OPT_FABRIC_KEY_FD "fabric-key-fd"
/* nccl-warmup's first argument for the root-run derivation (fabric_key.h). */
#define SN_HELPER_FABRIC_KEY_DERIVE "--fabric-key-derive"
/*
 * The step key, derived by either side (fabric_key.c in nccl-warmup,
 * step_key.c in slurmstepd): HKDF-SHA256 with this salt and this info
 * (ClusterName, job, step, uid), over the site key's first
 * SN_STEP_KEY_SITE_MAX bytes (at least SN_STEP_KEY_BYTES); on the pipe
 * as 2 * SN_STEP_KEY_BYTES lowercase hex digits and a newline.
 */
#define SN_STEP_KEY_BYTES 32
#define SN_STEP_KEY_SITE_MAX 65536
#define SN_STEP_KEY_SALT "spank-nccl fabric key"
#define SN_STEP_KEY_INFO "spank-nccl fabric v1\ncluster=%s\njob=%u\nstep=%u\nuid=%u"
/* plugstack.conf's health= (canonical CHECK:LEVEL list) and health_busy_mib=. */
#define SN_HELPER_OPT_HEALTH "health"
#define SN_HELPER_OPT_HEALTH_BUSY_MIB "health-busy-mib"

/*
 * A passing warmup's summary holding this (", health WARNING: ", "1 GPU
 * WARNING: ...") is printed to the user by spank_nccl.so, verbose or not.
 */
#define SN_SUMMARY_WARNING " WARNING: "

/*
 * Argument limits and defaults.  The timeout cap is the plugin's: srun
 * abandons a step launch after 600 s (MessageTimeout-independent), so a
 * longer warmup in user_init would only be cut off by srun.
 */
#define SN_WARMUP_TIMEOUT_DEFAULT_S 60
#define SN_WARMUP_TIMEOUT_MAX_S 540
/*
 * How a supervisor bounds the helper (spank_nccl.so; nccl-warmup-prolog
 * reads them from nccl-warmup --limits): it waits SN_WARMUP_SLACK_MS past
 * the helper's --timeout, so that the helper's own timeout report wins,
 * then sends SIGTERM to its process group and SIGKILL
 * SN_WARMUP_KILL_GRACE_MS later.
 */
#define SN_WARMUP_SLACK_MS 300
#define SN_WARMUP_KILL_GRACE_MS 300
#define SN_WARMUP_BYTES_DEFAULT (64ULL << 20)
#define SN_WARMUP_BYTES_MIN (1ULL << 10)
#define SN_WARMUP_BYTES_MAX (16ULL << 30)
/* Far above any interconnect today: a larger floor is a typo (MB/s?). */
#define SN_WARMUP_BUSBW_MAX 100000.0
/* Process exit releases the GPUs (faster); "clean" destroys first. */
#define SN_WARMUP_TEARDOWN_EXIT_DEFAULT true

/*
 * Value parsers, shared by plugstack.conf (config.c) and nccl-warmup's
 * command line (src/warmup/cli.c).  Each returns 0, or -1 leaving *OUT
 * alone; the caller words the error for its own context.
 */
/* Whole seconds, 1 to SN_WARMUP_TIMEOUT_MAX_S. */
int sn_parse_timeout_s(const char *value, unsigned int *out);
/* N[K|M|G] (binary units), SN_WARMUP_BYTES_MIN to SN_WARMUP_BYTES_MAX. */
int sn_parse_bytes(const char *value, unsigned long long *out);
/* Plain decimal GB/s, 0 to SN_WARMUP_BUSBW_MAX ("inf", hex refused). */
int sn_parse_busbw(const char *value, double *out);
/* "exit" or "clean", any case. */
int sn_parse_teardown(const char *value, bool *teardown_exit);
const char *sn_teardown_name(bool teardown_exit);
/*
 * "any" (every network NCCL picks passes) or "no-socket" (NET/Socket
 * between nodes fails the fabric warmup with SN_WARMUP_TRANSPORT: for
 * sites with InfiniBand, RoCE or a net plugin), any case.
 */
int sn_parse_fabric_transport(const char *value, bool *refuse_socket);
const char *sn_transport_policy_name(bool refuse_socket);

/*
 * plugstack.conf's fabric_ports= and nccl-warmup's --fabric-ports: the
 * ports a fabric warmup's coordinator and NCCL bootstrap root may listen
 * on (src/core/fabric/fabric_addr.h picks one per step).  Parsed by the plugin
 * at load, so a bad range is an admin error, never a failed step.
 */
#define SN_FABRIC_PORT_LO_DEFAULT 29400
#define SN_FABRIC_PORT_HI_DEFAULT 29499

struct sn_port_range {
	unsigned int lo;
	unsigned int hi;
};

/* "LO-HI" or one port; 1024..65535, LO <= HI.  ERR names the problem. */
int sn_port_range_parse(const char *s, struct sn_port_range *range,
			struct sn_error *err);

#endif

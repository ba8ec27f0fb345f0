/* SPDX-License-Identifier: MIT */
/*
 * nccl-warmup: shared state of one run.  The main thread fills it phase by
 * phase; the watchdog thread reads it to report a timeout when a CUDA or
 * NCCL call never returns.  Fields marked "lock" are written and read
 * under run->lock; the lock is never held across a CUDA/NCCL call.
 */
#ifndef WU_WARMUP_H
#define WU_WARMUP_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "gpu/busid.h"
#include "base/clock.h"
#include "fabric/fabric_addr.h"
#include "fabric/fabric_msg.h"
#include "gpu/health.h"
#include "protocol/json_write.h"
#include "fabric/hostlist.h"
#include "gpu/nccl_log.h"
#include "protocol/helper_protocol.h"
#include "config/options.h"
#include "protocol/warmup_result.h"

#define WU_MAX_GPUS SN_RESULT_MAX_GPUS
#define WU_NODE_MAX 64
#define WU_MESSAGE_MAX 1024

enum wu_phase {
	WU_PHASE_CUDA_INIT,
	WU_PHASE_CONTEXTS,
	WU_PHASE_COMM_INIT,
	WU_PHASE_ALLREDUCE,
	WU_PHASE_COLLECTIVES,	/* broadcast ... send/recv, after all-reduce */
	WU_PHASE_BANDWIDTH,
	WU_PHASE_TEARDOWN,
	WU_PHASE_COUNT,
};

/* The inert, verified operations run on every communicator, in order. */
enum wu_coll {
	WU_COLL_ALLREDUCE,
	WU_COLL_BROADCAST,
	WU_COLL_ALLGATHER,
	WU_COLL_REDUCESCATTER,
	WU_COLL_SENDRECV,
	WU_COLL_COUNT,
};

/* Where the NCCL came from (nccl_loader.c; "nccl_source" in the JSON). */
enum wu_nccl_source {
	WU_NCCL_NONE,
	WU_NCCL_PRELOAD,	/* already in the process (LD_PRELOAD) */
	WU_NCCL_USER,		/* --nccl: named for the step */
	WU_NCCL_LD_LIBRARY_PATH,
	WU_NCCL_ADMIN,		/* --nccl-default: plugstack.conf */
	WU_NCCL_SYSTEM,		/* the dynamic loader's own search */
	WU_NCCL_CONTAINER,	/* --container-pid: the container's own */
};

struct wu_cu;
struct wu_nccl;

/* WU_NODELIST_MAX: Slurm's compressed list ("n[001-512,600]") fits. */
#define WU_NODELIST_MAX 4096

/*
 * The step as slurmstepd describes it (cli_step.c).  has_nodes is set
 * when --node-index, --nodes and --nodelist were given (all or none);
 * then node_index < nodes == the number of hosts in nodelist.
 */
struct wu_step {
	bool has_job;			/* --job-id and --step-id given */
	unsigned int job_id;
	unsigned int step_id;
	bool has_nodes;
	unsigned int node_index;
	unsigned int nodes;
	char nodelist[WU_NODELIST_MAX];
	struct sn_port_range ports;	/* default 29400-29499 */
	unsigned int given;		/* WU_STEP_* bits, while parsing */
};

struct wu_options {
	enum sn_warmup_mode mode;	/* CHECK, COMM, BANDWIDTH or FABRIC */
	unsigned int timeout_s;		/* --timeout: whole seconds */
	unsigned long long bytes;	/* bandwidth message size */
	double min_busbw_gbps;		/* 0: no floor */
	bool json;
	int result_fd;			/* --result-fd; -1: the JSON on stdout */
	bool quiet;
	bool teardown_exit;	/* --teardown exit: leave it to process exit */
	char node[WU_NODE_MAX + 1];
	char nccl_user[PATH_MAX];	/* --nccl FILE|DIR, "" if not given */
	char nccl_admin[PATH_MAX];	/* --nccl-default FILE|DIR */
	struct wu_step step;		/* --job-id ... --fabric-ports */
	char fabric_root[64];		/* --fabric-root ADDR; "" if not given */
	bool refuse_socket;		/* --fabric-transport no-socket */
	char munge_socket[PATH_MAX];	/* --munge-socket; "" libmunge's default */
	int fabric_key_fd;		/* --fabric-key-fd; -1: MUNGE */
	struct sn_health_policy health;	/* --health, --health-busy-mib */
	pid_t container_pid;		/* --container-pid; 0 if not given */
	int container_root_fd;		/* --container-root-fd; 0 if not given */
	char container_image[256];	/* --container-image; "" if not given */
	bool health_detail;		/* --health-detail: every GPU's readings */
};

/* The GPU health checks' outcome (nvml.c; health.h judges). */
struct wu_health {
	bool ran;			/* wu_health_check ran (not all off) */
	bool checked;			/* NVML answered */
	char why_not[160];		/* why not checked */
	double ms;			/* dlopen .. the last GPU read */
	struct sn_gpu_health gpu[WU_MAX_GPUS];	/* by position in gpus[] */
	struct sn_health_verdict verdict;
};

struct wu_run;

/*
 * The fabric warmup's side of a run (fabric_run.c): one communicator
 * over every GPU of every node of the step.  Set by the main thread
 * before NCCL runs, read by the report.
 */
struct wu_fabric {
	bool active;			/* mode fabric (any node count) */
	int nranks;			/* ranks of the step's communicator */
	int rank_base;			/* this node's first rank */
	/* ncclGetUniqueId's on the root, handed out in GO */
	bool has_nccl_id;
	unsigned char nccl_id[SN_FABRIC_NCCL_ID_BYTES];
	/* Where NCCL's bootstrap root listens (from the id); "" if unknown */
	char comm_id[SN_ENDPOINT_MAX];
	unsigned int refused;		/* connections not of the step */
	/* Where the coordinator listened on node index 0; "" if nowhere */
	char coordinator[SN_ENDPOINT_MAX];
	bool blamed;			/* blame_index names the node at fault */
	unsigned int blame_index;
	char blame_node[SN_HOSTNAME_MAX];
	/*
	 * Polled while NCCL runs (comm.c): returns SN_WARMUP_PEER_FAILED
	 * (message set) once another node of the step has failed, so this
	 * node stops waiting for it; NULL outside fabric mode.
	 */
	int (*peer_failed)(struct wu_run *run);
	void *coord;
	/* The job's NCCL_DEBUG level (1 VERSION, 2 WARN, 3 all), else 0:
	 * wu_fabric_tell_log copies those lines of log_fd (NCCL's memfd)
	 * at the end to tell_file (the job's NCCL_DEBUG_FILE, %h and %p
	 * expanded; "": stdout), where NCCL would have written them. */
	int tell_level;
	int log_fd;
	char tell_file[4096];
};

struct wu_run {
	struct wu_options opt;
	double t_start_ms;		/* sn_clock_ms() at main() entry */
	/* --timeout after t_start_ms: the watchdog ends the run there */
	struct sn_deadline deadline;
	/* Set once before use; the libraries, loaded at run time. */
	const struct wu_cu *cu;
	const struct wu_nccl *nc;

	pthread_mutex_t lock;
	atomic_int reporting;		/* 1 once a thread owns the report */

	/* lock */
	const char *doing;		/* the call in progress, for timeouts */
	enum wu_phase phase;		/* the phase in progress */
	double phase_started_ms;	/* sn_clock_ms() */
	double phase_ms[WU_PHASE_COUNT];
	bool phase_done[WU_PHASE_COUNT];
	char nccl_version[32];
	char nccl_path[PATH_MAX];	/* the libnccl actually loaded */
	enum wu_nccl_source nccl_source;
	/* The NCCL being loaded, whether or not it loaded (whose fault). */
	enum wu_nccl_source nccl_tried;
	char driver_version[32];	/* "580.95.05"; "" if unknown */
	int cuda_driver_version;	/* cuDriverGetVersion; 0 if unknown */
	bool mem_measured;
	long long nccl_mem_mib[WU_MAX_GPUS];	/* free before - free after */
	bool coll_done[WU_COLL_COUNT];
	double coll_ms[WU_COLL_COUNT];
	int failed_op;			/* enum wu_coll, or -1 */
	bool cvd_set;
	char cvd[256];			/* CUDA_VISIBLE_DEVICES, truncated */
	size_t n_gpus;
	struct sn_gpu_identity gpus[WU_MAX_GPUS];
	/* cuDeviceGetName: the model, for the fleet report's peer groups. */
	char gpu_names[WU_MAX_GPUS][96];
	bool busbw_measured;
	double busbw_gbps;
	char transport[SN_TRANSPORT_MAX];	/* sn_nccl_transport(); "" unknown */
	struct wu_fabric fabric;
	struct wu_health health;
	struct wu_nvml_boot *nvml_boot;	/* wu_health_start's, until released */
	char note[256];			/* e.g. the MIG skip, the 1-GPU floor */
	char message[WU_MESSAGE_MAX];	/* what failed */
};

/* run.c: state updates (all take the lock) */
void wu_run_init(struct wu_run *run);
void wu_phase_begin(struct wu_run *run, enum wu_phase phase,
		    const char *doing);
void wu_doing(struct wu_run *run, const char *doing);
void wu_phase_end(struct wu_run *run);
void wu_note(struct wu_run *run, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Records MESSAGE and returns CODE, for "return wu_fail(...)". */
int wu_fail(struct wu_run *run, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* True once the polling loops must give up (just before the deadline). */
bool wu_past_soft_deadline(const struct wu_run *run);

/* cli.c */
enum wu_cli_result { WU_CLI_RUN, WU_CLI_EXIT_OK, WU_CLI_USAGE };
enum wu_cli_result wu_cli_parse(int argc, char **argv,
				struct wu_options *opt, char *err,
				size_t err_len);
void wu_cli_usage(void);
/* --result-fd's value: the descriptor, or -1 with ERR set. */
int wu_cli_result_fd(const char *v, char *err, size_t len);

/* cli_step.c: the step options (getopt characters 'J' 'S' 'I' 'C' 'L' 'P') */
void wu_step_defaults(struct wu_step *step);
int wu_step_parse_value(int opt_char, const char *value,
			struct wu_step *step, char *err, size_t len);
int wu_step_check(struct wu_step *step, char *err, size_t len);

/* gpus.c */
int wu_gpus_enumerate(struct wu_run *run, struct wu_cu *cu);
int wu_gpus_check_duplicates(struct wu_run *run);
int wu_gpus_create_contexts(struct wu_run *run, struct wu_cu *cu);

/*
 * nvml.c: the GPU health checks.  wu_health_start loads and initialises
 * NVML and opens the GPUs on threads beside cuInit (-1: out of memory or
 * threads, the check then says NVML was not checked);
 * wu_health_cuda_ready, once cuInit is done, lets them read the GPUs
 * (or starts it all then); wu_health_check, before contexts, joins it
 * and matches the step's GPUs (phases.c: wu_health_nccl_load).
 */
struct wu_nvml_boot;
int wu_health_start(struct wu_run *run);
int wu_health_cuda_ready(struct wu_run *run);
int wu_health_check(struct wu_run *run);

/* one_gpu.c: a 1-GPU node's limits, said and enforced */
int wu_one_gpu_check(struct wu_run *run);
bool wu_algo_breaks_collectives(const char *algo, int nccl_code);

/* collectives.c */
const char *wu_coll_name(enum wu_coll op);
/* nccl_loader.c */
const char *wu_nccl_source_name(enum wu_nccl_source src);

/* result.c: prints the result and ends the process (never returns) */
__attribute__((noreturn)) void wu_report_and_exit(struct wu_run *run,
						  int code);

/* fabric_run.c: mode fabric, after the node-local checks */
int wu_fabric_run(struct wu_run *run, struct wu_cu *cu);
/* The job's share of NCCL's log, where it asked (result.c, at the end). */
void wu_fabric_tell_log(const struct wu_run *run);

/* watchdog.c */
int wu_watchdog_start(struct wu_run *run);

#endif

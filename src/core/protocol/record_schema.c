/* SPDX-License-Identifier: MIT */
/*
 * The schema table (record_schema.h).  Its order is the record's key
 * order.  docs/record.schema.json is printed from it
 * (tests/unit/record_schema_print); change both together, and bump
 * SN_RECORD_SCHEMA when a field is added.
 */
#include <stddef.h>

#include "record_schema.h"

const char *const sn_record_class_names[SN_CLASS_COUNT + 1] = {
	[SN_CLASS_OK] = "ok",
	[SN_CLASS_USAGE] = "usage",
	[SN_CLASS_NO_GPUS] = "no_gpus",
	[SN_CLASS_DUPLICATE_BUSID] = "duplicate_busid",
	[SN_CLASS_CUDA_ERROR] = "cuda_error",
	[SN_CLASS_NCCL_ERROR] = "nccl_error",
	[SN_CLASS_WRONG_RESULT] = "wrong_result",
	[SN_CLASS_LOW_BANDWIDTH] = "low_bandwidth",
	[SN_CLASS_TIMEOUT] = "timeout",
	[SN_CLASS_INTERNAL] = "internal",
	[SN_CLASS_CRASH] = "crash",
	[SN_CLASS_HELPER_START] = "helper_start",
	[SN_CLASS_PEER_FAILED] = "peer_failed",
	[SN_CLASS_TRANSPORT] = "transport",
	[SN_CLASS_FABRIC_SETUP] = "fabric_setup",
	[SN_CLASS_GPU_HEALTH] = "gpu_health",
	[SN_CLASS_GPU_BUSY] = "gpu_busy",
	[SN_CLASS_COUNT] = NULL,
};

const struct sn_field_type_name sn_field_type_names[SN_FIELD_TYPES] = {
	{ SN_T_STRING, "string" }, { SN_T_INTEGER, "integer" },
	{ SN_T_NUMBER, "number" }, { SN_T_BOOLEAN, "boolean" },
	{ SN_T_OBJECT, "object" }, { SN_T_ARRAY, "array" },
	{ SN_T_NULL, "null" },
};

static const char *const record_tags[] = { "spank-nccl-warmup", NULL };
static const char *const sources[] = { "spank", "prolog", NULL };
static const char *const batch[] = { "batch", NULL };
static const char *const verdicts[] = { "pass", "fail", NULL };
static const char *const policies[] = { "fail", "warn", NULL };

#define REC SN_IN_RECORD
#define RES SN_IN_RESULT
#define BOTH (SN_IN_RECORD | SN_IN_RESULT)
#define STR_OR_NULL (SN_T_STRING | SN_T_NULL)
#define INT_OR_NULL (SN_T_INTEGER | SN_T_NULL)
#define NUM_OR_NULL (SN_T_NUMBER | SN_T_NULL)
/* A top-level field; a field of PARENT. */
#define TOP(k) .key = (k), .parent = SN_F_TOP
#define IN(p, k) .key = (k), .parent = (p)
/* A phase's milliseconds, in the record and the helper's timings_ms. */
#define PHASE(k, d) { IN(SN_F_TIMINGS, k), .docs = BOTH, \
	.types = NUM_OR_NULL, .decimals = 1, .doc = d }
/* A collective's milliseconds, in both documents' "collectives". */
#define COLL(k) { IN(SN_F_COLLECTIVES, k), .docs = BOTH, \
	.types = NUM_OR_NULL, .decimals = 3, \
	.doc = "milliseconds of the verified " k " (null: not run)" }

const struct sn_field_def sn_fields[SN_F_COUNT] = {
	[SN_F_RECORD] = { TOP("record"), .docs = REC, .types = SN_T_STRING,
		.required = true, .values = record_tags,
		.doc = "what the line is: a spank-nccl warmup record" },
	[SN_F_VERSION] = { TOP("version"), .docs = BOTH,
		.types = SN_T_INTEGER, .required = true, .min = 1,
		.max = SN_RECORD_VERSION,
		.doc = "the record format's major version: a reader refuses another" },
	[SN_F_SCHEMA] = { TOP("schema"), .docs = REC, .types = SN_T_INTEGER,
		.min = 1, .since = 2,
		.doc = "the revision of this schema; a newer revision of the same version only adds keys; absent: revision 1" },
	[SN_F_PRODUCER] = { TOP("producer"), .docs = REC,
		.types = SN_T_STRING, .since = 2,
		.doc = "the package and version that wrote the record, e.g. \"spank-nccl 0.1.0\"" },
	[SN_F_TIME] = { TOP("time"), .docs = REC, .types = SN_T_STRING,
		.doc = "when the record was written, at the warmup's end: UTC, ISO 8601, milliseconds" },
	[SN_F_TS] = { TOP("ts"), .docs = REC, .types = SN_T_NUMBER,
		.required = true, .decimals = 3,
		.doc = "the same time, seconds since the Unix epoch" },
	[SN_F_SOURCE] = { TOP("source"), .docs = REC, .types = STR_OR_NULL,
		.values = sources,
		.doc = "who ran the warmup: spank (spank_nccl.so in slurmstepd) or prolog (nccl-warmup-prolog)" },
	[SN_F_NODE] = { TOP("node"), .docs = BOTH, .types = SN_T_STRING,
		.required = true, .doc = "the node's Slurm name" },
	[SN_F_JOB] = { TOP("job"), .docs = REC, .types = INT_OR_NULL,
		.doc = "the job id (null: unknown)" },
	[SN_F_STEP] = { TOP("step"), .docs = REC,
		.types = SN_T_INTEGER | SN_T_STRING | SN_T_NULL,
		.values = batch,
		.doc = "the step id, \"batch\" for the batch step, null from the Prolog" },
	[SN_F_USER] = { TOP("user"), .docs = REC, .types = STR_OR_NULL,
		.doc = "the job user's name (null: unknown)" },
	[SN_F_UID] = { TOP("uid"), .docs = REC, .types = INT_OR_NULL,
		.doc = "the job user's uid (null: unknown)" },
	[SN_F_MODE] = { TOP("mode"), .docs = BOTH, .types = STR_OR_NULL,
		.doc = "the warmup mode: check, comm, bandwidth or fabric" },
	[SN_F_VERDICT] = { TOP("verdict"), .docs = REC, .types = SN_T_STRING,
		.required = true, .values = verdicts,
		.doc = "pass or fail, as the root side saw the helper end" },
	[SN_F_CLASS] = { TOP("class"), .docs = REC, .types = SN_T_STRING,
		.required = true, .values = sn_record_class_names,
		.doc = "why it failed (ok on a pass), from the exit status, signal or deadline; peer_failed and fabric_setup are no fault of this node" },
	[SN_F_EXIT_CODE] = { TOP("exit_code"), .docs = BOTH,
		.types = INT_OR_NULL, .max = 255,
		.doc = "nccl-warmup's exit code (null: it did not exit: signal, deadline, not started)" },
	[SN_F_SIGNAL] = { TOP("signal"), .docs = REC, .types = INT_OR_NULL,
		.min = 1, .doc = "the signal that killed nccl-warmup (null: none)" },
	[SN_F_POLICY] = { TOP("policy"), .docs = REC, .types = STR_OR_NULL,
		.values = policies,
		.doc = "warmup_policy= of the plugin: fail or warn (null from the Prolog)" },
	[SN_F_REUSED] = { TOP("reused"), .docs = REC, .types = SN_T_BOOLEAN,
		.doc = "true: the step reused an earlier warmup's pass instead of running nccl-warmup" },
	[SN_F_ELAPSED_MS] = { TOP("elapsed_ms"), .docs = REC,
		.types = NUM_OR_NULL, .decimals = 1,
		.doc = "milliseconds from the helper's start to its end, as the root side measured" },
	[SN_F_MESSAGE] = { TOP("message"), .docs = BOTH,
		.types = STR_OR_NULL,
		.doc = "what failed (null on a pass)" },
	[SN_F_GPUS_REQUESTED] = { TOP("gpus_requested"), .docs = REC,
		.types = STR_OR_NULL,
		.doc = "CUDA_VISIBLE_DEVICES given to the warmup (null: unset)" },
	[SN_F_GPU_COUNT] = { TOP("gpu_count"), .docs = REC,
		.types = SN_T_INTEGER, .doc = "the number of GPUs checked" },
	[SN_F_GPU_MODEL] = { TOP("gpu_model"), .docs = REC,
		.types = STR_OR_NULL,
		.doc = "the GPUs' model, \"mixed\" if they differ (null: unknown)" },
	[SN_F_GPUS] = { TOP("gpus"), .docs = BOTH, .types = SN_T_ARRAY,
		.doc = "the GPUs checked, in CUDA order" },
	[SN_F_GPU_INDEX] = { IN(SN_F_GPUS, "index"), .docs = BOTH,
		.types = SN_T_INTEGER,
		.doc = "the CUDA device index" },
	[SN_F_GPU_BUSID] = { IN(SN_F_GPUS, "busid"), .docs = BOTH,
		.types = STR_OR_NULL,
		.doc = "the PCI bus ID" },
	[SN_F_GPU_UUID] = { IN(SN_F_GPUS, "uuid"), .docs = BOTH,
		.types = STR_OR_NULL, .doc = "the GPU's UUID" },
	[SN_F_GPU_NAME] = { IN(SN_F_GPUS, "name"), .docs = BOTH,
		.types = STR_OR_NULL, .doc = "the GPU's model" },
	[SN_F_GPU_NCCL_MEM_MIB] = { IN(SN_F_GPUS, "nccl_mem_mib"),
		.docs = BOTH, .types = NUM_OR_NULL, .decimals = 1,
		.doc = "MiB of device memory the NCCL communicator took (null: not measured)" },
	[SN_F_DRIVER_VERSION] = { TOP("driver_version"), .docs = BOTH,
		.types = STR_OR_NULL, .doc = "the NVIDIA driver's version" },
	[SN_F_CUDA_DRIVER_VERSION] = { TOP("cuda_driver_version"),
		.docs = BOTH, .types = INT_OR_NULL,
		.doc = "the driver's CUDA version, 1000 x major + 10 x minor" },
	[SN_F_NCCL_VERSION] = { TOP("nccl_version"), .docs = BOTH,
		.types = STR_OR_NULL, .doc = "the version of the NCCL loaded" },
	[SN_F_NCCL_PATH] = { TOP("nccl_path"), .docs = BOTH,
		.types = STR_OR_NULL, .doc = "the path of the libnccl.so.2 loaded" },
	[SN_F_NCCL_SOURCE] = { TOP("nccl_source"), .docs = BOTH,
		.types = STR_OR_NULL,
		.doc = "where that NCCL came from: preload, user, ld_library_path, admin or system" },
	[SN_F_TRANSPORT] = { TOP("transport"), .docs = BOTH,
		.types = STR_OR_NULL,
		.doc = "the network NCCL used (fabric mode), e.g. NET/IB" },
	[SN_F_BLAME_NODE] = { TOP("blame_node"), .docs = BOTH,
		.types = STR_OR_NULL,
		.doc = "fabric mode: the node at fault (classes peer_failed and its own)" },
	[SN_F_TIMINGS] = { TOP("timings_ms"), .docs = BOTH,
		.types = SN_T_OBJECT,
		.doc = "milliseconds per phase (null: not reached)" },
	[SN_F_T_TOTAL] = { IN(SN_F_TIMINGS, "total"), .docs = BOTH,
		.types = NUM_OR_NULL, .decimals = 1,
		.doc = "the whole warmup, as the helper measured" },
	[SN_F_T_CUDA_INIT] = PHASE("cuda_init", "the CUDA driver's initialisation"),
	[SN_F_T_CONTEXTS] = PHASE("contexts", "a context on every GPU"),
	[SN_F_T_COMM_INIT] = PHASE("comm_init", "the NCCL communicator's set-up"),
	[SN_F_T_ALLREDUCE] = PHASE("allreduce", "the verified all-reduce"),
	[SN_F_T_BANDWIDTH] = PHASE("bandwidth", "the timed all-reduce (bandwidth mode)"),
	[SN_F_T_TEARDOWN] = PHASE("teardown", "destroying the communicator"),
	[SN_F_BUSBW] = { TOP("busbw_gbps"), .docs = BOTH,
		.types = NUM_OR_NULL, .decimals = 3,
		.doc = "bus bandwidth of the timed all-reduce, GB/s (null: not measured)" },
	[SN_F_COLLECTIVES] = { TOP("collectives"), .docs = BOTH,
		.types = SN_T_OBJECT | SN_T_NULL,
		.doc = "milliseconds per verified collective (null: none ran)" },
	[SN_F_C_ALLREDUCE] = COLL("allreduce"),
	[SN_F_C_BROADCAST] = COLL("broadcast"),
	[SN_F_C_ALLGATHER] = COLL("allgather"),
	[SN_F_C_REDUCESCATTER] = COLL("reducescatter"),
	[SN_F_C_SENDRECV] = COLL("sendrecv"),
	[SN_F_FAILED_OP] = { TOP("failed_op"), .docs = BOTH,
		.types = STR_OR_NULL,
		.doc = "the collective that failed (null: none)" },
	[SN_F_HEALTH_STATUS] = { TOP("health_status"), .docs = BOTH,
		.types = STR_OR_NULL, .since = 3,
		.doc = "the GPU health checks (NVML): ok, warn, gpu_health, gpu_busy or unchecked (null: not run, health=off)" },
	[SN_F_HEALTH_FINDINGS] = { TOP("health_findings"), .docs = BOTH,
		.types = STR_OR_NULL, .since = 3,
		.doc = "the checks that failed or warned, \"GPU N CHECK: detail\" joined by \"; \" (null: none)" },
	[SN_F_STATUS] = { TOP("status"), .docs = RES, .types = SN_T_STRING,
		.doc = "the exit code's name" },
	[SN_F_NOTE] = { TOP("note"), .docs = RES, .types = SN_T_STRING,
		.doc = "what was skipped, e.g. for MIG" },
	[SN_F_SUMMARY] = { TOP("summary"), .docs = RES, .types = SN_T_STRING,
		.doc = "the human summary line" },
	[SN_F_T_COLLECTIVES] = { IN(SN_F_TIMINGS, "collectives"), .docs = RES,
		.types = NUM_OR_NULL,
		.doc = "the verified collectives after the all-reduce" },
	[SN_F_FABRIC] = { TOP("fabric"), .docs = RES,
		.types = SN_T_OBJECT | SN_T_NULL,
		.doc = "fabric mode: the step's communicator and the node at fault" },
};

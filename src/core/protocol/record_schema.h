/* SPDX-License-Identifier: MIT */
/*
 * One schema for the JSON that crosses the tree: every field of the
 * fleet record (record.c writes them from this table, record_read.c
 * reads them back through it, docs/record.schema.json publishes it and
 * test_record_schema.sh checks that file against it), and the keys of
 * nccl-warmup's --json result that the record shares or the plugin reads
 * (the helper's result.c writes them, warmup_result.c reads them).  Each
 * of those keys is spelled here and nowhere else.
 */
#ifndef SN_RECORD_SCHEMA_H
#define SN_RECORD_SCHEMA_H

#include <stdbool.h>

/*
 * "version": the record format's major version.  Readers refuse any
 * other: it changes only when a field changes its meaning or goes away.
 */
#define SN_RECORD_VERSION 1
/*
 * "schema": the revision of this table (and of record.schema.json).
 * Bumped when a field is added; a reader of an older revision reads a
 * newer record of the same major version and ignores the keys it does
 * not know.  Records without "schema" are revision 1 (before "schema"
 * and "producer").
 */
#define SN_RECORD_SCHEMA 4
/* "producer": what wrote the record (configure's AC_INIT). */
#define SN_RECORD_PRODUCER PACKAGE_NAME " " PACKAGE_VERSION

/*
 * Failure classes, decided by the root side from what it saw (exit code,
 * signal, deadline), never from the helper's "status" text.  Stable: they
 * are Prometheus label values and report keys (sn_record_class_names).
 */
enum sn_record_class {
	SN_CLASS_OK = 0,
	SN_CLASS_USAGE,
	SN_CLASS_NO_GPUS,
	SN_CLASS_DUPLICATE_BUSID,
	SN_CLASS_CUDA_ERROR,
	SN_CLASS_NCCL_ERROR,
	SN_CLASS_WRONG_RESULT,
	SN_CLASS_LOW_BANDWIDTH,
	SN_CLASS_TIMEOUT,
	SN_CLASS_INTERNAL,
	SN_CLASS_CRASH,		/* killed by a signal */
	SN_CLASS_HELPER_START,	/* could not start the helper */
	/*
	 * Fabric warmup: another node of the step is at fault (exit 10;
	 * the record's "blame_node" names it), not a fault of this node.
	 */
	SN_CLASS_PEER_FAILED,
	SN_CLASS_TRANSPORT,	/* NCCL's network refused by policy (11) */
	/* Fabric warmup could not coordinate (12): ports taken, no MUNGE. */
	SN_CLASS_FABRIC_SETUP,
	/* NVML health checks (13, 14): the message names GPU and check. */
	SN_CLASS_GPU_HEALTH,
	SN_CLASS_GPU_BUSY,
	/* The container image's NCCL missing or broken (15): the job's. */
	SN_CLASS_CONTAINER_NCCL,
	SN_CLASS_COUNT
};

/* The class names, in enum order, NULL-terminated. */
extern const char *const sn_record_class_names[SN_CLASS_COUNT + 1];

/* The JSON types a field may take (a set). */
enum sn_field_type {
	SN_T_NULL = 1 << 0,
	SN_T_BOOLEAN = 1 << 1,
	SN_T_INTEGER = 1 << 2,
	SN_T_NUMBER = 1 << 3,
	SN_T_STRING = 1 << 4,
	SN_T_OBJECT = 1 << 5,	/* its fields are those whose parent it is */
	SN_T_ARRAY = 1 << 6,	/* of objects made of its child fields */
};

/* JSON Schema's name of each type, in the order to list them. */
struct sn_field_type_name {
	unsigned int bit;
	const char *name;
};
#define SN_FIELD_TYPES 7
extern const struct sn_field_type_name sn_field_type_names[SN_FIELD_TYPES];

/* Which documents carry a field (same key, same meaning in both). */
enum sn_field_doc {
	SN_IN_RECORD = 1 << 0,	/* the fleet record */
	SN_IN_RESULT = 1 << 1,	/* nccl-warmup --json */
};

/* The fields, in the record's order; the helper's own keys at the end. */
enum sn_field {
	SN_F_TOP = -1,		/* the parent of top-level fields */
	SN_F_RECORD,
	SN_F_VERSION,
	SN_F_SCHEMA,
	SN_F_PRODUCER,
	SN_F_TIME,
	SN_F_TS,
	SN_F_SOURCE,
	SN_F_NODE,
	SN_F_CLUSTER,
	SN_F_JOB,
	SN_F_STEP,
	SN_F_STEP_KIND,
	SN_F_USER,
	SN_F_UID,
	SN_F_MODE,
	SN_F_VERDICT,
	SN_F_CLASS,
	SN_F_FAULT,
	SN_F_EXIT_CODE,
	SN_F_SIGNAL,
	SN_F_POLICY,
	SN_F_REUSED,
	SN_F_ELAPSED_MS,
	SN_F_MESSAGE,
	SN_F_HANG,		/* a step killed in NCCL (schema 4) */
	SN_F_GPUS_REQUESTED,
	SN_F_GPU_COUNT,
	SN_F_GPU_MODEL,
	SN_F_GPUS,
	SN_F_GPU_INDEX,
	SN_F_GPU_BUSID,
	SN_F_GPU_UUID,
	SN_F_GPU_NAME,
	SN_F_GPU_NCCL_MEM_MIB,
	SN_F_DRIVER_VERSION,
	SN_F_CUDA_DRIVER_VERSION,
	SN_F_NCCL_VERSION,
	SN_F_NCCL_PATH,
	SN_F_NCCL_SOURCE,
	SN_F_TRANSPORT,
	SN_F_BLAME_NODE,
	SN_F_FABRIC,
	SN_F_FAB_NODES,		/* the fabric object's, in its order */
	SN_F_FAB_NODE_INDEX,
	SN_F_FAB_RANKS,
	SN_F_FAB_RANK_BASE,
	SN_F_FAB_COORDINATOR,
	SN_F_FAB_REFUSED,
	SN_F_TIMINGS,
	SN_F_T_TOTAL,
	SN_F_T_CUDA_INIT,	/* the phases, in warmup_result.h's order */
	SN_F_T_CONTEXTS,
	SN_F_T_COMM_INIT,
	SN_F_T_ALLREDUCE,
	SN_F_T_COLLECTIVES,
	SN_F_T_BANDWIDTH,
	SN_F_T_TEARDOWN,
	SN_F_BUSBW,
	SN_F_BYTES,
	SN_F_COLLECTIVES,
	SN_F_C_ALLREDUCE,	/* the collectives, in warmup_result.h's order */
	SN_F_C_BROADCAST,
	SN_F_C_ALLGATHER,
	SN_F_C_REDUCESCATTER,
	SN_F_C_SENDRECV,
	SN_F_FAILED_OP,
	SN_F_HEALTH_STATUS,	/* the GPU health checks (schema 3) */
	SN_F_HEALTH_FINDINGS,
	/* The helper's result only. */
	SN_F_STATUS,
	SN_F_NOTE,
	SN_F_SUMMARY,
	SN_F_COUNT
};

struct sn_field_def {
	const char *key;
	enum sn_field parent;	/* the object or array holding it */
	unsigned int docs;	/* enum sn_field_doc */
	unsigned int types;	/* enum sn_field_type */
	/* A reader refuses a record without it (null counts as without). */
	bool required;
	/*
	 * The "schema" revision that added it (0: the first).  Records of
	 * every revision since carry it: record.schema.json requires it.
	 */
	int since;
	int decimals;		/* a number's decimals in the record */
	double min;		/* a number's least value */
	double max;		/* its greatest; 0: none */
	const char *const *values;	/* a string's values; NULL: any */
	const char *doc;	/* what it is, for record.schema.json */
};

extern const struct sn_field_def sn_fields[SN_F_COUNT];

static inline const char *sn_field_key(enum sn_field f)
{
	return sn_fields[f].key;
}

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The result nccl-warmup reports to the plugin: one JSON object on its
 * stdout (--json).  The plugin never trusts it blindly: the exit status
 * decides, the JSON explains.  Parsing is strict and bounded (the helper
 * runs as the job user, so its output is untrusted input).
 */
#ifndef SN_WARMUP_RESULT_H
#define SN_WARMUP_RESULT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "protocol/helper_protocol.h"
#include "protocol/record_schema.h"

#define SN_RESULT_MAX_GPUS 64
#define SN_RESULT_MAX_BYTES 65536
/* timings_ms keys other than "total", and "collectives" keys. */
#define SN_RESULT_PHASES 7
#define SN_RESULT_COLLECTIVES 5

struct sn_warmup_result {
	int exit_code;			/* "exit_code" */
	char status[32];		/* "ok", "duplicate_busid", ... */
	char message[1024];		/* what failed (empty on success) */
	char summary[1024];		/* the human summary line */
	char note[256];			/* "MIG: NCCL communicator check skipped", ... */
	char nccl_version[32];
	size_t n_gpus;
	struct {
		int index;
		char busid[32];
		char uuid[64];
		char name[96];		/* "name": GPU model, "" if absent */
		double nccl_mem_mib;	/* "nccl_mem_mib", < 0 if absent/null */
	} gpus[SN_RESULT_MAX_GPUS];
	double busbw_gbps;		/* bandwidth mode, else 0 */
	long long bytes;		/* "bytes": its all-reduce size; < 0 absent */
	double total_ms;
	/*
	 * Optional keys (schema version 1 readers ignore unknown keys; these
	 * are read when present, for the fleet record): "" or < 0 when absent
	 * or null.
	 */
	double phase_ms[SN_RESULT_PHASES];	/* timings_ms.<phase> */
	char driver_version[64];
	long cuda_driver_version;
	char nccl_path[512];
	char nccl_source[32];
	char transport[64];
	double collective_ms[SN_RESULT_COLLECTIVES];	/* collectives.<op> */
	char failed_op[32];
	/* "fault": node, job or environment (fault.h); "" when absent. */
	char fault[16];
	/*
	 * Mode fabric: "fabric": {..., "blame_node": "n2" or null}, the node
	 * the helper found at fault ("" when none or another mode).  Only
	 * recorded: the plugin's verdict is the exit code.
	 */
	char blame_node[256];
	/* "fabric": the rest of it, for the record (< 0 / "": null). */
	struct sn_result_fabric {
		bool present;
		long nodes, node_index, ranks, rank_base, refused;
		char coordinator[64];
	} fabric;
	/* "health_status", "health_findings" ("" when absent or null). */
	char health_status[16];
	char health_findings[1024];
};

/* The keys of phase_ms[I] (in timings_ms) and collective_ms[I]. */
static inline const char *sn_result_phase_name(int i)
{
	return sn_field_key((enum sn_field)(SN_F_T_CUDA_INIT + i));
}

static inline const char *sn_result_collective_name(int i)
{
	return sn_field_key((enum sn_field)(SN_F_C_ALLREDUCE + i));
}

int sn_warmup_result_parse(const char *text, size_t len,
			   struct sn_warmup_result *out, struct sn_error *err);

#endif

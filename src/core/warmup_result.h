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

#include "error.h"

#define SN_RESULT_MAX_GPUS 64
#define SN_RESULT_MAX_BYTES 65536
/* timings_ms keys other than "total", and "collectives" keys. */
#define SN_RESULT_PHASES 6
#define SN_RESULT_COLLECTIVES 5

struct sn_warmup_result {
	int exit_code;			/* "exit_code" */
	char status[32];		/* "ok", "duplicate_busid", ... */
	char mode[16];			/* "check", "comm", "bandwidth" */
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
	double total_ms;
	/*
	 * Optional keys (schema version 1 readers ignore unknown keys; these
	 * are read when present): "" or < 0 when absent or null.
	 */
	double phase_ms[SN_RESULT_PHASES];	/* timings_ms.<phase> */
	char driver_version[64];
	long cuda_driver_version;
	char nccl_path[512];
	char nccl_source[32];
	char transport[64];
	double collective_ms[SN_RESULT_COLLECTIVES];	/* collectives.<op> */
	char failed_op[32];
};

extern const char *const sn_result_phase_names[SN_RESULT_PHASES];
extern const char *const sn_result_collective_names[SN_RESULT_COLLECTIVES];

int sn_warmup_result_parse(const char *text, size_t len,
			   struct sn_warmup_result *out, struct sn_error *err);

/* What the user should do for a helper exit code (one sentence). */
const char *sn_warmup_exit_hint(int exit_code);
/* Short name of an exit code ("duplicate PCI bus ID", ...). */
const char *sn_warmup_exit_name(int exit_code);
/* The JSON "status" word for an exit code ("duplicate_busid", ...). */
const char *sn_warmup_exit_status(int exit_code);

/*
 * Writes SRC into DST (CAP bytes) as the body of a JSON string (no quotes):
 * '"', '\\' and control characters escaped, bytes >= 0x80 replaced by '?'
 * so the output is always valid UTF-8.  Truncates at an escape boundary;
 * returns the length written.
 */
size_t sn_json_escape(char *dst, size_t cap, const char *src);

#endif

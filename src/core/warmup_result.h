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
#include "helper_protocol.h"

#define SN_RESULT_MAX_GPUS 64
#define SN_RESULT_MAX_BYTES 65536

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
	} gpus[SN_RESULT_MAX_GPUS];
	double busbw_gbps;		/* bandwidth mode, else 0 */
	double total_ms;
};

int sn_warmup_result_parse(const char *text, size_t len,
			   struct sn_warmup_result *out, struct sn_error *err);

#endif

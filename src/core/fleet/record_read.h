/* SPDX-License-Identifier: MIT */
/*
 * Reads one fleet record line (record.h) back, for spank-nccl-report(8).
 * Strict where the schema table (record_schema.h) is: the "record" tag,
 * version 1 (any "schema" revision), a node, a time, a known verdict and
 * class; the fields read are checked against their types and ranges;
 * optional fields may be null or absent (older records lack some).
 */
#ifndef SN_RECORD_READ_H
#define SN_RECORD_READ_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "protocol/json.h"

struct sn_record_view {
	double ts;			/* Unix time */
	char node[256];
	long job;			/* -1: none */
	char source[16];
	char mode[16];
	bool pass;
	char class[32];
	char fault[16];			/* "": a record before schema 3 */
	char message[1024];
	char hang[2048];		/* "": no hang record (step_hang.c) */
	bool reused;
	size_t gpu_count;
	char gpu_model[96];		/* "" unknown */
	char nccl_version[32];
	char driver_version[64];
	double busbw_gbps;		/* -1: not measured */
	double bytes;			/* its all-reduce size; -1: unknown */
	double total_ms;		/* warmup duration; -1: unknown */
};

/* SCRATCH is working space (large: allocate it once). */
int sn_record_read(const char *line, size_t len, struct sn_json *scratch,
		   struct sn_record_view *out, struct sn_error *err);

#endif

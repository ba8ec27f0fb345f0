/* SPDX-License-Identifier: MIT */
/*
 * The warmup record that test_record.c (its line, its reader, its file)
 * and test_prom.c (the node's .prom file) start from, and their
 * temporary directories.
 */
#ifndef SN_RECORD_TESTUTIL_H
#define SN_RECORD_TESTUTIL_H

#include "core_testutil.h"

#include "fleet/record.h"
#include "protocol/helper_protocol.h"

/* A pass of job 42, step 0 (alice, uid 1000) on n1, bandwidth mode,
 * carrying RES (NULL: none) as from a root run (the Prolog, a
 * confirmation). */
static inline void fill(struct sn_record *r, struct sn_warmup_result *res)
{
	memset(r, 0, sizeof(*r));
	r->source = "spank";
	r->time = 1795389000.25;
	snprintf(r->node, sizeof(r->node), "n1");
	r->job = 42;
	r->step = 0;
	snprintf(r->user, sizeof(r->user), "alice");
	r->uid = 1000;
	snprintf(r->mode, sizeof(r->mode), "bandwidth");
	r->pass = true;
	r->class = SN_CLASS_OK;
	r->exit_code = 0;
	r->policy = "fail";
	r->elapsed_ms = 1600;
	r->result = res;
	r->trusted = res;
}

/* RES: nccl-warmup's JSON of a bandwidth pass on two H200s, 350.5 GB/s. */
static inline void parse_helper(struct sn_warmup_result *res)
{
	static const char json[] =
		"{\"version\":1,\"status\":\"ok\",\"exit_code\":0,\"mode\":\"bandwidth\","
		"\"nccl_version\":\"2.28.9\",\"driver_version\":\"580.95.05\","
		"\"cuda_driver_version\":13000,\"nccl_path\":\"/usr/lib/libnccl.so.2\","
		"\"nccl_source\":\"system\",\"gpus\":[{\"index\":0,\"busid\":\"0000:01:00.0\","
		"\"uuid\":\"GPU-a\",\"name\":\"NVIDIA H200\",\"nccl_mem_mib\":296},"
		"{\"index\":1,\"busid\":\"0000:02:00.0\",\"uuid\":\"GPU-b\",\"name\":\"NVIDIA H200\","
		"\"nccl_mem_mib\":null}],\"timings_ms\":{\"cuda_init\":600,\"comm_init\":480,\"collectives\":15,"
		"\"bandwidth\":null,\"total\":1500},\"busbw_gbps\":350.5,"
		"\"collectives\":{\"allreduce\":1.25,\"sendrecv\":null}}";
	struct sn_error e;

	assert_int_equal(sn_warmup_result_parse(json, strlen(json), res, &e),
			 0);
}

/* DIR (64 bytes): a new directory under /tmp; then its removal. */
static inline void make_tmpdir(char *dir)
{
	snprintf(dir, 64, "/tmp/sn-test-record.XXXXXX");
	assert_non_null(mkdtemp(dir));
}

static inline void remove_tmpdir(const char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

#endif

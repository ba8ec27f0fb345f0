/* SPDX-License-Identifier: MIT */
/*
 * The fake libnccl.so.2's shared types: fake_nccl.c (communicators,
 * groups, the API) and fake_nccl_coll.c (NCCL_ALGO, data movement).
 */
#ifndef FAKE_NCCL_H
#define FAKE_NCCL_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "fake_common.h"

#define SAMPLE 4096

#ifndef FAKE_NCCL_DEFAULT_VERSION
#define FAKE_NCCL_DEFAULT_VERSION NCCL_VERSION_CODE
#endif

struct ncclComm {
	unsigned long long clique;	/* from the unique ID */
	int rank;
	int nranks;
	int device;
	bool blocking;
	ncclResult_t state;		/* what ncclCommGetAsyncError says */
	double ready_at;		/* InProgress until then (0: forever) */
	CUdeviceptr reserved;		/* the device memory NCCL "takes" */
};

enum op_kind {
	OP_INIT, OP_ALLREDUCE, OP_BROADCAST, OP_ALLGATHER, OP_REDUCESCATTER,
	OP_SEND, OP_RECV,
};

/* NCCL's names of the operations, for messages. */
FAKE_HIDDEN extern const char *const fake_op_func[];

struct op {
	enum op_kind kind;
	ncclComm_t comm;
	const void *send;
	void *recv;
	size_t count;
	int peer;			/* root (broadcast) or peer (p2p) */
	cudaStream_t stream;
};

/*
 * Whether NCCL_ALGO allows an algorithm that implements KIND, as NCCL
 * 2.24+ decides (older fakes: always).
 */
FAKE_HIDDEN bool fake_algo_allowed(enum op_kind kind);
/* The data movement of one collective over its ranks (ops by rank). */
FAKE_HIDDEN void fake_move_data(enum op_kind kind, struct op **by_rank,
				int n);

#endif

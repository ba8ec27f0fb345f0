/* SPDX-License-Identifier: MIT */
/*
 * NCCL, loaded at run time: the library the job itself will use, found in
 * the documented order (nccl-warmup(8), docs/admin-guide.md):
 *   1. an NCCL already in the process (the job's LD_PRELOAD),
 *   2. --nccl FILE|DIR (the user's --nccl-warmup=...,nccl=PATH),
 *   3. libnccl.so.2 in the job's LD_LIBRARY_PATH, in order,
 *   4. --nccl-default FILE|DIR (warmup_nccl= in plugstack.conf),
 *   5. the dynamic loader's own search (ld.so.cache, /usr/lib/...).
 */
#ifndef WU_NCCL_LOADER_H
#define WU_NCCL_LOADER_H

#include "nccl_api.h"
#include "warmup.h"

struct wu_nccl {
	void *handle;
	ncclResult_t (*get_version)(int *version);
	ncclResult_t (*get_unique_id)(ncclUniqueId *id);
	ncclResult_t (*comm_init_rank_config)(ncclComm_t *comm, int nranks,
					      ncclUniqueId id, int rank,
					      ncclConfig_t *config);
	ncclResult_t (*group_start)(void);
	ncclResult_t (*group_end)(void);
	ncclResult_t (*comm_get_async_error)(ncclComm_t comm,
					     ncclResult_t *state);
	ncclResult_t (*all_reduce)(const void *send, void *recv, size_t count,
				   ncclDataType_t type, ncclRedOp_t op,
				   ncclComm_t comm, cudaStream_t stream);
	ncclResult_t (*broadcast)(const void *send, void *recv, size_t count,
				  ncclDataType_t type, int root,
				  ncclComm_t comm, cudaStream_t stream);
	ncclResult_t (*all_gather)(const void *send, void *recv,
				   size_t count, ncclDataType_t type,
				   ncclComm_t comm, cudaStream_t stream);
	ncclResult_t (*reduce_scatter)(const void *send, void *recv,
				       size_t count, ncclDataType_t type,
				       ncclRedOp_t op, ncclComm_t comm,
				       cudaStream_t stream);
	ncclResult_t (*send)(const void *buf, size_t count,
			     ncclDataType_t type, int peer, ncclComm_t comm,
			     cudaStream_t stream);
	ncclResult_t (*recv)(void *buf, size_t count, ncclDataType_t type,
			     int peer, ncclComm_t comm, cudaStream_t stream);
	ncclResult_t (*comm_finalize)(ncclComm_t comm);
	ncclResult_t (*comm_destroy)(ncclComm_t comm);
	ncclResult_t (*comm_abort)(ncclComm_t comm);
	const char *(*get_error_string)(ncclResult_t rc);
	const char *(*get_last_error)(ncclComm_t comm);
};

/*
 * Finds, loads and resolves NCCL (run->nc = nc); records its path,
 * source and version in RUN.  On failure the message lists where it
 * looked.
 */
int wu_nccl_load(struct wu_run *run, struct wu_nccl *nc);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The fake NCCL's collectives: their entry points, which algorithms
 * NCCL_ALGO allows for each (as NCCL 2.24+ decides), and their data
 * movement on the host.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fake_nccl.h"

const char *const fake_op_func[] = {
	"Init", "AllReduce", "Broadcast", "AllGather", "ReduceScatter",
	"Send", "Recv",
};

/* Does algorithm ALGO (NCCL_ALGO's spelling) implement KIND? NCCL 2.24+:
 * Tree, CollNet*, NVLSTree only AllReduce; PAT only AllGather and
 * ReduceScatter; NVLS those three; Ring everything. */
static bool algo_supports(const char *algo, enum op_kind kind)
{
	if (!strcasecmp(algo, "ring"))
		return true;
	if (!strcasecmp(algo, "tree") || !strcasecmp(algo, "nvlstree") ||
	    !strcasecmp(algo, "collnetchain"))
		return kind == OP_ALLREDUCE;
	if (!strcasecmp(algo, "pat"))
		return kind == OP_ALLGATHER || kind == OP_REDUCESCATTER;
	if (!strcasecmp(algo, "nvls") || !strcasecmp(algo, "collnetdirect"))
		return kind == OP_ALLREDUCE || kind == OP_ALLGATHER ||
		       kind == OP_REDUCESCATTER;
	return false;
}

/* Whether the list "a,b" ("^a,b": all but those) allows an algorithm
 * that implements KIND. */
static bool list_allows(const char *list, size_t len, enum op_kind kind)
{
	static const char *const all[] = {
		"ring", "tree", "nvls", "nvlstree", "collnetdirect",
		"collnetchain", "pat",
	};
	bool negate = len > 0 && list[0] == '^';
	char items[256];

	snprintf(items, sizeof(items), "%.*s", (int)(len - negate),
		 list + negate);
	for (size_t a = 0; a < sizeof(all) / sizeof(all[0]); a++) {
		bool listed = false;
		char *save = NULL, copy[256];

		snprintf(copy, sizeof(copy), "%s", items);
		for (char *t = strtok_r(copy, ",", &save); t;
		     t = strtok_r(NULL, ",", &save))
			listed |= strcasecmp(t, all[a]) == 0;
		if (listed != negate && algo_supports(all[a], kind))
			return true;
	}
	return false;
}

/* NCCL_ALGO="LIST" or "LIST;func:LIST;..." (2.24+): the func-specific
 * list wins over the general one. */
bool fake_algo_allowed(enum op_kind kind)
{
	const char *algo = getenv("NCCL_ALGO");
	const char *general = NULL, *p;
	size_t general_len = 0;

	if (!algo || !*algo || kind == OP_SEND || kind == OP_RECV ||
	    fake_env_num("FAKE_NCCL_VERSION", FAKE_NCCL_DEFAULT_VERSION) < 22400)
		return true;
	for (p = algo; *p;) {
		size_t len = strcspn(p, ";");
		const char *colon = memchr(p, ':', len);

		if (!colon) {
			general = p;
			general_len = len;
		} else if ((size_t)(colon - p) == strlen(fake_op_func[kind]) &&
			   !strncasecmp(p, fake_op_func[kind], (size_t)(colon - p))) {
			return list_allows(colon + 1,
					   len - (size_t)(colon - p) - 1, kind);
		}
		p += len;
		if (*p)
			p++;
	}
	return !general || list_allows(general, general_len, kind);
}

/* Seconds one collective of BYTES takes for a target bus bandwidth. */
double fake_coll_seconds(size_t bytes, int nranks)
{
	double busbw = fake_env_num("FAKE_NCCL_BUSBW_GBPS", 0) * 1e9;
	double algbw;

	if (busbw <= 0 || nranks < 2)
		return 0;
	algbw = busbw * nranks / (2.0 * (nranks - 1));
	return (double)bytes / algbw;
}

size_t fake_op_send_floats(const struct op *op, int nranks)
{
	switch (op->kind) {
	case OP_REDUCESCATTER:
		return op->count * (size_t)nranks;
	case OP_RECV:
	case OP_INIT:
		return 0;
	default:
		return op->count;
	}
}

size_t fake_op_recv_floats(const struct op *op, int nranks)
{
	switch (op->kind) {
	case OP_ALLGATHER:
		return op->count * (size_t)nranks;
	case OP_SEND:
	case OP_INIT:
		return 0;
	default:
		return op->count;
	}
}

const char *fake_p2p_match(struct op *ops, int n, char *why, size_t len)
{
	bool *used = calloc((size_t)n + 1, sizeof(*used));

	if (!used) {
		snprintf(why, len, "fake: out of memory");
		return why;
	}
	for (int i = 0; i < n; i++) {
		struct op *s = &ops[i];
		bool matched = false;

		if (s->kind != OP_SEND)
			continue;
		for (int k = 0; k < n && !matched; k++) {
			struct op *r = &ops[k];

			if (used[k] || r->kind != OP_RECV || r->rank != s->peer ||
			    r->peer != s->rank || r->count != s->count)
				continue;
			memcpy(r->recv, s->send, s->count * sizeof(float));
			used[k] = matched = true;
		}
		if (!matched) {
			snprintf(why, len,
				 "fake: send from rank %d to %d has no matching recv in the group",
				 s->rank, s->peer);
			free(used);
			return why;
		}
	}
	for (int i = 0; i < n; i++) {
		if (ops[i].kind == OP_RECV && !used[i]) {
			snprintf(why, len,
				 "fake: recv on rank %d has no matching send",
				 ops[i].rank);
			free(used);
			return why;
		}
	}
	free(used);
	return NULL;
}

static float in_at(const struct op *o, size_t e)
{
	return ((const float *)o->send)[e];
}

void fake_move_data(enum op_kind kind, struct op **by_rank, int n)
{
	size_t count = by_rank[0]->count;

	for (size_t e = 0; e < count; e++) {
		float sum = 0;

		/* Large messages: reduce only both ends, so that the
		 * host's speed does not swamp the simulated time. */
		if (count > 2 * SAMPLE && e == SAMPLE)
			e = count - SAMPLE;
		switch (kind) {
		case OP_ALLREDUCE:
			for (int r = 0; r < n; r++)
				sum += in_at(by_rank[r], e);
			for (int r = 0; r < n; r++)
				((float *)by_rank[r]->recv)[e] = sum;
			break;
		case OP_BROADCAST:
			for (int r = 0; r < n; r++)
				((float *)by_rank[r]->recv)[e] =
					in_at(by_rank[by_rank[0]->peer], e);
			break;
		case OP_ALLGATHER:
			for (int r = 0; r < n; r++)
				for (int k = 0; k < n; k++)
					((float *)by_rank[r]->recv)
						[(size_t)k * count + e] =
						in_at(by_rank[k], e);
			break;
		case OP_REDUCESCATTER:
			for (int r = 0; r < n; r++) {
				sum = 0;
				for (int k = 0; k < n; k++)
					sum += in_at(by_rank[k],
						     (size_t)r * count + e);
				((float *)by_rank[r]->recv)[e] = sum;
			}
			break;
		default:
			break;
		}
	}
}

#define FLOAT_ONLY(type)                                                \
	do {                                                            \
		if ((type) != ncclFloat)                                \
			return fake_nccl_error(ncclInvalidArgument,           \
					 "fake: only floats are supported"); \
	} while (0)

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, ncclRedOp_t op,
			   ncclComm_t comm, cudaStream_t stream)
{
	FLOAT_ONLY(datatype);
	if (op != ncclSum)
		return fake_nccl_error(ncclInvalidArgument,
				 "fake: only sums are supported");
	return fake_nccl_enqueue((struct op){ .kind = OP_ALLREDUCE, .comm = comm,
				    .send = sendbuff, .recv = recvbuff,
				    .count = count, .stream = stream });
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, int root, ncclComm_t comm,
			   cudaStream_t stream)
{
	FLOAT_ONLY(datatype);
	if (comm && (root < 0 || root >= comm->nranks))
		return fake_nccl_error(ncclInvalidArgument, "fake: invalid root %d",
				 root);
	return fake_nccl_enqueue((struct op){ .kind = OP_BROADCAST, .comm = comm,
				    .send = sendbuff, .recv = recvbuff,
				    .count = count, .peer = root,
				    .stream = stream });
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff,
			   size_t sendcount, ncclDataType_t datatype,
			   ncclComm_t comm, cudaStream_t stream)
{
	FLOAT_ONLY(datatype);
	return fake_nccl_enqueue((struct op){ .kind = OP_ALLGATHER, .comm = comm,
				    .send = sendbuff, .recv = recvbuff,
				    .count = sendcount, .stream = stream });
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff,
			       size_t recvcount, ncclDataType_t datatype,
			       ncclRedOp_t op, ncclComm_t comm,
			       cudaStream_t stream)
{
	FLOAT_ONLY(datatype);
	if (op != ncclSum)
		return fake_nccl_error(ncclInvalidArgument,
				 "fake: only sums are supported");
	return fake_nccl_enqueue((struct op){ .kind = OP_REDUCESCATTER, .comm = comm,
				    .send = sendbuff, .recv = recvbuff,
				    .count = recvcount, .stream = stream });
}

ncclResult_t ncclSend(const void *sendbuff, size_t count,
		      ncclDataType_t datatype, int peer, ncclComm_t comm,
		      cudaStream_t stream)
{
	FLOAT_ONLY(datatype);
	if (comm && (peer < 0 || peer >= comm->nranks))
		return fake_nccl_error(ncclInvalidArgument, "fake: invalid peer %d",
				 peer);
	return fake_nccl_enqueue((struct op){ .kind = OP_SEND, .comm = comm,
				    .send = sendbuff, .count = count,
				    .peer = peer, .stream = stream });
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype,
		      int peer, ncclComm_t comm, cudaStream_t stream)
{
	FLOAT_ONLY(datatype);
	if (comm && (peer < 0 || peer >= comm->nranks))
		return fake_nccl_error(ncclInvalidArgument, "fake: invalid peer %d",
				 peer);
	return fake_nccl_enqueue((struct op){ .kind = OP_RECV, .comm = comm,
				    .recv = recvbuff, .count = count,
				    .peer = peer, .stream = stream });
}

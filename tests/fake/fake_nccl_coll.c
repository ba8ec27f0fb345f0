/* SPDX-License-Identifier: MIT */
/*
 * The fake NCCL's collectives: which algorithms NCCL_ALGO allows for each
 * (as NCCL 2.24+ decides), and their data movement on the host.
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

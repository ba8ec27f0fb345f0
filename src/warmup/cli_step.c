/* SPDX-License-Identifier: MIT */
/*
 * nccl-warmup's step options: what slurmstepd knows about the step
 * (job and step id, this node's index, the node count and list, the
 * fabric port range), passed by spank_nccl.so for the warmup across the
 * step's nodes.  They are checked against each other here, so a helper
 * never coordinates with a node list that disagrees with its own index.
 */
#include <stdio.h>
#include <string.h>

#include "fabric/hostlist.h"
#include "base/strutil.h"
#include "warmup.h"

enum {
	WU_STEP_JOB = 1u << 0,
	WU_STEP_STEP = 1u << 1,
	WU_STEP_INDEX = 1u << 2,
	WU_STEP_NODES = 1u << 3,
	WU_STEP_LIST = 1u << 4,
};

void wu_step_defaults(struct wu_step *step)
{
	memset(step, 0, sizeof(*step));
	step->ports.lo = SN_FABRIC_PORT_LO_DEFAULT;
	step->ports.hi = SN_FABRIC_PORT_HI_DEFAULT;
}

/* Plain decimal, 0 to MAX: no sign, no hex, no trailing text. */
static int parse_uint(const char *v, unsigned long max, unsigned int *out)
{
	unsigned long long n;

	if (sn_parse_u64(v, max, &n) < 0)
		return -1;
	*out = (unsigned int)n;
	return 0;
}

static int bad_uint(const char *name, const char *v, unsigned long lo,
		    unsigned long hi, char *err, size_t len)
{
	snprintf(err, len, "invalid --%s '%.80s': give a whole number from %lu to %lu",
		 name, v, lo, hi);
	return -1;
}

int wu_step_parse_value(int opt_char, const char *v, struct wu_step *step,
			char *err, size_t len)
{
	struct sn_error e;

	switch (opt_char) {
	case 'J':
		step->given |= WU_STEP_JOB;
		/* Slurm ids are uint32_t; step ids include the special
		 * SLURM_BATCH_SCRIPT/SLURM_EXTERN_CONT values near 2^32. */
		if (parse_uint(v, 0xffffffffUL, &step->job_id) < 0)
			return bad_uint(SN_HELPER_OPT_JOB_ID, v, 0, 0xffffffffUL,
					err, len);
		return 0;
	case 'S':
		step->given |= WU_STEP_STEP;
		if (parse_uint(v, 0xffffffffUL, &step->step_id) < 0)
			return bad_uint(SN_HELPER_OPT_STEP_ID, v, 0,
					0xffffffffUL, err, len);
		return 0;
	case 'I':
		step->given |= WU_STEP_INDEX;
		if (parse_uint(v, SN_HOSTLIST_MAX_HOSTS - 1,
			       &step->node_index) < 0)
			return bad_uint(SN_HELPER_OPT_NODE_INDEX, v, 0,
					SN_HOSTLIST_MAX_HOSTS - 1, err, len);
		return 0;
	case 'C':
		step->given |= WU_STEP_NODES;
		if (parse_uint(v, SN_HOSTLIST_MAX_HOSTS, &step->nodes) < 0 ||
		    step->nodes == 0)
			return bad_uint(SN_HELPER_OPT_NODES, v, 1,
					SN_HOSTLIST_MAX_HOSTS, err, len);
		return 0;
	case 'L':
		step->given |= WU_STEP_LIST;
		if (strlen(v) >= sizeof(step->nodelist)) {
			snprintf(err, len,
				 "invalid --%s: longer than %zu characters",
				 SN_HELPER_OPT_NODELIST,
				 sizeof(step->nodelist) - 1);
			return -1;
		}
		snprintf(step->nodelist, sizeof(step->nodelist), "%s", v);
		return 0;
	case 'P':
		if (sn_port_range_parse(v, &step->ports, &e) < 0) {
			snprintf(err, len, "invalid --%s '%.80s': %s",
				 SN_HELPER_OPT_FABRIC_PORTS, v, e.msg);
			return -1;
		}
		return 0;
	}
	return 0;
}

/* After the whole command line: the options must describe one step. */
int wu_step_check(struct wu_step *step, char *err, size_t len)
{
	const unsigned int ids = WU_STEP_JOB | WU_STEP_STEP;
	const unsigned int nodes = WU_STEP_INDEX | WU_STEP_NODES | WU_STEP_LIST;
	struct sn_error e;
	size_t count;

	if ((step->given & ids) && (step->given & ids) != ids) {
		snprintf(err, len, "--%s and --%s go together: give both",
			 SN_HELPER_OPT_JOB_ID, SN_HELPER_OPT_STEP_ID);
		return -1;
	}
	step->has_job = (step->given & ids) == ids;
	if ((step->given & nodes) && (step->given & nodes) != nodes) {
		snprintf(err, len, "--%s, --%s and --%s go together: give all three",
			 SN_HELPER_OPT_NODE_INDEX, SN_HELPER_OPT_NODES,
			 SN_HELPER_OPT_NODELIST);
		return -1;
	}
	if ((step->given & nodes) != nodes)
		return 0;
	if (sn_hostlist_count(step->nodelist, &count, &e) < 0) {
		snprintf(err, len, "invalid --%s '%.80s': %s",
			 SN_HELPER_OPT_NODELIST, step->nodelist, e.msg);
		return -1;
	}
	if (count != step->nodes) {
		snprintf(err, len,
			 "--%s '%.80s' names %zu nodes but --%s is %u: pass the step's SLURM_STEP_NODELIST and S_JOB_NNODES",
			 SN_HELPER_OPT_NODELIST, step->nodelist, count,
			 SN_HELPER_OPT_NODES, step->nodes);
		return -1;
	}
	if (step->node_index >= step->nodes) {
		snprintf(err, len,
			 "--%s %u is not below --%s %u (node indexes count from 0)",
			 SN_HELPER_OPT_NODE_INDEX, step->node_index,
			 SN_HELPER_OPT_NODES, step->nodes);
		return -1;
	}
	step->has_nodes = true;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Whose fault (fault.h): the names, the decisions, the hints. */
#include <string.h>

#include "fault.h"
#include "helper_protocol.h"

const char *const sn_fault_names[SN_FAULT_COUNT + 1] = {
	[SN_FAULT_NONE] = NULL,
	[SN_FAULT_NODE] = "node",
	[SN_FAULT_JOB] = "job",
	[SN_FAULT_ENVIRONMENT] = "environment",
	[SN_FAULT_COUNT] = NULL,
};

const char *sn_fault_name(enum sn_fault f)
{
	return (unsigned int)f < SN_FAULT_COUNT ? sn_fault_names[f] : NULL;
}

enum sn_fault sn_fault_parse(const char *name)
{
	for (int f = SN_FAULT_NODE; name && f < SN_FAULT_COUNT; f++)
		if (strcmp(name, sn_fault_names[f]) == 0)
			return (enum sn_fault)f;
	return SN_FAULT_NONE;
}

/* Failures that a job's own NCCL or NCCL_* settings can cause. */
static bool nccl_shaped(int code)
{
	switch (code) {
	case SN_WARMUP_NCCL_ERROR:
	case SN_WARMUP_LOW_BANDWIDTH:
	case SN_WARMUP_TIMEOUT:
	case SN_WARMUP_TRANSPORT:
		return true;
	default:
		return false;
	}
}

enum sn_fault sn_fault_decide(const struct sn_fault_facts *f)
{
	switch (f->exit_code) {
	case SN_WARMUP_OK:
		return SN_FAULT_NONE;
	/* The step asked for no GPU: a request, not a node, is wrong. */
	case SN_WARMUP_NO_GPUS:
	/* The image the job chose has no usable NCCL (issue 21). */
	case SN_WARMUP_CONTAINER_NCCL:
		return SN_FAULT_JOB;
	case SN_WARMUP_PEER_FAILED:
	case SN_WARMUP_FABRIC_SETUP:
		return SN_FAULT_ENVIRONMENT;
	/* Wrong data is the node's whatever the job set: silent corruption
	 * must never hide behind a user's setting. */
	case SN_WARMUP_WRONG_RESULT:
		return SN_FAULT_NODE;
	/* NVML (issue 24): the node's GPU, or a process left on it that the
	 * node's admins must end (often an earlier job's). */
	case SN_WARMUP_GPU_HEALTH:
	case SN_WARMUP_GPU_BUSY:
		return SN_FAULT_NODE;
	case SN_WARMUP_NCCL_ERROR:
		if (f->job_nccl)
			return SN_FAULT_JOB;
		break;
	default:
		break;
	}
	if (nccl_shaped(f->exit_code) && f->job_nccl_env)
		return SN_FAULT_JOB;
	return SN_FAULT_NODE;
}

enum sn_fault sn_fault_of_class(enum sn_record_class c)
{
	switch (c) {
	case SN_CLASS_OK:
		return SN_FAULT_NONE;
	case SN_CLASS_NO_GPUS:
	case SN_CLASS_CONTAINER_NCCL:
		return SN_FAULT_JOB;
	case SN_CLASS_PEER_FAILED:
	case SN_CLASS_FABRIC_SETUP:
		return SN_FAULT_ENVIRONMENT;
	default:
		return SN_FAULT_NODE;
	}
}

bool sn_fault_from_helper(enum sn_record_class c)
{
	return c != SN_CLASS_OK && c != SN_CLASS_CRASH &&
	       c != SN_CLASS_HELPER_START && c != SN_CLASS_INTERNAL;
}

const char *sn_fault_hint(int code, enum sn_fault f)
{
	if (f != SN_FAULT_JOB || code == SN_WARMUP_NO_GPUS ||
	    code == SN_WARMUP_CONTAINER_NCCL)
		return sn_warmup_exit_hint(code);
	if (code == SN_WARMUP_TRANSPORT)
		return "the job's NCCL settings chose a network the site forbids: fix NCCL_NET, NCCL_IB_HCA or NCCL_SOCKET_IFNAME in the job (or drop them); this is the job's setting, not a fault of the node";
	return "the job's own NCCL (its nccl=, LD_PRELOAD or LD_LIBRARY_PATH) or its NCCL_* settings failed, as the message says: fix them, or run without them to use the node's NCCL; this is the job's setting, not a fault of the node";
}

bool sn_fault_is_nccl_setting(const char *entry)
{
	/* Logging, and RAS, whose listener never fails an init (NCCL
	 * warns and runs on) and which ras=step sets in every step. */
	static const char *const logging[] = {
		"NCCL_DEBUG=", "NCCL_DEBUG_FILE=", "NCCL_DEBUG_SUBSYS=",
		"NCCL_RAS_ADDR=", "NCCL_RAS_ENABLE=",
	};

	if (strncmp(entry, "NCCL_", 5) != 0 || !strchr(entry, '='))
		return false;
	for (size_t i = 0; i < sizeof(logging) / sizeof(logging[0]); i++)
		if (strncmp(entry, logging[i], strlen(logging[i])) == 0)
			return false;
	return true;
}

/* SPDX-License-Identifier: MIT */
/* Whose fault (fault.h): the names, the decisions, the hints. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "protocol/fault.h"
#include "protocol/helper_protocol.h"

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
		return "the job's NCCL settings chose a network the site forbids, not a fault of the node: fix or drop NCCL_NET, NCCL_IB_HCA, NCCL_SOCKET_IFNAME";
	return "the job's NCCL or NCCL_* setting failed, not a fault of the node: fix or unset the setting named above";
}

/* NCCL's own "(run with NCCL_DEBUG=INFO for details)" in its error text. */
static const char *nccl_debug_advice(const char *s, const char *end)
{
	static const char open[] = " (run with NCCL_DEBUG=";

	for (const char *p = strstr(s, open); p && p < end;
	     p = strstr(p + 1, open)) {
		const char *close = strstr(p, " for details)");

		if (close && close < end)
			return p;
	}
	return NULL;
}

/* Appends S[0..N) to O (bounded, NUL-terminated). */
static void put(char *o, size_t len, size_t *used, const char *s, size_t n)
{
	if (*used + 1 >= len)
		return;
	if (n > len - 1 - *used)
		n = len - 1 - *used;
	memcpy(o + *used, s, n);
	*used += n;
	o[*used] = '\0';
}

/* MESSAGE up to SN_DETAIL_SEP, without NCCL's debug advice, into OUT. */
static void short_message(const char *message, char *out, size_t len)
{
	const char *end = strstr(message, SN_DETAIL_SEP);
	const char *p = message, *adv;
	size_t used = 0;

	if (!end)
		end = message + strlen(message);
	out[0] = '\0';
	while ((adv = nccl_debug_advice(p, end))) {
		put(out, len, &used, p, (size_t)(adv - p));
		p = strstr(adv, " for details)") + strlen(" for details)");
	}
	put(out, len, &used, p, (size_t)(end - p));
}

static bool debug_on(const char *nccl_debug)
{
	return nccl_debug && (strcasecmp(nccl_debug, "INFO") == 0 ||
			      strcasecmp(nccl_debug, "TRACE") == 0);
}

void sn_fault_tell(const struct sn_fault_tell_in *in, char *buf, size_t len)
{
	const char *colon = strstr(in->hint, ": ");
	char what[SN_FAULT_TELL_MAX + 1], fix[SN_FAULT_TELL_MAX + 1];
	char head[600];
	size_t room, n;
	int used;

	/* Lines 2 and 3: the hint's "WHY: WHAT TO DO". */
	snprintf(fix, sizeof(fix), "%s", colon ? colon + 2 : in->hint);
	if (in->nccl_advice && !debug_on(in->nccl_debug)) {
		n = strlen(fix);
		snprintf(fix + n, sizeof(fix) - n,
			 " (NCCL_DEBUG=INFO shows why)");
	}
	/* Line 1, cut to what the three lines leave of SN_FAULT_TELL_MAX
	 * (each line has its "spank-nccl: "). */
	snprintf(head, sizeof(head), "warmup failed on node %s (GPUs %s): ",
		 in->node, in->gpus);
	short_message(in->message && in->message[0] ? in->message : "?",
		      what, sizeof(what));
	n = 3 * strlen("spank-nccl: ") + strlen(head) + strlen(fix) +
	    (colon ? (size_t)(colon - in->hint) : 0);
	room = n < SN_FAULT_TELL_MAX ? SN_FAULT_TELL_MAX - n : 0;
	if (strlen(what) > room && room >= 4)
		strcpy(what + room - 3, "...");
	else if (strlen(what) > room)
		what[room] = '\0';
	used = snprintf(buf, len, "%s%s\n", head, what);
	if (colon)
		used += snprintf(buf + (used < (int)len ? used : (int)len),
				 len > (size_t)used ? len - (size_t)used : 0,
				 "%.*s\n", (int)(colon - in->hint), in->hint);
	snprintf(buf + (used < (int)len ? used : (int)len),
		 len > (size_t)used ? len - (size_t)used : 0, "%s%s%s", fix,
		 in->verbose && in->message ? "\ndetail: " : "",
		 in->verbose && in->message ? in->message : "");
}

bool sn_fault_is_nccl_setting(const char *entry)
{
	/* Logging, and RAS, whose listener never fails an init (NCCL
	 * warns and runs on) and which ras=step sets in every step. */
	static const char *const logging[] = {
		"NCCL_DEBUG", "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS",
		"NCCL_RAS_ADDR", "NCCL_RAS_ENABLE",
	};
	/* Named NCCL_* but not read by NCCL: build-time paths (PyTorch's
	 * setup.py, CMake's FindNCCL) and NVIDIA images' version label
	 * (NCCL_VERSION=2.28.3-1 in the NGC/CUDA images' environment). */
	static const char *const not_nccls[] = {
		"NCCL_VERSION", "NCCL_HOME", "NCCL_ROOT", "NCCL_ROOT_DIR",
		"NCCL_INCLUDE_DIR", "NCCL_LIB_DIR", "NCCL_LIBRARY",
		"NCCL_LIBRARIES",
	};
	size_t n = strcspn(entry, "=");
	size_t i;

	if (strncmp(entry, "NCCL_", 5) != 0 || !entry[n])
		return false;
	for (i = 0; i < sizeof(logging) / sizeof(logging[0]); i++)
		if (strlen(logging[i]) == n && strncmp(entry, logging[i], n) == 0)
			return false;
	for (i = 0; i < sizeof(not_nccls) / sizeof(not_nccls[0]); i++)
		if (strlen(not_nccls[i]) == n &&
		    strncmp(entry, not_nccls[i], n) == 0)
			return false;
	return true;
}

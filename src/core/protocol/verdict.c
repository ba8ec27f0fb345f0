/* SPDX-License-Identifier: MIT */
/* Who is blamed for a failed warmup (verdict.h): the decision table. */
#include <stddef.h>
#include <string.h>

#include "protocol/verdict.h"

bool sn_verdict_needs_confirm(enum sn_record_class c)
{
	/* A pass needs nothing; a usage error is the command line's. */
	return c != SN_CLASS_OK && c != SN_CLASS_USAGE;
}

enum sn_confirm_state sn_confirm_state_of(enum sn_record_class c)
{
	switch (c) {
	case SN_CLASS_OK:
		return SN_CONFIRM_PASSED;
	/* Its own command line, or classes only a fabric warmup or a
	 * container image has (the confirmation is neither): no word on
	 * the node. */
	case SN_CLASS_USAGE:
	/* The step's CUDA_VISIBLE_DEVICES, which an admin's profile may
	 * have set to nonsense on a step without GPUs, names none. */
	case SN_CLASS_NO_GPUS:
	case SN_CLASS_PEER_FAILED:
	case SN_CLASS_TRANSPORT:
	case SN_CLASS_FABRIC_SETUP:
	case SN_CLASS_CONTAINER_NCCL:
	case SN_CLASS_COUNT:
		return SN_CONFIRM_INCONCLUSIVE;
	/*
	 * Everything else, seen by root with a clean environment and the
	 * site's NCCL, is the node's: its GPUs (duplicate bus IDs, health,
	 * a leftover process), driver, NCCL, or the site's
	 * nccl-warmup (would not start, crashed, hung).
	 */
	default:
		return SN_CONFIRM_FAILED;
	}
}

const char *sn_confirm_state_name(enum sn_confirm_state s)
{
	switch (s) {
	case SN_CONFIRM_PASSED: return "passed";
	case SN_CONFIRM_FAILED: return "failed";
	case SN_CONFIRM_INCONCLUSIVE: return "inconclusive";
	default: return NULL;
	}
}

enum sn_fault sn_verdict_decide(const struct sn_verdict_facts *f)
{
	if (f->helper_class == SN_CLASS_OK)
		return SN_FAULT_NONE;
	/* The one way to the node: its own clean check failed too. */
	if (f->confirm == SN_CONFIRM_FAILED &&
	    sn_verdict_needs_confirm(f->helper_class))
		return SN_FAULT_NODE;
	/* The helper may take the blame itself, or give it to the
	 * environment: neither harms a node. */
	if (f->helper_fault == SN_FAULT_JOB ||
	    f->helper_fault == SN_FAULT_ENVIRONMENT)
		return f->helper_fault;
	switch (f->helper_class) {
	case SN_CLASS_PEER_FAILED:
	case SN_CLASS_FABRIC_SETUP:
		return SN_FAULT_ENVIRONMENT;
	default:
		break;
	}
	/* Between nodes, a failure no node can be shown to have caused is
	 * the environment's (the network, another node); on one node it is
	 * the job's: its NCCL, settings or processes. */
	return f->fabric ? SN_FAULT_ENVIRONMENT : SN_FAULT_JOB;
}

static bool env_name_ok(const char *s, size_t len)
{
	if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

int sn_confirm_env_parse(char *text, char **envp, size_t cap,
			 struct sn_error *err)
{
	size_t n = 0;
	unsigned int line = 0;
	char *next;

	for (char *l = text; l && *l; l = next) {
		char *eq;

		line++;
		next = strchr(l, '\n');
		if (next)
			*next++ = '\0';
		while (*l == ' ' || *l == '\t')
			l++;
		if (!*l || *l == '#')
			continue;
		eq = strchr(l, '=');
		if (!eq || !env_name_ok(l, (size_t)(eq - l)) ||
		    strpbrk(l, "\r\t")) {
			sn_error_set(err, "line %u: expected NAME=VALUE", line);
			return -1;
		}
		if (n + 1 >= cap) {
			sn_error_set(err, "line %u: more than %zu variables",
				     line, cap - 1);
			return -1;
		}
		envp[n++] = l;
	}
	envp[n] = NULL;
	return (int)n;
}

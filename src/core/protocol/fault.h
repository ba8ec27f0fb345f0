/* SPDX-License-Identifier: MIT */
/*
 * Whose fault a failed warmup is (issue 23): the node's (its GPUs,
 * driver, network, or NCCL on the node's default set-up), the job's (its
 * own NCCL library or NCCL_* settings, a user option) or the
 * environment's (ports or MUNGE for the fabric coordination, another
 * node of the step).  nccl-warmup decides it from what it knows and
 * reports it ("fault" in --json); the root side takes the helper's word
 * for the failures the helper reported itself and decides the rest (a
 * crash, its own deadline, a helper that would not start) from the class
 * alone.  Records, syslog and metrics carry it; alerts and
 * spank-nccl-report count only "node".
 */
#ifndef SN_FAULT_H
#define SN_FAULT_H

#include <stdbool.h>

#include "protocol/record_schema.h"

enum sn_fault {
	SN_FAULT_NONE = 0,	/* a pass: no fault */
	SN_FAULT_NODE,
	SN_FAULT_JOB,
	SN_FAULT_ENVIRONMENT,
	SN_FAULT_COUNT
};

/* "node", "job", "environment"; NULL for SN_FAULT_NONE. */
extern const char *const sn_fault_names[SN_FAULT_COUNT + 1];
const char *sn_fault_name(enum sn_fault f);
/* The fault named NAME, or SN_FAULT_NONE if it names none. */
enum sn_fault sn_fault_parse(const char *name);

/* What the helper knows when it fails. */
struct sn_fault_facts {
	int exit_code;		/* enum sn_warmup_exit */
	/*
	 * The job's own NCCL (its nccl=, LD_PRELOAD or LD_LIBRARY_PATH) could
	 * not be used: it would not load or lacks entry points.  One that
	 * loaded and then failed is no proof against the node (NVLink, the
	 * fabric manager fail the job's NCCL as well as the node's).
	 */
	bool job_nccl;
	/* NCCL_* settings of the job's in effect (logging ones aside). */
	bool job_nccl_env;
};

/* The helper's decision for a failure (SN_FAULT_NONE for exit 0). */
enum sn_fault sn_fault_decide(const struct sn_fault_facts *f);
/*
 * The root side's decision for a record of class C, when the helper said
 * nothing (it crashed, ran out of time, did not start, or printed no
 * valid result): the class alone.
 */
enum sn_fault sn_fault_of_class(enum sn_record_class c);
/*
 * Whether the root side takes the helper's word for a record of class C:
 * only where the helper ended by itself with that class's exit code.
 */
bool sn_fault_from_helper(enum sn_record_class c);
/*
 * The hint the plugin's message ends with, for exit code CODE and fault
 * F: a job's own fault never says "report the node".
 */
const char *sn_fault_hint(int code, enum sn_fault f);
/*
 * Whether an environment entry NAME=VALUE is a job's NCCL_* setting that
 * shapes what NCCL does: the one predicate of "the job's NCCL_*" (a
 * failure's fault, "NCCL_* in effect").  Not NCCL_DEBUG* (they only
 * log), NCCL_RAS_ADDR and NCCL_RAS_ENABLE (they only start or move a
 * monitor), nor NCCL_* names NCCL never reads (build paths, images'
 * NCCL_VERSION label).
 */
bool sn_fault_is_nccl_setting(const char *entry);

/* What a user reads of a failed warmup: at most this many characters,
 * "spank-nccl: " of each of the three lines included. */
#define SN_FAULT_TELL_MAX 300

struct sn_fault_tell_in {
	const char *node, *gpus;
	const char *message;	/* what failed; after SN_DETAIL_SEP: detail */
	const char *hint;	/* "WHY: WHAT TO DO" (sn_fault_hint) */
	const char *nccl_debug;	/* the job's NCCL_DEBUG, or NULL */
	bool nccl_advice;	/* NCCL's log would say more */
	bool verbose;		/* a 4th line: "detail: " and all of MESSAGE */
};

/*
 * Three lines, '\n' between: "warmup failed on node N (GPUs G): WHAT"
 * (cut to fit, NCCL's "(run with NCCL_DEBUG=... for details)" and the
 * detail left out), why, and what to do ("NCCL_DEBUG=INFO shows why"
 * only when NCCL_ADVICE and NCCL_DEBUG is not INFO or TRACE).
 */
void sn_fault_tell(const struct sn_fault_tell_in *in, char *buf, size_t len);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * slurmstepd, user_init, after the warmup: the fleet record (record.h) to
 * the admin's sinks; at a task's exit, a killed step's hang record
 * (step_hang.c) (record_file=, record_syslog=, prom_dir=).  Written
 * here, by slurmstepd, never by the helper (which runs as the user),
 * through sinks.c (shared with the Prolog's nccl-warmup-record) inside
 * the privileged section (as_root.h).  A sink that fails (missing
 * directory, full disk, read-only file system) is logged to slurmd's log
 * and never fails the step.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "helper_exec.h"
#include "plugin.h"
#include "as_root.h"
#include "fleet/record.h"
#include "fleet/sinks.h"
#include "spank_wrap.h"
#include "step_confirm.h"
#include "base/strutil.h"

#ifndef SLURM_EXTERN_CONT
#define SLURM_EXTERN_CONT 0xfffffffc
#endif
#ifndef SLURM_INTERACTIVE_STEP
#define SLURM_INTERACTIVE_STEP 0xfffffffa
#endif
/* Slurm's special step ids, by name; other special ids: NULL. */
static const char *step_kind(uint32_t id)
{
	switch (id) {
	case SLURM_BATCH_SCRIPT: return "batch";
	case SLURM_EXTERN_CONT: return "extern";
	case SLURM_INTERACTIVE_STEP: return "interactive";
	default: return id < 0xfffffff0u ? "normal" : NULL;
	}
}

static void user_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *found = NULL;
	char scratch[4096];

	buf[0] = '\0';
	if (getpwuid_r(uid, &pw, scratch, sizeof(scratch), &found) == 0 &&
	    found)
		sn_strlcpy(buf, found->pw_name, len);
}

static void write_sinks(const struct sn_config *cfg, const struct sn_record *r)
{
	const struct sn_sinks sinks = {
		.record_file = cfg->record_file,
		.syslog = cfg->record_syslog,
		.prom_dir = cfg->prom_dir,
	};
	struct sn_sinks_report rep;

	if (!sn_sinks_write(&sinks, r, &rep))
		return;
	if (rep.file.msg[0])
		sn_log_info("warmup record not written: %s (record_file= in plugstack.conf); the step runs",
			    rep.file.msg);
	if (rep.syslog.msg[0])
		sn_log_info("warmup record not sent to syslog: %s (record_syslog= in plugstack.conf); the step runs",
			    rep.syslog.msg);
	if (rep.prom.msg[0])
		sn_log_info("warmup metrics not written: %s (prom_dir= in plugstack.conf); the step runs",
			    rep.prom.msg);
}

/* R's fields that name the step and its user, at NODE, now. */
static void record_step(struct sn_record *r, const struct sn_job_ids *ids,
			const char *node)
{
	r->source = "spank";
	r->time = sn_clock_wall_s();
	sn_strlcpy(r->node, node, sizeof(r->node));
	r->job = ids->job_id;
	r->step_kind = step_kind(ids->step_id);
	r->step = r->step_kind && strcmp(r->step_kind, "normal") == 0 ?
		  (long)ids->step_id : -1;
	sn_strlcpy(r->cluster, ids->cluster, sizeof(r->cluster));
	user_name(ids->uid, r->user, sizeof(r->user));
	r->uid = ids->uid;
}

static bool have_sinks(const struct sn_config *cfg)
{
	return cfg->record_file[0] || cfg->record_syslog || cfg->prom_dir[0];
}

/* The admin's sinks are root's: written as root (as_root.h). */
static int write_as_root(const struct sn_config *cfg, const struct sn_record *r)
{
	struct sn_priv priv = SN_PRIV_INIT;
	int rc = 0;

	if (sn_priv_enter(&priv, "the warmup record") == 0)
		write_sinks(cfg, r);
	if (sn_priv_leave(&priv) < 0)
		rc = -1;
	return rc;
}

int sn_step_record(const struct sn_plugin *p, const struct sn_job_ids *ids,
		   const struct sn_warmup_facts *f)
{
	const struct sn_config *cfg = &p->cfg;
	struct sn_record *r;
	int rc;

	if (!have_sinks(cfg))
		return 0;
	r = calloc(1, sizeof(*r));
	if (!r) {
		sn_log_info("warmup record: out of memory, not written");
		return 0;
	}
	record_step(r, ids, f->node);
	sn_strlcpy(r->mode, sn_warmup_mode_name(f->mode), sizeof(r->mode));
	sn_strlcpy(r->gpus_requested, f->gpus, sizeof(r->gpus_requested));
	r->pass = f->ok;
	r->class = f->ok ? SN_CLASS_OK : sn_outcome_class(f->outcome);
	r->exit_code = f->outcome->exited ? f->outcome->exit_code : -1;
	r->signal = f->outcome->signaled ? f->outcome->signal : 0;
	r->policy = cfg->warmup_policy == SN_POLICY_WARN ? "warn" : "fail";
	r->reused = f->reused;
	r->elapsed_ms = f->outcome->elapsed_ms;
	if (!f->ok && f->message)
		snprintf(r->message, sizeof(r->message), "%s", f->message);
	r->result = f->result;
	r->trusted = f->trusted;
	/* Decided by the root side (verdict.h), never the helper's word. */
	r->fault = f->ok ? SN_FAULT_NONE : f->fault;

	rc = write_as_root(cfg, r);
	free(r);
	return rc;
}

int sn_step_record_hang(const struct sn_plugin *p, const struct sn_job_ids *ids,
			const char *node, int signal, const char *verdict,
			double age_s)
{
	struct sn_record *r;
	int rc;

	r = calloc(1, sizeof(*r));
	if (!r) {
		sn_log_info("hang record: out of memory, not written");
		return 0;
	}
	record_step(r, ids, node);
	r->class = SN_CLASS_TIMEOUT;
	r->fault = SN_FAULT_JOB;	/* the job's own processes said so */
	r->exit_code = -1;
	r->signal = signal;
	r->elapsed_ms = -1;
	snprintf(r->message, sizeof(r->message),
		 "the step was killed (signal %d) while its NCCL communicators were not all finished (RAS asked %.0f s before)",
		 signal, age_s);
	sn_strlcpy(r->hang, verdict, sizeof(r->hang));
	rc = write_as_root(&p->cfg, r);
	free(r);
	return rc;
}

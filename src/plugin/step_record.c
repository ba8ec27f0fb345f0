/* SPDX-License-Identifier: MIT */
/*
 * slurmstepd, user_init, after the warmup: the fleet record (record.h) to
 * the admin's sinks (record_file=, record_syslog=, prom_dir=).  Written
 * here, by slurmstepd, never by the helper (which runs as the user).  A
 * sink that fails (missing directory, full disk, read-only file system)
 * is logged to slurmd's log and never fails the step.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "helper_exec.h"
#include "plugin.h"
#include "prom.h"
#include "record.h"
#include "spank_wrap.h"
#include "strutil.h"

static enum sn_record_class outcome_class(const struct sn_helper_outcome *o)
{
	if (o->failed_stage != SN_HELPER_STAGE_NONE)
		return SN_CLASS_HELPER_START;
	if (o->timed_out)
		return SN_CLASS_TIMEOUT;
	if (o->signaled)
		return SN_CLASS_CRASH;
	return sn_record_class_of_exit(o->exit_code);
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

/*
 * In user_init slurmstepd runs with euid/egid = the job user's and real
 * uid 0 (seteuid only; see docs/design.md), so the admin's root-owned
 * sinks need root back for the write, and the user's identity again
 * right after.  Returns true when it switched.
 */
static bool become_root(uid_t *euid, gid_t *egid)
{
	*euid = geteuid();
	*egid = getegid();
	if (*euid == 0 || getuid() != 0)
		return false;
	if (seteuid(0) < 0)
		return false;
	if (setegid(0) < 0) {
		if (seteuid(*euid) < 0)
			sn_log_error("cannot return to uid %u after writing the warmup record",
				     (unsigned int)*euid);
		return false;
	}
	return true;
}

static int back_to_user(uid_t euid, gid_t egid)
{
	if (setegid(egid) < 0 || seteuid(euid) < 0) {
		sn_log_error("cannot return to uid %u gid %u after writing the warmup record",
			     (unsigned int)euid, (unsigned int)egid);
		return -1;
	}
	return 0;
}

static void write_sinks(const struct sn_config *cfg, const struct sn_record *r)
{
	char *line = malloc(SN_RECORD_MAX_BYTES);
	struct sn_error err;
	size_t len;

	if (!line) {
		sn_log_info("warmup record: out of memory, not written");
		return;
	}
	len = sn_record_format(r, line, SN_RECORD_MAX_BYTES);
	if (!len) {
		sn_log_info("warmup record larger than %d bytes, not written",
			    SN_RECORD_MAX_BYTES);
	} else {
		if (cfg->record_file[0] &&
		    sn_record_append(cfg->record_file, r->node, line, len,
				     &err) < 0)
			sn_log_info("warmup record not written: %s (record_file= in plugstack.conf); the step runs",
				    err.msg);
		if (cfg->record_syslog)
			sn_record_syslog(line, len);
	}
	free(line);
	/*
	 * A reused pass ran nothing on the GPUs: the metrics keep describing
	 * the last real warmup (the record line still says it was reused).
	 */
	if (cfg->prom_dir[0] && !r->reused &&
	    sn_prom_update(cfg->prom_dir, r, &err) < 0)
		sn_log_info("warmup metrics not written: %s (prom_dir= in plugstack.conf); the step runs",
			    err.msg);
}

int sn_step_record(const struct sn_plugin *p, const struct sn_job_ids *ids,
		   const struct sn_warmup_facts *f)
{
	const struct sn_config *cfg = &p->cfg;
	struct sn_record *r;
	uid_t euid;
	gid_t egid;
	bool switched;
	int rc = 0;

	if (!cfg->record_file[0] && !cfg->record_syslog && !cfg->prom_dir[0])
		return 0;
	r = calloc(1, sizeof(*r));
	if (!r) {
		sn_log_info("warmup record: out of memory, not written");
		return 0;
	}
	r->source = "spank";
	r->time = sn_clock_wall_s();
	sn_strlcpy(r->node, f->node, sizeof(r->node));
	r->job = ids->job_id;
	r->step = ids->step_id == SLURM_BATCH_SCRIPT ? -2 : (long)ids->step_id;
	user_name(ids->uid, r->user, sizeof(r->user));
	r->uid = ids->uid;
	sn_strlcpy(r->mode, sn_warmup_mode_name(f->mode), sizeof(r->mode));
	sn_strlcpy(r->gpus_requested, f->gpus, sizeof(r->gpus_requested));
	r->pass = f->ok;
	r->class = f->ok ? SN_CLASS_OK : outcome_class(f->outcome);
	r->exit_code = f->outcome->exited ? f->outcome->exit_code : -1;
	r->signal = f->outcome->signaled ? f->outcome->signal : 0;
	r->policy = cfg->warmup_policy == SN_POLICY_WARN ? "warn" : "fail";
	r->reused = f->reused;
	r->elapsed_ms = f->outcome->elapsed_ms;
	if (!f->ok && f->message)
		snprintf(r->message, sizeof(r->message), "%s", f->message);
	r->result = f->result;

	switched = become_root(&euid, &egid);
	write_sinks(cfg, r);
	if (switched && back_to_user(euid, egid) < 0)
		rc = -1;
	free(r);
	return rc;
}

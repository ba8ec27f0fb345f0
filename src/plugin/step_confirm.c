/* SPDX-License-Identifier: MIT */
/*
 * slurmstepd, user_init, after a failed warmup: who is blamed
 * (verdict.h).  The job's helper ran as the job user and loaded what the
 * user chose, so its exit status and JSON are the job's story.  Before a
 * node is blamed, nccl-warmup runs again here as root, as the Prolog
 * runs it: a clean environment (PATH, the step's CUDA_VISIBLE_DEVICES
 * and the admin's confirm_env= file; nothing of the job's: no
 * LD_PRELOAD, LD_LIBRARY_PATH or NCCL_*), the site's NCCL (warmup_nccl=
 * or the system's, never the step's nccl=), on the step's GPUs, in the
 * step's mode on this node alone (fabric: comm), with its own deadline.
 * The job user can neither signal nor ptrace it.  Only its failure makes
 * the fault "node"; its result is what the node's metrics may use.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helper_args.h"
#include "helper_exec.h"
#include "plugin.h"
#include "as_root.h"
#include "fleet/record.h"
#include "spank_wrap.h"
#include "step_confirm.h"
#include "base/strutil.h"

/* The confirm_env= file: a few lines; more is a mistake. */
#define CONFIRM_ENV_MAX_BYTES 16384
#define CONFIRM_ENV_MAX_VARS 64

enum sn_record_class sn_outcome_class(const struct sn_helper_outcome *o)
{
	if (o->failed_stage != SN_HELPER_STAGE_NONE)
		return SN_CLASS_HELPER_START;
	if (o->timed_out)
		return SN_CLASS_TIMEOUT;
	if (o->signaled)
		return SN_CLASS_CRASH;
	return sn_record_class_of_exit(o->exit_code);
}

/*
 * Reads PATH (root's, not writable by group or others: it is the
 * environment of a root process) into BUF.  -1 with a message in ERR.
 */
static int read_env_file(const char *path, char *buf, size_t cap,
			 struct sn_error *err)
{
	struct stat st;
	ssize_t n;
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
			    O_NONBLOCK);

	if (fd < 0) {
		sn_error_set(err, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 022)) {
		sn_error_set(err, "%s must be a regular file owned by root and not writable by group or others",
			     path);
		close(fd);
		return -1;
	}
	while (len + 1 < cap &&
	       (n = read(fd, buf + len, cap - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			sn_error_set(err, "cannot read %s: %s", path,
				     strerror(errno));
			close(fd);
			return -1;
		}
		len += (size_t)n;
	}
	close(fd);
	if (len + 1 >= cap) {
		sn_error_set(err, "%s is larger than %d bytes", path,
			     CONFIRM_ENV_MAX_BYTES - 1);
		return -1;
	}
	buf[len] = '\0';
	return 0;
}

/*
 * ENVP: PATH, CUDA_VISIBLE_DEVICES (first: getenv() finds the first of
 * two), then confirm_env='s lines in TEXT.  -1 with ERR.
 */
static int build_env(const struct sn_config *cfg, const char *gpus,
		     char *visible, size_t visible_cap, char *text,
		     char **envp, size_t cap, struct sn_error *err)
{
	struct sn_error why;

	snprintf(visible, visible_cap, "CUDA_VISIBLE_DEVICES=%s", gpus);
	envp[0] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
	envp[1] = visible;
	envp[2] = NULL;
	if (!cfg->confirm_env[0])
		return 0;
	if (read_env_file(cfg->confirm_env, text, CONFIRM_ENV_MAX_BYTES,
			  err) < 0)
		return -1;
	if (sn_confirm_env_parse(text, envp + 2, cap - 2, &why) < 0) {
		sn_error_set(err, "%s: %s", cfg->confirm_env, why.msg);
		return -1;
	}
	return 0;
}

/* Runs the clean check into C; -1 if it could not be run at all. */
static int run_confirm(const struct sn_plugin *p, const char *node,
		       const char *gpus, enum sn_warmup_mode mode,
		       struct sn_step_confirm *c)
{
	const struct sn_config *cfg = &p->cfg;
	char visible[600];
	char *envp[CONFIRM_ENV_MAX_VARS + 3];
	char *text;
	int rc;
	struct sn_argv args;
	struct sn_error err;
	struct sn_helper_spec spec = {
		.path = cfg->warmup_helper,
		/* Its own result pipe, as the job's warmup (step_warmup.c). */
		.result_fd = SN_HELPER_RESULT_FD,
		/* Root, for good, in the child: the job user cannot signal,
		 * ptrace or preload into it. */
		.drop_privileges = true,
		.uid = 0,
		.gid = 0,
		.timeout_ms = cfg->warmup_timeout_s * 1000 + SN_WARMUP_SLACK_MS,
		.kill_grace_ms = SN_WARMUP_KILL_GRACE_MS,
	};

	/* The step's mode on this node alone: a fabric step's is comm. */
	sn_argv_init(&args);
	sn_helper_args_common(&args, cfg, mode == SN_WARMUP_MODE_FABRIC ?
			      SN_WARMUP_MODE_COMM : mode, node, spec.result_fd);
	if (args.full) {
		sn_log_error("confirmation of a failed warmup on %s not run: its command line is over %d words or %d bytes; no node is blamed",
			     node, SN_ARGV_MAX, SN_ARGV_TEXT_MAX);
		return -1;
	}
	text = malloc(CONFIRM_ENV_MAX_BYTES);
	if (!text)
		return -1;
	if (build_env(cfg, gpus, visible, sizeof(visible), text, envp,
		      sizeof(envp) / sizeof(envp[0]), &err) < 0) {
		sn_log_error("confirmation of a failed warmup on %s not run: confirm_env=%s (plugstack.conf); no node is blamed",
			     node, err.msg);
		free(text);
		return -1;
	}
	spec.argv = args.argv;
	spec.envp = envp;
	rc = sn_helper_run(&spec, &c->outcome);
	free(text);
	return rc < 0 && c->outcome.failed_stage == SN_HELPER_STAGE_NONE ?
	       -1 : 0;
}

enum sn_fault sn_step_blame(const struct sn_plugin *p, const char *node,
			    const char *gpus, enum sn_warmup_mode mode,
			    const struct sn_helper_outcome *job,
			    const struct sn_warmup_result *job_result,
			    struct sn_step_confirm *c)
{
	struct sn_verdict_facts f = {
		.helper_class = sn_outcome_class(job),
		.helper_fault = job_result ? sn_fault_parse(job_result->fault) :
					     SN_FAULT_NONE,
		.fabric = mode == SN_WARMUP_MODE_FABRIC,
		.confirm = SN_CONFIRM_NOT_RUN,
	};
	struct sn_priv priv = SN_PRIV_INIT;
	struct sn_error err;

	c->state = SN_CONFIRM_NOT_RUN;
	c->have_result = false;
	/* A container step's NCCL is its image's, checked in task_init
	 * from the container: no clean host-side run there. */
	if (sn_verdict_needs_confirm(f.helper_class) && p->container_pid <= 0 &&
	    sn_priv_enter(&priv, "the warmup's confirmation") == 0 &&
	    run_confirm(p, node, gpus, mode, c) == 0) {
		c->class = sn_outcome_class(&c->outcome);
		c->state = sn_confirm_state_of(c->class);
		if (c->outcome.result_len &&
		    sn_warmup_result_parse(c->outcome.result,
					   c->outcome.result_len,
					   &c->result, &err) == 0)
			c->have_result = true;
		sn_log_info("confirmation of a failed warmup on %s (nccl-warmup as root, clean environment): %s, class %s, in %.0f ms",
			    node, sn_confirm_state_name(c->state),
			    sn_record_class_name(c->class),
			    c->outcome.elapsed_ms);
		if (c->state == SN_CONFIRM_INCONCLUSIVE)
			sn_log_error("confirmation of a failed warmup on %s ended with class %s, which says nothing of the node (warmup_helper=, confirm_env= in plugstack.conf); no node is blamed",
				     node, sn_record_class_name(c->class));
	}
	if (priv.entered && sn_priv_leave(&priv) < 0)
		c->leave_failed = true;
	f.confirm = c->state;
	return sn_verdict_decide(&f);
}

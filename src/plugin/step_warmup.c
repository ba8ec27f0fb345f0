/* SPDX-License-Identifier: MIT */
/*
 * slurmstepd, user_init: runs nccl-warmup once on this node, as the job
 * user, over the step's GPUs, and turns its result into one message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/fault.h"
#include "helper_args.h"
#include "helper_exec.h"
#include "plugin.h"
#include "spank_wrap.h"
#include "step_confirm.h"
#include "step_fabric_auth.h"
#include "step_tell.h"
#include "base/strutil.h"
#include "protocol/helper_protocol.h"
#include "protocol/warmup_result.h"

/* The job's own NCCL log shown to the user: lines, and each one's cut. */
#define SN_NCCL_LOG_LINES 20
#define SN_NCCL_LOG_LINE_MAX 240
#define SN_NCCL_LOG_TELL_MAX 6144

/* Exit 7 of a fabric warmup: its floor is fabric_min_busbw=, between nodes. */
#define SN_FABRIC_LOW_BANDWIDTH_HINT \
	"the network between the nodes is below fabric_min_busbw=: check their IB/RoCE links, NCCL_IB_HCA, NCCL_SOCKET_IFNAME; report the nodes"

/* After a clean check as root passed on this node (step_confirm.c). */
/* Short: line 1 (what failed) keeps the room (sn_fault_tell's budget). */
#define SN_CONFIRMED_JOB_HINT \
	"this node passed a clean check as root: fix the job's NCCL, LD_PRELOAD or NCCL_*"
#define SN_CONFIRMED_ENVIRONMENT_HINT \
	"this node passed a clean check as root: see the other nodes' messages"

/*
 * One node's warmup in slurmstepd (the helper's own state: struct
 * wu_run), handed from stage to stage of sn_step_warmup.
 */
struct step_warmup {
	const struct sn_job_ids *ids;
	char node[256];
	char gpus[512];		/* CUDA_VISIBLE_DEVICES of the step */
	enum sn_warmup_mode mode;
	struct sn_helper_outcome outcome;
	struct sn_warmup_result result;
	bool have_result;
	/* Whose fault a failure is, after the root confirmation. */
	enum sn_fault fault;
	struct sn_step_confirm confirm;
	/* Mode fabric: what the helper needs to find the other nodes. */
	char job_id[16], step_id[16], node_index[16], nodes[16];
	char nodelist[4096];	/* SLURM_STEP_NODELIST, compressed */
	char ports[16];
	int key_fd;		/* the step key's pipe (fabric_auth=key), or -1 */
	struct sn_fabric_key_job derive;
	struct sn_argv args;	/* the helper's command line */
	bool ran;		/* the helper was run (or could not start) */
	bool ok;
	/* A privilege, reuse or record error: the step's tasks fail. */
	bool failed;
	char message[2048];	/* a failure, the user's three lines */
};

/*
 * The host name slurmstepd inherited from slurmd.  Not SLURMD_NODENAME:
 * in user_init the job environment holds whatever srun exported, so a
 * user could make a failure (and the slurmd log) blame another node.
 */
static void node_name(char *buf, size_t len)
{
	if (gethostname(buf, len) < 0)
		snprintf(buf, len, "(unknown node)");
	buf[len - 1] = '\0';
}

/* No GPU bound to the step on this node: nothing to check. */
static bool step_has_gpus(const char *cuda_visible_devices)
{
	return cuda_visible_devices[0] &&
	       strcmp(cuda_visible_devices, "NoDevFiles") != 0;
}

/*
 * Mode fabric: the step as slurmstepd knows it, the same on every node
 * (docs/design.md, "Fabric warmup: the plugin's side").  S_JOB_NODEID and
 * S_JOB_NNODES are the node's index in the step and the step's node
 * count (slurmstepd's step record); the node list only reaches
 * slurmstepd in the job environment srun sent (SLURM_STEP_NODELIST,
 * set by srun for every step).  A batch script runs on the job's first
 * node alone and has no step node list: like any one-node step, it is
 * the node by itself (the helper then equals comm).  -1 with MESSAGE
 * (run->message) when a step of several nodes lacks its node list.
 */
static int fabric_prepare(const struct sn_plugin *p, spank_t sp,
			  struct step_warmup *run)
{
	const struct sn_job_ids *ids = run->ids;
	const struct sn_port_range *ports = &p->cfg.fabric_ports;
	bool alone = ids->nnodes <= 1 || ids->step_id == SLURM_BATCH_SCRIPT;

	if (alone) {
		snprintf(run->nodelist, sizeof(run->nodelist), "%s", run->node);
	} else if (sn_spank_getenv(sp, "SLURM_STEP_NODELIST", run->nodelist,
				   sizeof(run->nodelist)) != 1 ||
		   !run->nodelist[0]) {
		snprintf(run->message, sizeof(run->message),
			 "warmup failed on node %s (GPUs %s): the fabric warmup of a step of %u nodes needs the step's node list, but the job environment has no SLURM_STEP_NODELIST; launch the step with srun (which sets it) or use --nccl-warmup=comm",
			 run->node, run->gpus, ids->nnodes);
		return -1;
	}
	snprintf(run->job_id, sizeof(run->job_id), "%u", ids->job_id);
	snprintf(run->step_id, sizeof(run->step_id), "%u", ids->step_id);
	snprintf(run->node_index, sizeof(run->node_index), "%u",
		 alone ? 0 : ids->node_id);
	snprintf(run->nodes, sizeof(run->nodes), "%u", alone ? 1 : ids->nnodes);
	snprintf(run->ports, sizeof(run->ports), "%u-%u", ports->lo, ports->hi);
	return 0;
}

static void add_fabric_args(const struct sn_plugin *p,
			    const struct step_warmup *run, struct sn_argv *a)
{
	const struct sn_config *cfg = &p->cfg;
	char floor[32];

	sn_argv_opt(a, "--" SN_HELPER_OPT_JOB_ID, run->job_id);
	sn_argv_opt(a, "--" SN_HELPER_OPT_STEP_ID, run->step_id);
	sn_argv_opt(a, "--" SN_HELPER_OPT_NODE_INDEX, run->node_index);
	sn_argv_opt(a, "--" SN_HELPER_OPT_NODES, run->nodes);
	sn_argv_opt(a, "--" SN_HELPER_OPT_NODELIST, run->nodelist);
	sn_argv_opt(a, "--" SN_HELPER_OPT_FABRIC_PORTS, run->ports);
	sn_argv_opt(a, "--" SN_HELPER_OPT_FABRIC_TRANSPORT,
		    sn_transport_policy_name(cfg->fabric_refuse_socket));
	if (cfg->fabric_munge_socket[0])
		sn_argv_opt(a, "--" SN_HELPER_OPT_MUNGE_SOCKET,
			    cfg->fabric_munge_socket);
	if (run->key_fd >= 0) {
		sn_argv_add(a, "--" SN_HELPER_OPT_FABRIC_KEY_FD);
		sn_argv_addf(a, "%d", run->key_fd);
	}
	/* The floor of a fabric warmup is the inter-node one, timed over
	 * the communicator across the nodes. */
	if (cfg->fabric_min_busbw_gbps > 0) {
		sn_format_gbps(floor, sizeof(floor), cfg->fabric_min_busbw_gbps);
		sn_argv_add(a, "--" SN_HELPER_OPT_BYTES);
		sn_argv_addf(a, "%lu", cfg->warmup_bytes);
		sn_argv_add(a, "--" SN_HELPER_OPT_MIN_BUSBW);
		sn_argv_addf(a, "%s", floor);
	}
}

/* The job's helper into run->outcome; -1 if it could not be started. */
static int run_helper(struct sn_plugin *p, spank_t sp,
		      struct step_warmup *run)
{
	const struct sn_config *cfg = &p->cfg;
	const struct sn_job_ids *ids = run->ids;
	struct sn_argv *args = &run->args;
	struct sn_helper_spec spec = {
		.path = cfg->warmup_helper,
		/* task_init (a container step) already runs as the user. */
		.drop_privileges = getuid() == 0 || geteuid() == 0,
		.uid = ids->uid,
		.gid = ids->gid,
		.groups = ids->groups,
		.n_groups = ids->n_groups,
		/* The helper's own deadline plus the slack: its timeout wins. */
		.timeout_ms = cfg->warmup_timeout_s * 1000 + SN_WARMUP_SLACK_MS,
		.kill_grace_ms = SN_WARMUP_KILL_GRACE_MS,
	};

	/* The container's root and the step key's pipe, inherited. */
	if (p->container_pid > 0 && p->container_root_fd > 2)
		spec.pass_fd[0] = p->container_root_fd;
	if (run->mode == SN_WARMUP_MODE_FABRIC && run->key_fd > 2)
		spec.pass_fd[1] = run->key_fd;
	/* The result's own pipe: NCCL's log (NCCL_DEBUG without
	 * NCCL_DEBUG_FILE), CUDA and LD_PRELOADs may print on stdout. */
	spec.result_fd = SN_HELPER_RESULT_FD;
	while (spec.result_fd == spec.pass_fd[0] ||
	       spec.result_fd == spec.pass_fd[1])
		spec.result_fd++;
	sn_argv_init(args);
	sn_helper_args_common(args, cfg, run->mode, run->node, spec.result_fd);
	/* The NCCL search order (LD_PRELOAD first) is the helper's; this
	 * is the step's place in it (the site's: --nccl-default). */
	if (p->warmup_req.nccl[0])
		sn_argv_opt(args, "--" SN_HELPER_OPT_NCCL, p->warmup_req.nccl);
	if (p->container_pid > 0) {
		sn_argv_add(args, "--" SN_HELPER_OPT_CONTAINER_PID);
		sn_argv_addf(args, "%d", (int)p->container_pid);
		sn_argv_opt(args, "--" SN_HELPER_OPT_CONTAINER_IMAGE,
			    p->container_image);
	}
	if (spec.pass_fd[0]) {
		sn_argv_add(args, "--" SN_HELPER_OPT_CONTAINER_ROOT_FD);
		sn_argv_addf(args, "%d", spec.pass_fd[0]);
	}
	if (run->mode == SN_WARMUP_MODE_FABRIC)
		add_fabric_args(p, run, args);
	if (args->full) {
		/* As a helper that could not start: the node's install. */
		run->outcome.failed_stage = SN_HELPER_STAGE_SETUP;
		run->outcome.failed_errno = E2BIG;
		return -1;
	}
	spec.argv = args->argv;
	/* The job's own environment: its LD_LIBRARY_PATH/LD_PRELOAD pick the
	 * NCCL the job will use, and the profile's NCCL_* are already in. */
	spec.envp = p->helper_env ? p->helper_env : sn_spank_job_env(sp);
	if (!spec.envp) {
		static char *empty_env[] = { NULL };

		spec.envp = empty_env;
	}
	return sn_helper_run(&spec, &run->outcome);
}

/* Last line of the helper's stderr: what it said when it died. */
static void stderr_tail(const struct sn_helper_outcome *o, char *buf,
			size_t len)
{
	const char *end = o->err + o->err_len;
	const char *start;

	while (end > o->err && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	start = end;
	while (start > o->err && start[-1] != '\n')
		start--;
	snprintf(buf, len, "%.*s", (int)(end - start), start);
}

/* The user's three lines (sn_fault_tell) of a failed run, into BUF. */
static void describe_failure(const struct sn_plugin *p, spank_t sp,
			     const struct step_warmup *run, char *buf,
			     size_t len)
{
	const struct sn_helper_outcome *o = &run->outcome;
	char what[1200], tail[512], nccl_debug[32];
	struct sn_fault_tell_in in = {
		.node = run->node,
		.gpus = run->gpus,
		.message = what,
		.verbose = p->warmup_req.verbose,
	};
	bool fabric_floor = false;
	enum sn_fault fault;
	int code = -1;

	stderr_tail(o, tail, sizeof(tail));
	/* The user's side writes both: no forged lines. */
	sn_str_printable(tail, sizeof(tail), tail);
	if (sn_spank_getenv(sp, "NCCL_DEBUG", nccl_debug,
			    sizeof(nccl_debug)) == 1)
		in.nccl_debug = nccl_debug;
	if (o->failed_stage != SN_HELPER_STAGE_NONE) {
		snprintf(what, sizeof(what), "could not %s %s: %s",
			 sn_helper_stage_name(o->failed_stage),
			 p->cfg.warmup_helper, strerror(o->failed_errno));
		in.hint = "the node's spank-nccl installation is broken: ask your admins (warmup_helper= in plugstack.conf)";
	} else if (o->timed_out) {
		snprintf(what, sizeof(what),
			 "nccl-warmup did not finish within %u s and was killed",
			 p->cfg.warmup_timeout_s);
		in.hint = sn_warmup_exit_hint(SN_WARMUP_TIMEOUT);
		in.nccl_advice = true;
	} else if (o->signaled) {
		snprintf(what, sizeof(what),
			 "nccl-warmup was killed by signal %d (%s)%s%s",
			 o->signal, strsignal(o->signal),
			 tail[0] ? SN_DETAIL_SEP : "", tail);
		in.hint = "the CUDA or NCCL library crashed: check the node's driver and the job's LD_LIBRARY_PATH/LD_PRELOAD, and report it to your admins";
	} else {
		code = o->exit_code;
		if (run->have_result && run->result.message[0])
			sn_str_printable(what, sizeof(what),
					 run->result.message);
		else
			snprintf(what, sizeof(what), "%s (exit code %d)%s%s",
				 sn_warmup_exit_name(code), code,
				 tail[0] ? ": " : "", tail);
		/* A job's own NCCL or settings: never "report the node". */
		fault = run->fault;
		in.hint = sn_fault_hint(code, fault);
		in.nccl_advice = code == SN_WARMUP_NCCL_ERROR ||
				 code == SN_WARMUP_TIMEOUT;
		/* Below the floor in fabric mode: the network, not NVLink. */
		fabric_floor = run->mode == SN_WARMUP_MODE_FABRIC &&
			       fault != SN_FAULT_JOB &&
			       code == SN_WARMUP_LOW_BANDWIDTH;
		if (fabric_floor)
			in.hint = SN_FABRIC_LOW_BANDWIDTH_HINT;
	}
	/* The node passed the clean check: the failure is not the node's.
	 * The helper's own advice stands where it already named the job's
	 * setting (e.g. unset NCCL_ALGO), as does the network's floor. */
	if (run->confirm.state == SN_CONFIRM_PASSED && !fabric_floor &&
	    !(run->have_result &&
	      sn_fault_parse(run->result.fault) == SN_FAULT_JOB))
		in.hint = run->fault == SN_FAULT_ENVIRONMENT ?
			  SN_CONFIRMED_ENVIRONMENT_HINT : SN_CONFIRMED_JOB_HINT;
	sn_fault_tell(&in, buf, len);
}

/*
 * The job's NCCL log, when it asked for one (NCCL_DEBUG set, no
 * NCCL_DEBUG_FILE: NCCL writes it on the helper's stdout, apart from the
 * result): its last SN_NCCL_LOG_LINES lines to the user, under a header
 * that says what they are (docs/user-guide.md).  Fabric mode copies
 * them there from its own memfd at the end (wu_fabric_tell_log).
 */
static void tell_nccl_log(struct sn_plugin *p, spank_t sp,
			  const struct step_warmup *run)
{
	const struct sn_helper_outcome *o = &run->outcome;
	char level[32] = "", file[8] = "", lines[SN_NCCL_LOG_TELL_MAX];
	int has_file;
	const char *start = o->out + o->out_len, *end;
	size_t used;
	int n = 0;

	/* NCCL_DEBUG_FILE: any value but "" (-1: longer than FILE). */
	has_file = sn_spank_getenv(sp, "NCCL_DEBUG_FILE", file, sizeof(file));
	if (!o->out_len || has_file < 0 || (has_file == 1 && file[0]) ||
	    sn_spank_getenv(sp, "NCCL_DEBUG", level, sizeof(level)) != 1 ||
	    !level[0])
		return;
	/* Back to the start of the last SN_NCCL_LOG_LINES lines. */
	while (start > o->out && (start[-1] == '\n' || start[-1] == '\r'))
		start--;
	end = start;
	while (start > o->out && n < SN_NCCL_LOG_LINES) {
		start--;
		if (start == o->out || start[-1] == '\n')
			n++;
	}
	sn_str_printable(level, sizeof(level), level);
	used = (size_t)snprintf(lines, sizeof(lines),
				"NCCL's log of the warmup on node %s (NCCL_DEBUG=%s, its stdout), the last %d lines:",
				run->node, level, n);
	while (start < end && used + 16 < sizeof(lines)) {
		const char *nl = memchr(start, '\n', (size_t)(end - start));
		size_t len = (size_t)((nl ? nl : end) - start);
		char line[SN_NCCL_LOG_LINE_MAX];

		snprintf(line, sizeof(line), "%.*s", (int)len, start);
		sn_str_printable(line, sizeof(line), line);
		used += (size_t)snprintf(lines + used, sizeof(lines) - used,
					 "\n| %s", line);
		start += len + 1;
	}
	if (used >= sizeof(lines))
		lines[sizeof(lines) - 1] = '\0';
	sn_step_tell_lines(p, lines);
}

/*
 * Decide: the mode (the step's word, else warmup_mode=), this node and
 * its GPUs.  false: nothing to run (off; no GPUs, said under verbose).
 */
static bool decide(struct sn_plugin *p, spank_t sp, struct step_warmup *run)
{
	run->mode = p->warmup_req.mode == SN_WARMUP_MODE_UNSET ?
		    p->cfg.warmup_mode : p->warmup_req.mode;
	if (run->mode == SN_WARMUP_MODE_OFF)
		return false;
	node_name(run->node, sizeof(run->node));
	if (sn_spank_getenv(sp, "CUDA_VISIBLE_DEVICES", run->gpus,
			    sizeof(run->gpus)) == 1 && step_has_gpus(run->gpus))
		return true;
	sn_log_info("job %u step %u on %s: no GPUs in this step, warmup skipped",
		    run->ids->job_id, run->ids->step_id, run->node);
	/* verbose: the one line saying why nothing ran (the step runs);
	 * CUDA_VISIBLE_DEVICES unset, empty or NoDevFiles. */
	if (p->warmup_req.verbose) {
		snprintf(run->message, sizeof(run->message),
			 "warmup skipped on node %s: the step has no GPUs there (none requested with --gres=gpu:N or --gpus)",
			 run->node);
		sn_step_tell(p, false, run->message);
	}
	return false;
}

/*
 * Reuse: 1 when an earlier pass covers this step (its fleet record says
 * so; nothing runs), 0 to run, -1 on a privilege error.  A container
 * step's key names its image (step_reuse.c).
 */
static int reuse(struct sn_plugin *p, spank_t sp, struct step_warmup *run)
{
	struct sn_warmup_facts f = { .node = run->node, .gpus = run->gpus,
				     .mode = run->mode,
				     .outcome = &run->outcome,
				     .ok = true, .reused = true };
	int rc;

	rc = sn_step_reuse_lookup(p, sp, run->ids, run->node, run->gpus,
				  run->mode);
	if (rc <= 0)
		return rc;
	run->outcome.exited = true;
	if (sn_step_record(p, run->ids, &f) < 0)
		run->failed = true;
	return 1;
}

/*
 * Run: the helper as the job user, its result parsed; or, for a fabric
 * step that cannot find its nodes, the job's failure without a run.
 */
static void run_warmup(struct sn_plugin *p, spank_t sp,
		       struct step_warmup *run)
{
	struct sn_helper_outcome *res = &run->outcome;
	struct sn_error err;
	char why[1024];

	if (run->mode == SN_WARMUP_MODE_FABRIC &&
	    fabric_prepare(p, sp, run) < 0) {
		sn_str_printable(run->message, sizeof(run->message),
				 run->message);
		res->exited = true;
		res->exit_code = SN_WARMUP_USAGE;
		run->fault = SN_FAULT_JOB;
		return;
	}
	if (run->mode == SN_WARMUP_MODE_FABRIC &&
	    sn_step_fabric_auth(p, run->ids, &run->key_fd, &run->derive,
				why, sizeof(why)) < 0) {
		if (run->derive.priv_lost)
			run->failed = true;
		snprintf(run->message, sizeof(run->message),
			 "warmup failed on node %s (GPUs %s): %s", run->node,
			 run->gpus, why);
		res->exited = true;
		res->exit_code = SN_WARMUP_FABRIC_SETUP;
		run->fault = SN_FAULT_ENVIRONMENT;
		return;
	}
	run->ran = true;
	run_helper(p, sp, run);
	if (run->key_fd >= 0)
		close(run->key_fd);
	sn_step_fabric_auth_end(&run->derive, run->node);
	if (res->result_len &&
	    sn_warmup_result_parse(res->result, res->result_len, &run->result,
				   &err) == 0)
		run->have_result = true;
	while (res->result_len && (res->result[res->result_len - 1] == '\n' ||
				   res->result[res->result_len - 1] == '\r'))
		res->result[--res->result_len] = '\0';
	/* In place: what the user's side controls (the helper's output,
	 * CUDA_VISIBLE_DEVICES) must not forge lines in slurmd's log. */
	sn_str_printable(run->gpus, sizeof(run->gpus), run->gpus);
	sn_str_printable(res->result, sizeof(res->result), res->result);
	sn_str_printable(run->result.summary, sizeof(run->result.summary),
			 run->result.summary);
	run->ok = res->failed_stage == SN_HELPER_STAGE_NONE &&
		  !res->timed_out && res->exited &&
		  res->exit_code == SN_WARMUP_OK;
}

/*
 * Classify a run: its reuse record kept or forgotten, its line in
 * slurmd's log, and for a failure whose fault it is (the root
 * confirmation, step_confirm.c) and the user's three lines.
 */
static void classify(struct sn_plugin *p, spank_t sp,
		     struct step_warmup *run)
{
	const struct sn_helper_outcome *res = &run->outcome;
	const struct sn_job_ids *ids = run->ids;

	if (!run->ran)
		return;
	/* peer_failed, fabric_setup: nothing wrong with this node's GPUs
	 * or NCCL was found, its earlier passes stay usable. */
	if (!(res->exited && (res->exit_code == SN_WARMUP_PEER_FAILED ||
			      res->exit_code == SN_WARMUP_FABRIC_SETUP)) &&
	    sn_step_reuse_store(p, sp, ids, run->node, run->gpus, run->mode,
				run->ok, res->elapsed_ms) < 0)
		run->failed = true;
	sn_step_log_result(p, "job %u step %u on %s: nccl-warmup %s in %.0f ms: %s",
			   ids->job_id, ids->step_id, run->node,
			   run->ok ? "passed" : "failed", res->elapsed_ms,
			   run->have_result ? res->result : "(no result)");
	if (run->ok)
		return;
	run->fault = sn_step_blame(p, run->node, run->gpus, run->mode, res,
				   run->have_result ? &run->result : NULL,
				   &run->confirm);
	if (run->confirm.leave_failed)
		run->failed = true;
	describe_failure(p, sp, run, run->message, sizeof(run->message));
}

/* Record: the fleet record of this run (step_record.c). */
static void record(const struct sn_plugin *p, struct step_warmup *run)
{
	char line[sizeof(run->message)];
	struct sn_warmup_facts f = {
		.node = run->node,
		.gpus = run->gpus,
		.mode = run->mode,
		.outcome = &run->outcome,
		.result = run->have_result ? &run->result : NULL,
		.ok = run->ok,
		.fault = run->fault,
		.trusted = run->confirm.have_result ? &run->confirm.result :
			   NULL,
		/* The helper's own words when it said what failed (the
		 * record escapes them), else the plugin's description. */
		.message = run->ok ? NULL :
			   run->have_result && run->result.message[0] ?
			   run->result.message : line,
	};

	/* The record holds one line. */
	snprintf(line, sizeof(line), "%s", run->message);
	for (char *nl = strchr(line, '\n'); nl; nl = strchr(nl, '\n'))
		*nl = ' ';
	if (sn_step_record(p, run->ids, &f) < 0)
		run->failed = true;
}

/*
 * Tell the user: a pass only with verbose (or a health warning); a
 * failure always, with NCCL's log.  -1 fails the step's tasks.
 */
static int tell(struct sn_plugin *p, spank_t sp, struct step_warmup *run)
{
	if (run->ok && run->failed)
		return -1;
	if (run->ok) {
		/* A health check at warn: said to the user, step runs. */
		if (run->have_result &&
		    strstr(run->result.summary, SN_SUMMARY_WARNING))
			sn_step_tell(p, false, run->result.summary);
		else if (p->warmup_req.verbose)
			sn_step_tell(p, false, run->have_result &&
				     run->result.summary[0] ?
				     run->result.summary : "warmup ok");
		if (p->warmup_req.verbose)
			tell_nccl_log(p, sp, run);
		return 0;
	}
	if (p->cfg.warmup_policy == SN_POLICY_WARN)
		strncat(run->message, " (warmup_policy=warn: the step runs anyway)",
			sizeof(run->message) - strlen(run->message) - 1);
	sn_step_tell(p, true, run->message);
	tell_nccl_log(p, sp, run);
	return run->failed || p->cfg.warmup_policy != SN_POLICY_WARN ? -1 : 0;
}

/* decide -> reuse -> run -> classify -> record -> tell. */
static int warm(struct sn_plugin *p, spank_t sp, struct step_warmup *run)
{
	int reused;

	if (!decide(p, sp, run))
		return 0;
	reused = reuse(p, sp, run);
	if (reused != 0)
		return reused < 0 || run->failed ? -1 : 0;
	run_warmup(p, sp, run);
	classify(p, sp, run);
	record(p, run);
	return tell(p, sp, run);
}

int sn_step_warmup(struct sn_plugin *p, spank_t sp,
		   const struct sn_job_ids *ids)
{
	struct step_warmup *run = calloc(1, sizeof(*run));
	int rc;

	if (!run) {
		sn_log_error("warmup: out of memory");
		return -1;
	}
	run->ids = ids;
	run->key_fd = -1;
	run->derive.pid = -1;
	rc = warm(p, sp, run);
	free(run);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * slurmstepd, user_init: runs nccl-warmup once on this node, as the job
 * user, over the step's GPUs, and turns its result into one message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "helper_exec.h"
#include "plugin.h"
#include "spank_wrap.h"
#include "step_confirm.h"
#include "strutil.h"
#include "helper_protocol.h"
#include "warmup_result.h"

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

/* One node's warmup in slurmstepd (the helper's own state: struct wu_run). */
struct step_warmup {
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
 * when a step of several nodes lacks its node list.
 */
static int fabric_prepare(const struct sn_plugin *p, spank_t sp,
			  const struct sn_job_ids *ids, struct step_warmup *run,
			  char *message, size_t len)
{
	const struct sn_port_range *ports = &p->cfg.fabric_ports;
	bool alone = ids->nnodes <= 1 || ids->step_id == SLURM_BATCH_SCRIPT;

	if (alone) {
		snprintf(run->nodelist, sizeof(run->nodelist), "%s", run->node);
	} else if (sn_spank_getenv(sp, "SLURM_STEP_NODELIST", run->nodelist,
				   sizeof(run->nodelist)) != 1 ||
		   !run->nodelist[0]) {
		snprintf(message, len,
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

/*
 * GB/s as plain decimal: the helper's parser (sn_parse_busbw) refuses an
 * exponent, which "%g" writes below 1e-4.  Trailing zeros trimmed.
 */
static void format_gbps(char *buf, size_t len, double gbps)
{
	size_t n;

	snprintf(buf, len, "%.6f", gbps);
	n = strlen(buf);
	while (n > 1 && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 1 && buf[n - 1] == '.')
		buf[--n] = '\0';
}

/* Appends "--NAME VALUE" to ARGV at *ARGC. */
static void add_opt(char **argv, int *argc, const char *name,
		    const char *value)
{
	argv[(*argc)++] = (char *)name;
	argv[(*argc)++] = (char *)value;
}

static void add_fabric_args(const struct sn_plugin *p,
			    struct step_warmup *run, char **argv, int *argc)
{
	add_opt(argv, argc, "--" SN_HELPER_OPT_JOB_ID, run->job_id);
	add_opt(argv, argc, "--" SN_HELPER_OPT_STEP_ID, run->step_id);
	add_opt(argv, argc, "--" SN_HELPER_OPT_NODE_INDEX, run->node_index);
	add_opt(argv, argc, "--" SN_HELPER_OPT_NODES, run->nodes);
	add_opt(argv, argc, "--" SN_HELPER_OPT_NODELIST, run->nodelist);
	add_opt(argv, argc, "--" SN_HELPER_OPT_FABRIC_PORTS, run->ports);
	add_opt(argv, argc, "--" SN_HELPER_OPT_FABRIC_TRANSPORT,
		sn_transport_policy_name(p->cfg.fabric_refuse_socket));
	if (p->cfg.fabric_munge_socket[0])
		add_opt(argv, argc, "--" SN_HELPER_OPT_MUNGE_SOCKET,
			p->cfg.fabric_munge_socket);
}

static int run_helper(struct sn_plugin *p, spank_t sp,
		      const struct sn_job_ids *ids, struct step_warmup *run)
{
	const struct sn_config *cfg = &p->cfg;
	char timeout[16], bytes[32], floor[32], container_pid[16], root_fd[16];
	char result_fd[16];
	char health[SN_HEALTH_SPEC_MAX], busy_mib[24];
	char *argv[48];
	int argc = 0;
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

	/* The result's own pipe: NCCL's log (NCCL_DEBUG without
	 * NCCL_DEBUG_FILE), CUDA and LD_PRELOADs may print on stdout. */
	spec.result_fd = p->container_pid > 0 &&
			 p->container_root_fd == SN_HELPER_RESULT_FD ?
			 SN_HELPER_RESULT_FD + 1 : SN_HELPER_RESULT_FD;
	snprintf(result_fd, sizeof(result_fd), "%d", spec.result_fd);
	snprintf(timeout, sizeof(timeout), "%u", cfg->warmup_timeout_s);
	snprintf(bytes, sizeof(bytes), "%lu", cfg->warmup_bytes);
	format_gbps(floor, sizeof(floor), cfg->warmup_min_busbw_gbps);
	argv[argc++] = (char *)cfg->warmup_helper;
	argv[argc++] = "--" SN_HELPER_OPT_MODE;
	argv[argc++] = (char *)sn_warmup_mode_name(run->mode);
	argv[argc++] = "--" SN_HELPER_OPT_TIMEOUT;
	argv[argc++] = timeout;
	argv[argc++] = "--" SN_HELPER_OPT_NODE;
	argv[argc++] = run->node;
	argv[argc++] = "--" SN_HELPER_OPT_JSON;
	argv[argc++] = "--" SN_HELPER_OPT_RESULT_FD;
	argv[argc++] = result_fd;
	argv[argc++] = "--" SN_HELPER_OPT_TEARDOWN;
	argv[argc++] = (char *)sn_teardown_name(cfg->warmup_teardown_exit);
	/* The NCCL search order (LD_PRELOAD first) is the helper's; these
	 * are the step's and the site's places in it. */
	if (p->warmup_req.nccl[0]) {
		argv[argc++] = "--" SN_HELPER_OPT_NCCL;
		argv[argc++] = p->warmup_req.nccl;
	}
	if (cfg->warmup_nccl[0]) {
		argv[argc++] = "--" SN_HELPER_OPT_NCCL_DEFAULT;
		argv[argc++] = (char *)cfg->warmup_nccl;
	}
	if (p->container_pid > 0) {
		snprintf(container_pid, sizeof(container_pid), "%d",
			 (int)p->container_pid);
		add_opt(argv, &argc, "--" SN_HELPER_OPT_CONTAINER_PID,
			container_pid);
		add_opt(argv, &argc, "--" SN_HELPER_OPT_CONTAINER_IMAGE,
			p->container_image);
	}
	if (p->container_pid > 0 && p->container_root_fd > 2) {
		snprintf(root_fd, sizeof(root_fd), "%d", p->container_root_fd);
		add_opt(argv, &argc, "--" SN_HELPER_OPT_CONTAINER_ROOT_FD,
			root_fd);
		spec.pass_fd = p->container_root_fd;
	}
	if (cfg->health_given) {
		sn_health_policy_format(&cfg->health, health, sizeof(health));
		snprintf(busy_mib, sizeof(busy_mib), "%llu",
			 cfg->health.busy_mib);
		add_opt(argv, &argc, "--" SN_HELPER_OPT_HEALTH, health);
		add_opt(argv, &argc, "--" SN_HELPER_OPT_HEALTH_BUSY_MIB,
			busy_mib);
	}
	if (run->mode == SN_WARMUP_MODE_BANDWIDTH) {
		argv[argc++] = "--" SN_HELPER_OPT_BYTES;
		argv[argc++] = bytes;
		argv[argc++] = "--" SN_HELPER_OPT_MIN_BUSBW;
		argv[argc++] = floor;
	}
	if (run->mode == SN_WARMUP_MODE_FABRIC) {
		add_fabric_args(p, run, argv, &argc);
		/* The floor of a fabric warmup is the inter-node one, timed
		 * over the communicator across the nodes. */
		if (cfg->fabric_min_busbw_gbps > 0) {
			format_gbps(floor, sizeof(floor),
				    cfg->fabric_min_busbw_gbps);
			add_opt(argv, &argc, "--" SN_HELPER_OPT_BYTES, bytes);
			add_opt(argv, &argc, "--" SN_HELPER_OPT_MIN_BUSBW,
				floor);
		}
	}
	argv[argc] = NULL;
	spec.argv = argv;
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
 * that says what they are (docs/user-guide.md).  Fabric mode keeps
 * NCCL's log to itself (a memfd), so there is none on stdout.
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

/* The fleet record of this run (step_record.c). */
static int record_warmup(const struct sn_plugin *p,
			 const struct sn_job_ids *ids,
			 const struct step_warmup *run, bool ok,
			 const char *message)
{
	struct sn_warmup_facts f = {
		.node = run->node,
		.gpus = run->gpus,
		.mode = run->mode,
		.outcome = &run->outcome,
		.result = run->have_result ? &run->result : NULL,
		.ok = ok,
		.fault = run->fault,
		.trusted = run->confirm.have_result ? &run->confirm.result :
			   NULL,
		/* The helper's own words when it said what failed (the
		 * record escapes them), else the plugin's description. */
		.message = ok ? NULL :
			   run->have_result && run->result.message[0] ?
			   run->result.message : message,
	};

	return sn_step_record(p, ids, &f);
}

int sn_step_warmup(struct sn_plugin *p, spank_t sp,
		   const struct sn_job_ids *ids)
{
	struct sn_helper_outcome *res;
	struct step_warmup *run;
	struct sn_error err;
	char message[2048], record_line[2048];
	bool ok;
	int rc = 0;

	run = calloc(1, sizeof(*run));
	if (!run) {
		sn_log_error("warmup: out of memory");
		return -1;
	}
	run->mode = p->warmup_req.mode == SN_WARMUP_MODE_UNSET ?
		    p->cfg.warmup_mode : p->warmup_req.mode;
	if (run->mode == SN_WARMUP_MODE_OFF)
		goto out;
	node_name(run->node, sizeof(run->node));
	if (sn_spank_getenv(sp, "CUDA_VISIBLE_DEVICES", run->gpus,
			    sizeof(run->gpus)) != 1 ||
	    !step_has_gpus(run->gpus)) {
		sn_log_info("job %u step %u on %s: no GPUs in this step, warmup skipped",
			    ids->job_id, ids->step_id, run->node);
		/* verbose: the one line saying why nothing ran (the step
		 * runs); CUDA_VISIBLE_DEVICES unset, empty or NoDevFiles. */
		if (p->warmup_req.verbose) {
			snprintf(message, sizeof(message),
				 "warmup skipped on node %s: the step has no GPUs there (none requested with --gres=gpu:N or --gpus)",
				 run->node);
			sn_step_tell(p, false, message);
		}
		goto out;
	}

	/* A container step's key names its image (step_reuse.c). */
	rc = sn_step_reuse_lookup(p, sp, ids, run->node, run->gpus, run->mode);
	if (rc > 0) {
		/* Reused: the fleet record says so; nothing ran. */
		struct sn_warmup_facts f = { .node = run->node, .gpus = run->gpus,
					     .mode = run->mode,
					     .outcome = &run->outcome,
					     .ok = true, .reused = true };

		run->outcome.exited = true;
		rc = sn_step_record(p, ids, &f);
		goto out;
	}
	if (rc < 0)
		goto out;	/* euid not restored */

	if (run->mode == SN_WARMUP_MODE_FABRIC &&
	    fabric_prepare(p, sp, ids, run, message, sizeof(message)) < 0) {
		sn_str_printable(message, sizeof(message), message);
		run->outcome.exited = true;
		run->outcome.exit_code = SN_WARMUP_USAGE;
		run->fault = SN_FAULT_JOB;
		ok = false;
		goto failed;
	}
	run_helper(p, sp, ids, run);
	res = &run->outcome;
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
	ok = run->outcome.failed_stage == SN_HELPER_STAGE_NONE &&
	     !run->outcome.timed_out && run->outcome.exited &&
	     run->outcome.exit_code == SN_WARMUP_OK;

	/*
	 * peer_failed, fabric_setup: nothing wrong with this node's GPUs or
	 * NCCL was found, its earlier passes stay usable.
	 */
	if (!(run->outcome.exited &&
	      (run->outcome.exit_code == SN_WARMUP_PEER_FAILED ||
	       run->outcome.exit_code == SN_WARMUP_FABRIC_SETUP)) &&
	    sn_step_reuse_store(p, sp, ids, run->node, run->gpus, run->mode, ok,
				run->outcome.elapsed_ms) < 0)
		rc = -1;

	/* Every run is logged to slurmd's log, with the helper's facts. */
	sn_step_log_result(p, "job %u step %u on %s: nccl-warmup %s in %.0f ms: %s",
			   ids->job_id, ids->step_id, run->node,
			   ok ? "passed" : "failed", run->outcome.elapsed_ms,
			   run->have_result ? res->result : "(no result)");

	message[0] = '\0';
	if (!ok) {
		run->fault = sn_step_blame(p, run->node, run->gpus, run->mode,
					   &run->outcome, run->have_result ?
					   &run->result : NULL, &run->confirm);
		if (run->confirm.leave_failed)
			rc = -1;
		describe_failure(p, sp, run, message, sizeof(message));
	}
failed:
	/* The record holds one line. */
	snprintf(record_line, sizeof(record_line), "%s", message);
	for (char *nl = strchr(record_line, '\n'); nl; nl = strchr(nl, '\n'))
		*nl = ' ';
	if (record_warmup(p, ids, run, ok, record_line) < 0)
		rc = -1;
	if (ok) {
		/* A health check at warn: said to the user, step runs. */
		if (rc == 0 && run->have_result &&
		    strstr(run->result.summary, SN_SUMMARY_WARNING))
			sn_step_tell(p, false, run->result.summary);
		else if (rc == 0 && p->warmup_req.verbose)
			sn_step_tell(p, false, run->have_result &&
				     run->result.summary[0] ?
				     run->result.summary : "warmup ok");
		if (rc == 0 && p->warmup_req.verbose)
			tell_nccl_log(p, sp, run);
		goto out;
	}
	if (p->cfg.warmup_policy == SN_POLICY_WARN) {
		strncat(message, " (warmup_policy=warn: the step runs anyway)",
			sizeof(message) - strlen(message) - 1);
		sn_step_tell(p, true, message);
	} else {
		sn_step_tell(p, true, message);
		rc = -1;
	}
	tell_nccl_log(p, sp, run);
out:
	free(run);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * nccl-warmup: checks that the GPUs this process sees are distinct and that
 * NCCL can build and use a communicator over them, within a deadline.
 * Run by spank_nccl.so as the job user, or by hand, a Prolog or NHC.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "comm.h"
#include "cuda_driver.h"
#include "fabric_key.h"
#include "nccl_loader.h"
#include "phases.h"
#include "warmup.h"

/* Steps 3-4: NCCL.  Aborts the communicators on any failure. */
/* This node's GPUs in one communicator (not fabric mode). */
static int run_nccl(struct wu_run *run, struct wu_cu *cu)
{
	struct wu_comm comm;
	int code;

	code = wu_gpus_create_contexts(run, cu);
	if (code)
		return code;
	wu_comm_local_only();
	code = wu_run_nccl(run, &comm,
			   run->opt.mode == SN_WARMUP_MODE_BANDWIDTH, NULL,
			   NULL);
	return wu_comm_end(run, &comm, code);
}

static int run_all(struct wu_run *run)
{
	struct wu_nccl nccl;
	struct wu_cu cu;
	int code;

	/* Fabric mode sets NCCL's log variables first (wu_fabric_run). */
	if (run->opt.mode == SN_WARMUP_MODE_FABRIC)
		return wu_fabric_run(run, &cu);
	/* NVML's init and GPU handles beside cuInit; its readings wait for
	 * cuInit's end (wu_health_nccl_load).  No setenv() from here on. */
	wu_health_start(run);
	code = wu_gpus_enumerate(run, &cu);
	if (code)
		return code;
	code = wu_gpus_check_duplicates(run);
	if (code)
		return code;
	code = wu_health_nccl_load(run, &nccl);
	if (code || run->opt.mode == SN_WARMUP_MODE_CHECK)
		return code;
	code = wu_one_gpu_check(run);
	if (code)
		return code;
	/*
	 * The driver enumerates one MIG instance per process, so several MIG
	 * devices here means a setup NCCL cannot use in one communicator
	 * (MIG has no peer-to-peer): note it rather than fail the node.
	 */
	if (run->n_gpus > 1 && sn_busid_any_mig(run->gpus, run->n_gpus)) {
		wu_note(run, "MIG: NCCL communicator check skipped");
		return SN_WARMUP_OK;
	}
	return run_nccl(run, &cu);
}

/*
 * A usage error still gives one summary line, and the JSON if it was
 * asked for, where it was asked for (--result-fd N or --result-fd=N).
 */
static void usage_json(struct wu_run *run, int argc, char **argv)
{
	static const char opt[] = "--" SN_HELPER_OPT_RESULT_FD;
	char ignored[128];
	const char *v;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--" SN_HELPER_OPT_JSON) == 0)
			run->opt.json = true;
		if (strncmp(argv[i], opt, sizeof(opt) - 1) != 0)
			continue;
		v = argv[i][sizeof(opt) - 1] == '=' ? argv[i] + sizeof(opt) :
		    argv[i][sizeof(opt) - 1] == '\0' && i + 1 < argc ?
		    argv[i + 1] : NULL;
		if (v && wu_cli_result_fd(v, ignored, sizeof(ignored)) >= 0)
			run->opt.result_fd = atoi(v);
	}
}

int main(int argc, char **argv)
{
	struct wu_run run;
	char err[256];

	/* Run as root by spank_nccl.so, before the helper proper. */
	if (argc > 1 && strcmp(argv[1], SN_HELPER_FABRIC_KEY_DERIVE) == 0)
		return fabric_key_derive_main(argc, argv);
	wu_run_init(&run);
	switch (wu_cli_parse(argc, argv, &run.opt, err, sizeof(err))) {
	case WU_CLI_EXIT_OK:
		return 0;
	case WU_CLI_USAGE:
		usage_json(&run, argc, argv);
		wu_report_and_exit(&run, wu_fail(&run, SN_WARMUP_USAGE,
						 "%s", err));
	case WU_CLI_RUN:
		break;
	}
	/* The result's descriptor is not for anything NCCL may start. */
	if (run.opt.result_fd >= 0)
		fcntl(run.opt.result_fd, F_SETFD, FD_CLOEXEC);
	/* Nor the step key's, read at the join, after libraries ran. */
	if (run.opt.fabric_key_fd >= 0)
		fcntl(run.opt.fabric_key_fd, F_SETFD, FD_CLOEXEC);
	/*
	 * One hardware queue per context (unless the job chose): creating
	 * the helper's contexts took 218 ms instead of 472 on 4 H200s
	 * (docs/dev/benchmarks.md, 12).  The job's processes make their
	 * own contexts; NCCL runs the same.  Before any thread (setenv).
	 */
	if (run.opt.mode != SN_WARMUP_MODE_CHECK &&
	    !getenv("CUDA_DEVICE_MAX_CONNECTIONS"))
		setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 1);
	/* A reader that went away must not kill us before the exit code. */
	signal(SIGPIPE, SIG_IGN);
	run.deadline = sn_deadline_after(run.t_start_ms,
					 (int64_t)run.opt.timeout_s * 1000);
	if (wu_watchdog_start(&run) != 0)
		wu_report_and_exit(&run,
				   wu_fail(&run, SN_WARMUP_INTERNAL,
					   "cannot start the watchdog thread"));
	wu_report_and_exit(&run, run_all(&run));
}

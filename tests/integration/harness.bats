#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# The test cluster itself, without the plugin: if these fail, every other
# integration test is meaningless.

SN_PLUGIN=0
load common

setup_file() { sn_file_setup; }
teardown_file() { sn_file_teardown; }
setup() { sn_test_setup; }

@test "harness: srun runs a task on the node" {
	run --separate-stderr sn_srun hostname
	sn_assert_status 0
	[ -n "$output" ] || sn_fail "no output"
}

@test "harness: --gres=gpu:2 gives a real CUDA_VISIBLE_DEVICES" {
	run --separate-stderr sn_srun --gres=gpu:2 printenv CUDA_VISIBLE_DEVICES
	sn_assert_status 0
	[ "$output" = "0,1" ] || sn_fail "CUDA_VISIBLE_DEVICES=$output"
}

@test "harness: many steps run at once" {
	local i pids=()
	for i in 1 2 3 4 5 6; do
		sn_srun sleep 1 &
		pids+=($!)
	done
	local start=$SECONDS
	for i in "${pids[@]}"; do
		wait "$i" || sn_fail "a concurrent srun failed"
	done
	[ $((SECONDS - start)) -le 4 ] || sn_fail "steps were serialised"
}

@test "harness: sbatch job runs and leaves the queue" {
	local script
	script=$(sn_batch_script harness.sh <<'S'
#!/bin/bash
echo batch-ran
srun printenv SLURM_STEP_ID
S
)
	sn_sbatch_run "$script" || sn_fail "sbatch failed"
	[ "$SN_JOB_EXIT" = "0:0" ] || sn_fail "job exit $SN_JOB_EXIT"
	grep -qx batch-ran <<<"$SN_JOB_OUT" || sn_fail "output: $SN_JOB_OUT"
	grep -qx 0 <<<"$SN_JOB_OUT" || sn_fail "no step 0: $SN_JOB_OUT"
}

@test "harness: salloc then srun" {
	run --separate-stderr sn_salloc -n2 timeout 20 srun printenv SLURM_PROCID
	sn_assert_status 0
	[ "$(sort <<<"$output" | paste -sd' ')" = "0 1" ] ||
		sn_fail "tasks: $output"
}

@test "harness: jobs run as the unprivileged user" {
	run --separate-stderr sn_as_user timeout 30 srun id -u
	sn_assert_status 0
	[ "$output" = "$(id -u "$SN_USER")" ] || sn_fail "uid $output"
}

@test "harness: a refused option leaves no job behind" {
	local before
	before=$(sn_jobs_snapshot)
	run --separate-stderr sn_srun --no-such-option true
	[ "$status" -ne 0 ] || sn_fail "srun accepted a bogus option"
	sn_assert_no_new_jobs "$before"
}

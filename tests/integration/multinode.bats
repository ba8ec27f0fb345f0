#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# Three slurmd nodes, each in its own network namespace: profiles reach
# every task on every node, per-step messages are printed once per step
# (not once per node), the warmup runs once per node.

SN_NODES=3
load common
load helpers/ras

setup_file() { sn_file_setup; }
teardown_file() { sn_file_teardown; }
setup() { sn_test_setup; }
teardown() { ras_job_stop; }

# Prints "NODE VALUE" per task for variable $1.
node_values() {
	local var=$1
	shift
	sn_srun "$@" sh -c "echo \"\$SLURMD_NODENAME \${$var-unset}\""
}

@test "3 nodes: srun -N3 runs one task on each node" {
	run --separate-stderr sn_srun -N3 hostname
	sn_assert_status 0
	[ "$(sort <<<"$output" | paste -sd' ')" = "n1 n2 n3" ] ||
		sn_fail "hostnames: $output"
}

@test "3 nodes: every node resolves every node name to its netns address" {
	local want
	run --separate-stderr sn_srun -N3 getent hosts n1 n2 n3
	sn_assert_status 0
	want="$SN_NET_PREFIX.11 n1 $SN_NET_PREFIX.12 n2 $SN_NET_PREFIX.13 n3"
	[ "$(awk '{ print $1, $2 }' <<<"$output" | sort | uniq -c |
		awk '{ print $1 }' | paste -sd' ')" = "3 3 3" ] &&
	[ "$(awk '{ print $1, $2 }' <<<"$output" | sort -u | paste -sd' ')" = "$want" ] ||
		sn_fail "getent hosts on n1-n3 (want $want, 3 times): $output"
}

@test "3 nodes: srun -N3 -n6 --nccl-profile reaches every task on every node" {
	run --separate-stderr node_values NCCL_CUMEM_ENABLE -N3 -n6 \
		--ntasks-per-node=2 --nccl-profile=nccl-cumem-off
	sn_assert_status 0
	[ "$(sort <<<"$output" | paste -sd' ')" = \
	  "n1 0 n1 0 n2 0 n2 0 n3 0 n3 0" ] || sn_fail "tasks: $output"
}

@test "3 nodes: the env-var form reaches every node" {
	SPANK_NCCL_PROFILE=expandable-segments run --separate-stderr \
		node_values PYTORCH_CUDA_ALLOC_CONF -N3
	sn_assert_status 0
	[ "$(sort <<<"$output" | paste -sd' ')" = \
	  "n1 expandable_segments:True n2 expandable_segments:True n3 expandable_segments:True" ] ||
		sn_fail "tasks: $output"
}

@test "3 nodes: a warning rule is printed once per step, not per node" {
	sn_plugstack_set "profiles=$(sn_write_test_profiles)"
	NCCL_DEBUG=INFO run --separate-stderr sn_srun -N3 -n6 \
		--nccl-profile=alpha true
	sn_assert_status 0
	[ "$(sn_count_msgs 'NCCL_DEBUG=INFO')" -eq 1 ] ||
		sn_fail "printed $(sn_count_msgs 'NCCL_DEBUG=INFO') times"
}

@test "3 nodes: the user-kept notice is printed once per step" {
	NCCL_ALGO=Ring run --separate-stderr sn_srun -N3 \
		--nccl-profile=ppo-tree printenv NCCL_ALGO
	sn_assert_status 0
	[ "$(sort -u <<<"$output")" = Ring ] || sn_fail "NCCL_ALGO: $output"
	[ "$(sn_count_msgs 'NCCL_ALGO')" -eq 1 ] ||
		sn_fail "printed $(sn_count_msgs 'NCCL_ALGO') times"
}

@test "3 nodes: #SBATCH --nccl-profile reaches the batch step and srun -N3" {
	local script
	script=$(sn_batch_script multi.sh <<'S'
#!/bin/bash
#SBATCH -N3
#SBATCH --nccl-profile=nccl-cumem-off
echo "batch $SLURMD_NODENAME ${NCCL_CUMEM_ENABLE-unset}"
srun -N3 sh -c 'echo "step $SLURMD_NODENAME ${NCCL_CUMEM_ENABLE-unset}"'
S
)
	sn_sbatch_run "$script" || sn_fail "sbatch failed"
	[ "$SN_JOB_EXIT" = "0:0" ] || sn_fail "job exit $SN_JOB_EXIT: $SN_JOB_OUT"
	grep -qx 'batch n1 0' <<<"$SN_JOB_OUT" || sn_fail "batch: $SN_JOB_OUT"
	[ "$(grep '^step' <<<"$SN_JOB_OUT" | sort | paste -sd' ')" = \
	  "step n1 0 step n2 0 step n3 0" ] || sn_fail "steps: $SN_JOB_OUT"
}

@test "3 nodes: the warmup runs once per node (-N3 -n6)" {
	local node job count
	sn_require_warmup
	sn_fake_env ok
	run --separate-stderr sn_srun -N3 -n6 --gres=gpu:2 --nccl-warmup=comm \
		printenv SLURM_JOB_ID
	sn_assert_status 0
	sn_assert_no_msgs
	job=$(head -n1 <<<"$output")
	[ "$(sn_fake_loads)" -eq 3 ] ||
		sn_fail "nccl-warmup ran $(sn_fake_loads) times, expected 3"
	for node in n1 n2 n3; do
		count=$(sn_warmup_runs "$node" "$job")
		[ "$count" -eq 1 ] ||
			sn_fail "$node: warmup ran $count times for job $job"
	done
}

@test "3 nodes: a failing warmup names the node, srun fails" {
	sn_require_warmup
	sn_fake_env duplicate
	run --separate-stderr sn_srun -N3 --gres=gpu:2 --nccl-warmup=comm true
	sn_assert_failed
	sn_assert_msg 'n[123]'
	sn_assert_msg '[Dd]uplicate|same PCI bus ID'
}

# Four ranks over n1-n3 (2+1+1), rank 3 on n3 one all-reduce behind:
# RAS names it by its node's address, the command by node and task.
@test "3 nodes: spank-nccl-status names the rank behind, its task and its node" {
	local verdict
	sn_require_warmup
	export FAKE_NCCL_RAS_BEHIND=3
	ras_job_start "$SN_NET_PREFIX.11" 4 -N3 -n4 --gres=gpu:2 || return 1
	run --separate-stderr ras_status "$RAS_JOB"
	sn_assert_status 0
	echo "$output" >"$SN_CLUSTER_DIR/tmp/ras-status-3nodes.txt"
	verdict="verdict: rank 3 (task 3 on n3, GPU 0) has launched AllReduce 1 while the other 3 ranks are at 2"
	[ "${lines[-1]}" = "$verdict" ] || sn_fail "want [$verdict]"
	[[ ${lines[0]} == "step $RAS_JOB.0 (user root): NCCL "*", RAS asked on n1, 1 communicator" ]] ||
		sn_fail "first line"
}

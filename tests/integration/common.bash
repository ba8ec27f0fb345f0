# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Shared by the integration tests (bats).  Each .bats file starts one
# throwaway cluster in setup_file and stops it in teardown_file; every
# client command runs under a deadline.
#
# Environment (see tests/cluster/cluster.sh for the rest):
#   SN_BUILD_DIR   build tree with the plugin, helper and fake libraries
#   SN_TIMEOUT     seconds any srun/sbatch/salloc may take (default 30)

bats_require_minimum_version 1.5.0

SN_TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../cluster/cluster.sh
source "$SN_TESTS_DIR/../cluster/cluster.sh"

# A user-visible line of the plugin: "spank-nccl: ..." as printed by the
# plugin itself, or behind the prefix Slurm's logger adds ("srun: error: ",
# "slurmstepd-n1: error: "; from slurmstepd, 26.05 prints a timestamp
# instead of the program name: "[2026-11-22T23:31:02.989] error: ").
SN_MSG_RE='^(([A-Za-z]+(-[^ :]+)?:|\[[0-9T:.-]+\]) ((error|warning|info): )?)?spank-nccl: '

sn_file_setup() {
	sn_cluster_start
}

sn_file_teardown() {
	sn_cluster_stop
}

# Per-test: back to the cluster's own plugstack.conf, and no NCCL/PyTorch
# or spank-nccl settings inherited from whoever runs the tests (srun
# exports the caller's environment to the tasks).
sn_test_setup() {
	local v
	sn_plugstack_reset
	sn_node_fake
	for v in $(compgen -e); do
		case $v in
		NCCL_* | PYTORCH_* | SPANK_NCCL_* | SLURM_SPANK_* | FAKE_* | \
		CUDA_VISIBLE_DEVICES | LD_PRELOAD | \
		SLURM_JOB_ID | SLURM_JOBID | SLURM_STEP_ID)
			unset "$v" ;;
		esac
	done
	cd "$SN_CLUSTER_DIR/tmp" || return 1
}

# srun with a deadline and no stdin.  Extra environment for srun goes in
# front:  run --separate-stderr sn_srun -n2 env
sn_srun() {
	sn_timeout srun "$@" </dev/null
}

sn_salloc() {
	sn_timeout salloc "$@" </dev/null
}

sn_sbatch() {
	sn_timeout sbatch "$@" </dev/null
}

# Fails the test with MESSAGE and what the last `run` produced.
sn_fail() {
	{
		echo "FAILED: $*"
		echo "-- status: ${status:-}"
		echo "-- stdout:"
		printf '%s\n' "${output:-}"
		echo "-- stderr:"
		printf '%s\n' "${stderr:-}"
	} >&2
	return 1
}

# The value of VAR in env(1) output TEXT (one task's or many); fails if
# absent.
sn_env_value() {
	local var=$1 text=$2
	printf '%s\n' "$text" | sed -n "s/^$var=//p" | head -n1
}

# Asserts every one of N tasks printed VAR=VALUE (env output of N tasks).
sn_assert_env_all() {
	local var=$1 value=$2 n=$3 text=${4:-$output} got
	got=$(printf '%s\n' "$text" | grep -cxF "$var=$value" || true)
	[ "$got" -eq "$n" ] ||
		sn_fail "expected $n tasks with $var=$value, got $got"
}

sn_assert_env_absent() {
	local var=$1 text=${2:-$output}
	if printf '%s\n' "$text" | grep -q "^$var="; then
		sn_fail "$var present, expected absent"
	fi
}

# Number of plugin message lines in TEXT (default: $stderr) matching the
# extended regex PATTERN (after the spank-nccl: prefix).
sn_count_msgs() {
	local pattern=$1 text=${2-$stderr}
	printf '%s\n' "$text" | grep -E "$SN_MSG_RE" |
		grep -cE "$pattern" || true
}

# Asserts TEXT (default $stderr) has at least one plugin message line
# matching PATTERN.
sn_assert_msg() {
	local pattern=$1 text=${2-$stderr}
	[ "$(sn_count_msgs "$pattern" "$text")" -ge 1 ] ||
		sn_fail "no 'spank-nccl:' message matching /$pattern/"
}

sn_assert_no_msgs() {
	local text=${1-$stderr}
	if printf '%s\n' "$text" | grep -q 'spank-nccl:'; then
		sn_fail "unexpected spank-nccl output"
	fi
}

sn_assert_status() {
	[ "$status" -eq "$1" ] || sn_fail "exit status $status, expected $1"
}

# Failed by itself, not killed by the test's deadline.
sn_assert_failed() {
	[ "$status" -ne 0 ] || sn_fail "exit status 0, expected a failure"
	if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
		sn_fail "killed by the test's deadline (status $status)"
	fi
}

# Snapshot of every job id the controller knows; compare after a refused
# command to prove nothing was created.
sn_jobs_snapshot() {
	sn_all_job_ids | paste -sd' ' -
}

sn_assert_no_new_jobs() {
	local before=$1 after
	after=$(sn_jobs_snapshot)
	[ "$after" = "$before" ] ||
		sn_fail "jobs were created: before [$before] after [$after]"
}

# Waits until job ID has left the queue (polls; faster than --wait).
sn_wait_job() {
	local id=$1 tries=$((${SN_TIMEOUT:-30} * 10))
	while ((tries-- > 0)); do
		if ! sn_timeout squeue -h -j "$id" -t pending,running,configuring,completing \
			2>/dev/null | grep -q .; then
			return 0
		fi
		sleep 0.1
	done
	echo "job $id still queued after ${SN_TIMEOUT:-30} s" >&2
	return 1
}

# "0:0" style exit code of a finished job.
sn_job_exit_code() {
	sn_timeout scontrol show job "$1" | sed -n 's/.*[^a-zA-Z]ExitCode=\([0-9:]*\).*/\1/p'
}

# Writes a batch script from stdin into the cluster's tmp dir; prints path.
sn_batch_script() {
	local path="$SN_CLUSTER_DIR/tmp/$1"
	cat >"$path"
	chmod 0755 "$path"
	echo "$path"
}

# Submits SCRIPT with sbatch ARGS..., waits for it, and sets
# SN_JOB_ID, SN_JOB_OUT (its stdout+stderr) and SN_JOB_EXIT for the test.
# shellcheck disable=SC2034
sn_sbatch_run() {
	local out
	out=$(sn_sbatch --parsable -o "$SN_CLUSTER_DIR/tmp/job-%j.out" "$@") ||
		return 1
	SN_JOB_ID=${out%%;*}
	sn_wait_job "$SN_JOB_ID" || return 1
	SN_JOB_OUT=$(cat "$SN_CLUSTER_DIR/tmp/job-$SN_JOB_ID.out" 2>/dev/null)
	SN_JOB_EXIT=$(sn_job_exit_code "$SN_JOB_ID")
}

# A profile file for tests that need profiles the shipped file may not
# have (conflicts, rules).  Written into the cluster; prints its path.
sn_write_test_profiles() {
	local path="$SN_CLUSTER_DIR/etc/test-profiles.conf"
	cat >"$path" <<'EOF'
# Test profiles for the integration tests.
[profile alpha]
description = test profile alpha
set SN_TEST_ALPHA=a1
set SN_TEST_SHARED=alpha

[profile beta]
description = test profile beta
set SN_TEST_BETA=b1
set SN_TEST_SHARED=beta

[profile gamma]
description = test profile gamma
set SN_TEST_GAMMA=g1

[rule debug-info-is-slow]
level = warning
message = NCCL_DEBUG=INFO logs every communicator setup and slows startup
when NCCL_DEBUG = INFO

[rule forbidden-combination]
level = error
message = SN_TEST_FORBID=1 cannot be combined with profile gamma
when SN_TEST_FORBID = 1
when SN_TEST_GAMMA = g1
EOF
	chmod 0644 "$path"
	echo "$path"
}

# Requires a file; a missing build product is a failure, never a skip.
sn_require_file() {
	[ -e "$1" ] || sn_fail "missing $1 (${2:-not built})"
}

# ---------------------------------------------------------------------
# Warmup: the fake NVIDIA driver and NCCL (tests/fake, built by make
# check) stand in for the GPUs.  They are steered by FAKE_* variables,
# which srun passes to the step and the plugin passes to nccl-warmup with
# the rest of the job's environment.

# Exports LD_LIBRARY_PATH and the FAKE_* variables of SCENARIO, and a
# fresh per-test log (FAKE_CUDA_LOG) where the fake libcuda records each
# process that loaded it: "lib=cuda pid=P uid=r/e/s gid=r/e/s".
sn_fake_env() {
	local scenario=$1
	SN_FAKE_LOG="$SN_CLUSTER_DIR/tmp/fake-cuda-${BATS_TEST_NUMBER:-0}.log"
	rm -f "$SN_FAKE_LOG"
	export LD_LIBRARY_PATH
	LD_LIBRARY_PATH=$(sn_fake_lib_dir)
	export FAKE_CUDA_LOG="$SN_FAKE_LOG"
	case $scenario in
	ok) ;;
	gh200)	# four GPUs that differ only in their PCI domain
		export FAKE_CUDA_BUSIDS=0009:01:00.0,0019:01:00.0,0029:01:00.0,0039:01:00.0 ;;
	duplicate)	# GPUs 0 and 1 report the same bus ID
		export FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0,0000:03:00.0,0000:04:00.0 ;;
	cuda-init-fail) export FAKE_CUDA_FAIL=init ;;
	nccl-init-fail) export FAKE_NCCL_FAIL=init ;;
	crash) export FAKE_NCCL_CRASH=init ;;
	wrong-result) export FAKE_NCCL_WRONG_RESULT=1 ;;
	# slow and fast straddle warmup.bats's floor of 4 GB/s.  Fast is
	# only 10x the floor so that its five timed all-reduces (64 MiB, 8 ms
	# in all) stay above it through ~75 ms of scheduler lateness on a
	# loaded CI machine; slow can only measure slower.
	slow) export FAKE_NCCL_BUSBW_GBPS=1 ;;
	fast) export FAKE_NCCL_BUSBW_GBPS=40 ;;
	hang) export FAKE_NCCL_HANG=init ;;
	*) echo "sn_fake_env: unknown scenario $scenario" >&2; return 1 ;;
	esac
	# The scenario is the node's hardware: its root confirmation sees it.
	sn_node_fake_from_env
}

# NODE's state (sinfo %T) once its last job has left it: srun and sbatch
# return before slurmd's epilog and its report reach slurmctld, so a
# node is "completing" (or still "mixed") for a moment after its job.
sn_node_settled() {
	sn__wait_for 300 sh -c "sinfo -h -N -o %T -n '$1' | grep -qvE '^(completing|mixed|allocated)'"
	sinfo -h -N -o %T -n "$1"
}

# The FAKE_* this test exported (FAKE_CUDA_LOG aside: it counts the
# job's helper runs) as the nodes' fake hardware (sn_node_fake).
sn_node_fake_from_env() {
	local v vars=()
	for v in $(compgen -e); do
		case $v in
		FAKE_CUDA_LOG) ;;
		FAKE_*) vars+=("$v=${!v}") ;;
		esac
	done
	sn_node_fake "${vars[@]}"
}

# How many processes loaded the fake libcuda since sn_fake_env (the
# tasks in these tests never load it: only nccl-warmup does).
sn_fake_loads() {
	if [ -f "$SN_FAKE_LOG" ]; then
		grep -c '^lib=cuda ' "$SN_FAKE_LOG" || true
	else
		echo 0
	fi
}

# How many times the plugin ran nccl-warmup on NODE for job JOB (it logs
# every run to the node's slurmd log).
sn_warmup_runs() {
	local node=$1 job=$2
	grep -cE "job $job step [0-9]+ on $node: nccl-warmup (passed|failed)" \
		"$(sn_slurmd_log "$node")" || true
}

# nccl-warmup processes of this cluster still alive.
sn_helper_procs() {
	local p helper
	helper=$(sn_helper_path)
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/exe" 2>/dev/null)" = "$helper" ] || continue
		basename "$p"
	done
}

sn_require_warmup() {
	sn_require_file "$(sn_helper_path)" "nccl-warmup not built" || return 1
	sn_require_file "$(sn_fake_dir cuda)/libcuda.so.1" \
		"fake libcuda not built (make check)" || return 1
	sn_require_file "$(sn_fake_dir nccl)/libnccl.so.2" \
		"fake libnccl not built (make check)"
}

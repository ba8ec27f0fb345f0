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
# "slurmstepd-n1: error: ").
SN_MSG_RE='^([A-Za-z]+(-[^ :]+)?: ((error|warning|info): )?)?spank-nccl: '

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
	for v in $(compgen -e); do
		case $v in
		NCCL_* | PYTORCH_* | SPANK_NCCL_* | SLURM_SPANK_* | FAKE_* | \
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
	local name=$1 path="$SN_CLUSTER_DIR/tmp/$1"
	cat >"$path"
	chmod 0755 "$path"
	echo "$path"
}

# Submits SCRIPT with sbatch ARGS..., waits for it, and sets
# SN_JOB_ID, SN_JOB_OUT (its stdout+stderr) and SN_JOB_EXIT.
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

#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# What differs between the Slurm releases spank-nccl is tested on (22.05,
# 24.11, 26.05: tests/cluster/release.sh), pinned per release: every test
# states what this release must do, so a release that changes behaviour
# fails here instead of surprising users.  docs/user-guide.md and
# docs/admin-guide.md ("Supported Slurm versions") describe the same.

load common

setup_file() { sn_file_setup; }
teardown_file() { sn_file_teardown; }
setup() { sn_test_setup; }

@test "releases: the plugin, the headers and the running daemons are one Slurm release" {
	local built running
	built=$(sn_release_local full)
	running=$(sn_timeout scontrol --version | awk '{ print $2 }')
	[ "$built" = "$running" ] ||
		sn_fail "plugin built against spank.h $built, daemons are $running"
	[ "$(sn_release_wanted)" = "${built%.*}" ] ||
		sn_fail "SN_SLURM_RELEASE=$(sn_release_wanted) but Slurm $built runs"
	# Slurm refuses a plugin of another major release: loading it at all
	# proves plugin_version matched.
	run --separate-stderr sn_srun --nccl-profile=list
	sn_assert_status 0
	[[ $output == *quiet-logs* ]] || sn_fail "no profile list from srun"
}

# The batch script's own NCCL_DEBUG, and that of an srun inside it, for
# `sbatch --export=MODE --nccl-profile=quiet-logs` (quiet-logs sets
# NCCL_DEBUG=WARN).  With --export=NONE the script has no PATH.
batch_under_export() {
	local mode=$1 script srun printenv
	srun=$(command -v srun)
	printenv=$(command -v printenv)
	script=$(sn_batch_script "export-$mode.sh" <<S
#!/bin/bash
echo "batch=\${NCCL_DEBUG:-unset}"
echo "step=\$($srun -n1 $printenv NCCL_DEBUG || echo failed)"
S
)
	sn_sbatch_run --export="$mode" --nccl-profile=quiet-logs "$script" ||
		sn_fail "sbatch --export=$mode failed"
	[ "$SN_JOB_EXIT" = "0:0" ] ||
		sn_fail "job exit $SN_JOB_EXIT: $SN_JOB_OUT"
	echo "$SN_JOB_OUT"
}

@test "releases: sbatch --export=ALL: the batch script and its steps get the profile" {
	run batch_under_export ALL
	sn_assert_status 0
	[[ $output == *batch=WARN* ]] || sn_fail "batch script without the profile"
	[[ $output == *step=WARN* ]] || sn_fail "srun inside without the profile"
}

# Slurm 23.11 forwards the _SLURM_SPANK_OPTION_* variables to the batch
# step under --export=NONE, 24.05 also under --export=<list>; before, the
# plugin's option never reached the batch step's slurmstepd, so the batch
# script ran without the profile.  The sruns inside get it on every
# release: sbatch exports SLURM_SPANK__SLURM_SPANK_OPTION_* to the job,
# and SLURM_* variables pass every --export mode.
# assert_batch_profile_since MODE RELEASE: the batch script has the
# profile from RELEASE on, not before; its steps always.
assert_batch_profile_since() {
	local mode=$1 since=$2 rel
	rel=$(sn_release_local)
	run batch_under_export "$mode"
	sn_assert_status 0
	[[ $output == *step=WARN* ]] || sn_fail "srun inside without the profile"
	if sn_slurm_at_least "$since"; then
		[[ $output == *batch=WARN* ]] ||
			sn_fail "Slurm $rel >= $since: batch script should have the profile"
	else
		[[ $output == *batch=unset* ]] ||
			sn_fail "Slurm $rel < $since: batch script unexpectedly has the profile (release behaviour changed: update docs/user-guide.md)"
	fi
}

@test "releases: sbatch --export=NONE: the batch script gets the profile from 23.11 on; its steps on every release" {
	assert_batch_profile_since NONE 23.11
}

@test "releases: sbatch --export=<list>: the batch script gets the profile from 24.05 on; its steps on every release" {
	assert_batch_profile_since SLURM_CONF 24.05
}

# Slurm relays slurmstepd's error() lines to the user's terminal with a
# prefix of its own: "slurmstepd-NODE: error: " up to 24.11, a timestamp
# "[YYYY-MM-DDThh:mm:ss.mmm] error: " on 26.05 (docs/user-guide.md, "When
# something goes wrong").  Releases in between are not tested.
@test "releases: a compute-node message reaches the user with this release's prefix" {
	sn_plugstack_set "warmup_helper=$SN_CLUSTER_DIR/libexec/no-such-helper"
	run --separate-stderr sn_srun -n1 --gres=gpu:1 --nccl-warmup=check true
	sn_assert_failed
	sn_assert_msg "could not execute"
	if sn_slurm_at_least 26.05; then
		grep -qE '^\[[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+\] error: spank-nccl: ' <<<"$stderr" ||
			sn_fail "Slurm $(sn_release_local): expected a timestamp prefix"
	else
		grep -qE '^slurmstepd-n1: error: spank-nccl: ' <<<"$stderr" ||
			sn_fail "Slurm $(sn_release_local): expected 'slurmstepd-n1: error: '"
	fi
	[[ $stderr == *"srun: error: n1: task 0: Exited with exit code 1"* ]] ||
		sn_fail "no task failure line"
}

# SlurmdParameters=contain_spank (24.05+, with a job_container/namespace
# plugin) runs user_init -- and so the warmup helper spank-nccl starts
# there -- inside the job's mount namespace, where the tasks run.
# tests/release-suite.sh runs this file with and without it.
@test "releases: the warmup helper runs in the tasks' mount namespace, inside the job container only with contain_spank" {
	local helper="$SN_CLUSTER_DIR/libexec/ns-helper" rec slurmd_ns task_ns helper_ns
	rec="$SN_CLUSTER_DIR/tmp/ns-helper-$BATS_TEST_NUMBER"
	rm -f "$rec"
	printf '#!/bin/sh\nPATH=/usr/bin:/bin readlink /proc/self/ns/mnt >%s\n' "$rec" >"$helper"
	chmod 0755 "$helper"
	sn_plugstack_set "warmup_helper=$helper"
	run --separate-stderr sn_srun -n1 --gres=gpu:2 --nccl-warmup=check \
		readlink /proc/self/ns/mnt
	sn_assert_status 0
	task_ns=$output
	helper_ns=$(cat "$rec") || sn_fail "the helper did not run"
	slurmd_ns=$(readlink "/proc/$(cat "$SN_CLUSTER_DIR/run/slurmd-n1.pid")/ns/mnt")
	[ "$helper_ns" = "$task_ns" ] ||
		sn_fail "helper in $helper_ns, tasks in $task_ns"
	case ",$SN_SLURMD_PARAMETERS," in
	*,contain_spank,*)
		[ "$task_ns" != "$slurmd_ns" ] ||
			sn_fail "contain_spank: the job has no namespace of its own" ;;
	*)
		[ "$task_ns" = "$slurmd_ns" ] ||
			sn_fail "no job container configured, yet the tasks run in $task_ns, slurmd in $slurmd_ns" ;;
	esac
}

# job_container/tmpfs keeps each job's mount namespace by bind-mounting
# it from slurmd's namespace, which the kernel refuses (EINVAL) unless
# slurmd's is older by id; on kernels that number namespaces per CPU a
# namespace made later can be "older" (tests/cluster/lowns.sh).  The
# cluster's slurmd runs in the host's namespace, a release root's or a
# netns node's: each must be older than any made now, or contain_spank
# jobs fail at random ("Nodes n1 are still not ready").
@test "releases: slurmd's mount namespace is older than any made after it (job containers can keep theirs)" {
	local pid
	pid=$(cat "$SN_CLUSTER_DIR/run/slurmd-n1.pid")
	run bash "$SN_TESTS_DIR/../cluster/lowns.sh" --check "$pid"
	sn_assert_status 0
}

# The tests' sn_sbatch_wait (tests/cluster/cluster.sh) stands for sbatch
# --wait without its 2-8-32 s polling: same exit code as this release's
# sbatch --wait for a script that succeeds, fails, is killed by a signal,
# for a job sbatch refuses and for none submitted (--nccl-profile=list).
@test "releases: sn_sbatch_wait exits as this release's sbatch --wait does" {
	local s want got
	for s in 'exit 0' 'exit 3' 'kill -9 $$'; do
		printf '#!/bin/bash\n%s\n' "$s" >"$SN_CLUSTER_DIR/tmp/wait-$BATS_TEST_NUMBER.sh"
		want=0 got=0
		sn_sbatch --wait -o /dev/null "$SN_CLUSTER_DIR/tmp/wait-$BATS_TEST_NUMBER.sh" >/dev/null 2>&1 || want=$?
		sn_sbatch_wait -o /dev/null "$SN_CLUSTER_DIR/tmp/wait-$BATS_TEST_NUMBER.sh" >/dev/null 2>&1 || got=$?
		[ "$got" = "$want" ] || sn_fail "'$s': sn_sbatch_wait exit $got, sbatch --wait exit $want"
	done
	want=0 got=0
	sn_sbatch --wait --gres=gpu:9 --wrap true >/dev/null 2>&1 || want=$?
	sn_sbatch_wait --gres=gpu:9 --wrap true >/dev/null 2>&1 || got=$?
	[ "$want" -ne 0 ] && [ "$got" = "$want" ] ||
		sn_fail "refused job: sn_sbatch_wait exit $got, sbatch --wait exit $want"
	want=0 got=0
	sn_sbatch --wait --nccl-profile=list --wrap true >/dev/null 2>&1 || want=$?
	run sn_sbatch_wait --nccl-profile=list --wrap true
	[ "$status" = "$want" ] && [[ $output == *quiet-logs* ]] ||
		sn_fail "--nccl-profile=list: sn_sbatch_wait exit $status, sbatch --wait exit $want, or no list"
}

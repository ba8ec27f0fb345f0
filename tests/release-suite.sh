#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Builds spank-nccl against one Slurm release and runs its unit and
# integration tests on that release's own daemons; tests/run-all.sh calls
# it once per release and counts what it leaves in RESULTS:
#   steps.tap         configure, make, integration-deps (one TAP line each)
#   test-suite.log    make check (automake's log)
#   NAME.tap          each tests/integration/*.bats file
#   contain_spank-NAME.tap  the suites of the hooks contain_spank moves
#                     again with SlurmdParameters=contain_spank (the
#                     newest release; SN_CONTAIN_SPANK=0 leaves them out)
#   ci-50-deb.tap     the .deb built, installed and tested (chroot releases;
#                     the host's runs from tests/ci.d with the other suites)
#
#   bash tests/release-suite.sh BUILD_DIR RESULTS_DIR
#
# SN_SLURM_RELEASE picks the release (tests/cluster/release.sh): for 24.11
# and 26.05 this script re-runs itself inside the release's Debian root,
# so the build uses that root's compiler and spank.h and the tests its
# slurmctld, slurmd, slurmstepd and clients.
set -uo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=cluster/release.sh
source "$src/tests/cluster/release.sh"
export SN_SRC_DIR="$src"
sn_release_reexec "$src/tests/release-suite.sh" "$@"

build=${1:?usage: release-suite.sh BUILD_DIR RESULTS_DIR}
results=${2:?usage: release-suite.sh BUILD_DIR RESULTS_DIR}
jobs=${SN_JOBS:-2}
rel=$(sn_release_local)
mkdir -p "$build" "$results" || exit 1
rm -f "$results"/*.tap "$results"/test-suite.log "$results"/times.txt
steps="$results/steps.tap"
n=0

step_ok() { n=$((n + 1)); echo "ok $n - Slurm $rel: $*" >>"$steps"; }
step_fail() {
	n=$((n + 1))
	echo "not ok $n - Slurm $rel: $1" >>"$steps"
	[ $# -lt 2 ] || printf '%s\n' "$2" | sed 's/^/# /' >>"$steps"
}
# A build step that fails ends the run: nothing after it can work.
end() { echo "1..$n" >>"$steps"; exit 0; }
trap end EXIT

echo "release-suite.sh: Slurm $(sn_release_local full), $(cc --version | head -n1)"
t_build=$SECONDS
cd "$build" || exit 1
if out=$("$src/configure" -q 2>&1); then
	step_ok "configure (spank.h of Slurm $(sn_release_local full))"
else
	step_fail "configure" "$(tail -n 30 <<<"$out")"
	exit 0
fi
if out=$(make -j"$jobs" 2>&1); then
	step_ok "make (-Werror, $(cc --version | head -n1))"
else
	step_fail "make" "$(grep -E 'error|warning' <<<"$out" | head -n 30)"
	exit 0
fi
make -j"$jobs" check >"$results/make-check.log" 2>&1
cp -f test-suite.log "$results/test-suite.log" 2>/dev/null
if out=$(make -j"$jobs" integration-deps 2>&1); then
	step_ok "make integration-deps"
	echo "$((SECONDS - t_build)) build+unit" >>"$results/times.txt"
else
	step_fail "make integration-deps" "$(tail -n 20 <<<"$out")"
	exit 0
fi

export SN_BUILD_DIR="$build"
cd "$src" || exit 1
# Each file's wall time goes to times.txt ("SECONDS NAME"), which
# run-all.sh sums up per release.
run_bats() {	# run_bats PREFIX FILE...
	local prefix=$1 f name t0
	shift
	for f in "$@"; do
		name=${prefix:+$prefix-}$(basename "$f" .bats)
		echo "---- Slurm $rel: ${prefix:+$prefix }$f"
		t0=$SECONDS
		bats --tap "$f" >"$results/$name.tap" 2>&1
		echo "$((SECONDS - t0)) $name" >>"$results/times.txt"
		grep -E '^(not ok|1\.\.)' "$results/$name.tap"
		echo "(${name}: $((SECONDS - t0)) s)"
	done
}
# Every bats file: harness first (it proves the cluster itself).  One
# runs on the host's release only (run-all.sh sets SN_RELEASE_IS_HOST):
# fleet.bats and fleet_alerts.bats, whose record file, metrics, report,
# rules and dashboard are spank-nccl's own code whatever the release, need
# prometheus-node-exporter and prometheus, which the release roots do not
# have.  containers*.bats run everywhere (the roots carry enroot's packages).
host_only='/(fleet|fleet_alerts)\.bats$'
# auth/slurm exists from 23.11: fabric_auth.bats is not run before (a
# skipped test is a failure under CI, and there is nothing to test).
auth_slurm_only='/fabric_auth\.bats$'
# shellcheck disable=SC2046
run_bats "" tests/integration/harness.bats \
	$(ls tests/integration/*.bats | grep -v '/harness.bats$' |
	  if [ "${SN_RELEASE_IS_HOST:-1}" = 1 ]; then cat; else grep -Ev "$host_only"; fi |
	  if sn_slurm_at_least 23.11; then cat; else grep -Ev "$auth_slurm_only"; fi)

# 24.05's opt-in SlurmdParameters=contain_spank runs user_init,
# task_post_fork and task_exit in a clone(CLONE_VM) child inside the
# job container: the warmup helper then has a short-lived parent.  The
# suites that exercise those hooks run again with it: profiles (applied
# in user_init), warmup and faults (the helper spawned, waited for,
# killed at its deadline there), privilege (stripped of privileges
# there) and releases (the helper really runs in the job's namespace).
# The job container needs slurmd's mount namespace older than the job's
# (tests/cluster/lowns.sh); without that, jobs failed at random with
# "srun: error: Nodes n1 are still not ready".
# Once, on the newest release (the hooks contain_spank moves are the same
# on 24.05 and later): CI's time goes to what differs between releases.
if [ "${SN_CONTAIN_SPANK:-1}" = 1 ] && sn_slurm_at_least 25.05; then
	SN_SLURMD_PARAMETERS=contain_spank run_bats contain_spank \
		tests/integration/profiles.bats tests/integration/warmup.bats \
		tests/integration/faults.bats tests/integration/privilege.bats \
		tests/integration/releases.bats
fi

# auth/slurm (23.11+; tests/cluster/cluster.sh's SN_AUTH): no munged, so
# the fabric warmup's strangers meet the step key instead of MUNGE, and so
# does a pyxis step's.  Once, on the newest release, as contain_spank
# above: what a release changes of auth/slurm (its key file, the step key
# derived from it) is fabric_auth.bats' (in the loop above, on every
# release that has it); refusing the strangers is the helper's own code.
if sn_slurm_at_least 25.05; then
	SN_AUTH=slurm run_bats auth_slurm tests/integration/fabric_hostile.bats \
		tests/integration/containers_multinode.bats
fi

# The host's .deb is built and tested by tests/ci.d/50-deb.sh with the
# other host suites; a chroot release builds its own against its libslurm.
# What the host's run already proves of the package is not repeated: its
# build skips the unit tests (nocheck: this script ran them above, in
# this root, with the same compiler and headers), and of the integration
# files against the installed package only warmup runs (the installed
# plugin from this Slurm's plugin directory and the helper from libexec;
# profiles and prolog there differ from the build tree's only by path,
# which the host's run and the package checks cover).
if [ "${SN_RELEASE_PACKAGE:-1}" = 1 ] && [ "$rel" != 22.05 ]; then
	echo "---- Slurm $rel: tests/ci.d/50-deb.sh"
	t0=$SECONDS
	DEB_BUILD_OPTIONS="nocheck${DEB_BUILD_OPTIONS:+ $DEB_BUILD_OPTIONS}" \
	SN_DEB_SUITES=${SN_DEB_SUITES:-warmup} \
		bash tests/ci.d/50-deb.sh >"$results/ci-50-deb.tap" 2>&1
	echo "$((SECONDS - t0)) ci-50-deb" >>"$results/times.txt"
	grep -E '^(not ok|1\.\.)' "$results/ci-50-deb.tap"
fi

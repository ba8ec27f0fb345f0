#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The whole test suite, as root on Debian 12:
#   dependencies -> autoreconf -> configure (_build) -> make -> make check
#   (unit tests) -> integration tests on a throwaway Slurm cluster (one node,
#   then three nodes in network namespaces) [-> make distcheck] [-> bench]
# and a last line "N passed, N failed".  Exits non-zero on any failure.
#
#   SN_DISTCHECK=1   also run `make distcheck` (default: on when CI=true)
#   SN_BENCH=1       also run bench/launch-latency.sh (never by default)
#   SN_SKIP_DEPS=1   do not run tests/install-deps.sh
#   CI=true          nothing may be skipped: a missing tool is a failure
set -uo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$src/_build"
ci=0
case "${CI:-}" in true | 1 | yes) ci=1 ;; esac
: "${SN_DISTCHECK:=$ci}"
: "${SN_BENCH:=0}"
: "${SN_SKIP_DEPS:=0}"
jobs=${SN_JOBS:-2}

passed=0
failed=0
skipped=0
failures=()

step() {
	printf '\n==== %s\n' "$*"
}

fail_step() {
	failed=$((failed + 1))
	failures+=("$1")
	echo "run-all.sh: FAILED: $1" >&2
}

finish() {
	echo
	if [ ${#failures[@]} -gt 0 ]; then
		echo "failures:"
		printf '  %s\n' "${failures[@]}"
	fi
	if [ "$skipped" -gt 0 ]; then
		echo "$skipped skipped"
	fi
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

# A step that cannot run at all ends the run: later steps depend on it.
fatal() {
	fail_step "$1"
	finish
}

# Adds the counts of an automake test-suite.log.
count_automake() {
	local log=$1 p f s
	p=$(sed -n 's/^# PASS: *\([0-9]*\)/\1/p' "$log" | head -n1)
	f=$(sed -n 's/^# FAIL: *\([0-9]*\)/\1/p' "$log" | head -n1)
	s=$(sed -n 's/^# SKIP: *\([0-9]*\)/\1/p' "$log" | head -n1)
	local xf xp er
	xf=$(sed -n 's/^# XFAIL: *\([0-9]*\)/\1/p' "$log" | head -n1)
	xp=$(sed -n 's/^# XPASS: *\([0-9]*\)/\1/p' "$log" | head -n1)
	er=$(sed -n 's/^# ERROR: *\([0-9]*\)/\1/p' "$log" | head -n1)
	passed=$((passed + ${p:-0} + ${xf:-0}))
	failed=$((failed + ${f:-0} + ${xp:-0} + ${er:-0}))
	if [ "${f:-0}" -gt 0 ] || [ "${er:-0}" -gt 0 ] || [ "${xp:-0}" -gt 0 ]; then
		failures+=("unit tests: $(grep -E '^(FAIL|ERROR|XPASS):' "$log" |
			paste -sd' ' -)")
	fi
	count_skips "${s:-0}" "unit tests"
}

# Skips are failures under CI (a skipped test proves nothing).
count_skips() {
	local n=$1 what=$2
	[ "$n" -gt 0 ] || return 0
	if [ "$ci" = 1 ]; then
		failed=$((failed + n))
		failures+=("$what: $n skipped (not allowed under CI)")
	else
		skipped=$((skipped + n))
	fi
}

# Adds the counts of a bats TAP stream.
count_tap() {
	local tap=$1 what=$2 p f s plan ran
	p=$(grep -E '^ok ' "$tap" | grep -vc ' # skip' || true)
	s=$(grep -E '^ok .* # skip' "$tap" | grep -c . || true)
	f=$(grep -cE '^not ok ' "$tap" || true)
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$f" -gt 0 ]; then
		while IFS= read -r line; do
			failures+=("$what: ${line#not ok }")
		done < <(grep -E '^not ok ' "$tap")
	fi
	count_skips "$s" "$what"
	# A file that died before running all its tests: count the rest.
	plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$tap" | head -n1)
	ran=$((p + f + s))
	if [ -z "$plan" ]; then
		fail_step "$what: no TAP plan (bats did not run)"
	elif [ "$ran" -lt "$plan" ]; then
		failed=$((failed + plan - ran))
		failures+=("$what: $((plan - ran)) tests never reported")
	fi
}

need() {
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null 2>&1 || return 1
	done
}

cd "$src" || exit 1

step "dependencies"
if [ "$SN_SKIP_DEPS" = 1 ]; then
	echo "skipped (SN_SKIP_DEPS=1)"
elif [ "$(id -u)" -ne 0 ]; then
	echo "run-all.sh: not root: cannot install dependencies" >&2
	[ "$ci" = 1 ] && fatal "dependencies (not root under CI)"
else
	bash tests/install-deps.sh || fatal "tests/install-deps.sh"
fi

step "autoreconf"
autoreconf -fi || fatal "autoreconf -fi"

step "configure (in $build)"
mkdir -p "$build" || fatal "mkdir $build"
cd "$build" || fatal "cd $build"
"$src/configure" -q || fatal "configure"

step "make"
make -j"$jobs" || fatal "make"

step "make check (unit tests)"
make -j"$jobs" check
check_rc=$?
if [ -f "$build/test-suite.log" ]; then
	count_automake "$build/test-suite.log"
	if [ "$check_rc" -ne 0 ] && ! grep -qE '^# (FAIL|ERROR|XPASS): *[1-9]' \
		"$build/test-suite.log"; then
		fail_step "make check (exit $check_rc without a failing test: build error?)"
	fi
else
	fail_step "make check (no test-suite.log; exit $check_rc)"
fi
# The fake CUDA/NCCL libraries are needed by the integration tests even
# when a unit test failed.
make -j"$jobs" integration-deps >/dev/null ||
	fail_step "make integration-deps (plugin, helper, fake libraries)"

step "integration tests"
export SN_BUILD_DIR="$build" SN_SRC_DIR="$src"
if ! need bats munged slurmctld slurmd srun ip nsenter unshare; then
	echo "run-all.sh: bats/munge/slurm/iproute2 missing" >&2
	fail_step "integration tests (tools missing: bash tests/install-deps.sh)"
elif [ "$(id -u)" -ne 0 ]; then
	fail_step "integration tests (need root for the test cluster)"
else
	cd "$src" || fatal "cd $src"
	# Every bats file: harness first (it proves the cluster itself).
	for f in tests/integration/harness.bats \
		 $(ls tests/integration/*.bats | grep -v '/harness.bats$'); do
		tap="$build/$(basename "$f" .bats).tap"
		echo "---- $f"
		bats --tap "$f" 2>&1 | tee "$tap"
		count_tap "$tap" "$(basename "$f")"
	done
fi

if [ "$SN_DISTCHECK" = 1 ]; then
	step "make distcheck"
	cd "$build" || fatal "cd $build"
	if make -j"$jobs" distcheck; then
		passed=$((passed + 1))
	else
		fail_step "make distcheck"
	fi
fi

# Further suites (packaging, sanitizers, fuzzing, ...): each script in
# tests/ci.d prints a TAP stream and is counted like a bats file.
for f in "$src"/tests/ci.d/*.sh; do
	[ -e "$f" ] || continue
	name=$(basename "$f" .sh)
	step "$name"
	tap="$build/ci-$name.tap"
	(cd "$src" && SN_BUILD_DIR="$build" SN_SRC_DIR="$src" bash "$f") 2>&1 |
		tee "$tap"
	count_tap "$tap" "$name"
done

if [ "$SN_BENCH" = 1 ]; then
	step "launch latency benchmark"
	cd "$src" || fatal "cd $src"
	if bash bench/launch-latency.sh; then
		passed=$((passed + 1))
	else
		fail_step "bench/launch-latency.sh (targets missed)"
	fi
fi

finish

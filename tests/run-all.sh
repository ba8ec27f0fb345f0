#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The whole test suite, as root on Debian 12:
#   dependencies -> autoreconf -> for each Slurm release (22.05 on the
#   host, 24.11 and 26.05 each in its Debian root, tests/cluster/release.sh):
#   configure -> make -> make check (unit tests) -> integration tests on a
#   throwaway cluster of that release's daemons (one node, then three nodes
#   in network namespaces; tests/release-suite.sh) -> on the host only, the
#   release-independent suites: [make distcheck], tests/ci.d/* [, bench]
# then one line per release and a last line "N passed, N failed" over
# everything.  Exits non-zero on any failure.
#
#   SN_TEST_RELEASES="22.05 24.11 26.05"   the releases to test (default all)
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
# The tarballs made here (make distcheck; tests/ci.d/50-deb.sh on every
# release) are unpacked and thrown away: xz's fastest level instead of
# automake's -e, 1.8 s instead of 5.7 s a tarball.
export XZ_OPT=${XZ_OPT--1}

passed=0
failed=0
last_step="(start)"
skipped=0
failures=()
rel_lines=()

# Where the time goes: each step's start ($SECONDS) and name, for
# finish() to print each step's duration; a release's build and each of
# its integration files come from release-suite.sh's times.txt.
step_names=()
step_starts=()
step() {
	check_dev_null
	last_step=$*
	step_names+=("$*")
	step_starts+=("$SECONDS")
	printf '\n==== %s\n' "$*"
}

print_times() {
	local i end
	echo "time per step (s):"
	for i in "${!step_names[@]}"; do
		end=${step_starts[$((i + 1))]:-$SECONDS}
		printf '  %5d  %s\n' $((end - step_starts[i])) "${step_names[$i]}"
	done
	printf '  %5d  total\n' "$SECONDS"
}

# Every test cluster's fake GPUs are links to /dev/null: a suite that
# replaces it (a tool writing "-o /dev/null" through a rename, a root that
# shares the host's /dev) breaks every later one.  Caught here and named,
# then repaired so the later suites still mean something.
check_dev_null() {
	[ -c /dev/null ] && return 0
	fail_step "/dev/null is no longer a character device: replaced during \"$last_step\""
	rm -f /dev/null && mknod -m 0666 /dev/null c 1 3
}

fail_step() {
	failed=$((failed + 1))
	failures+=("$1")
	echo "run-all.sh: FAILED: $1" >&2
}

finish() {
	check_dev_null
	echo
	print_times
	if [ ${#failures[@]} -gt 0 ]; then
		echo "failures:"
		printf '  %s\n' "${failures[@]}"
	fi
	if [ ${#rel_lines[@]} -gt 0 ]; then
		printf '%s\n' "${rel_lines[@]}"
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
	local log=$1 what=${2:-unit tests} p f s
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
		failures+=("$what: $(grep -E '^(FAIL|ERROR|XPASS):' "$log" |
			paste -sd' ' -)")
	fi
	count_skips "${s:-0}" "$what"
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

# The Slurm releases to test (tests/cluster/release.sh): the host's 22.05
# and, each in its own Debian root, 24.11 and 26.05.  Every release gets
# its own build tree (its spank.h, its compiler) and the whole unit and
# integration suite on its own daemons (tests/release-suite.sh).
# shellcheck source=cluster/release.sh
source "$src/tests/cluster/release.sh"
releases=${SN_TEST_RELEASES:-$SN_RELEASES}
host_rel=$(sn_release_local) || fatal "no Slurm headers on the host (bash tests/install-deps.sh)"

# Counts every TAP file and the unit-test log one release left.
count_release() {
	local rel=$1 results=$2 f
	if [ -f "$results/steps.tap" ]; then
		count_tap "$results/steps.tap" "Slurm $rel: build"
	else
		fail_step "Slurm $rel: tests/release-suite.sh left no results"
		return
	fi
	if grep -q '^not ok' "$results/steps.tap"; then
		return
	fi
	if [ -f "$results/test-suite.log" ]; then
		count_automake "$results/test-suite.log" "Slurm $rel: unit tests"
	else
		fail_step "Slurm $rel: make check (no test-suite.log: build error?)"
	fi
	for f in "$results"/*.tap; do
		case $(basename "$f") in steps.tap) continue ;; esac
		count_tap "$f" "Slurm $rel: $(basename "$f" .tap)"
	done
}

# The suites that do not depend on the Slurm release (distcheck and
# tests/ci.d: man pages, sanitizers, valgrind, fuzzing, the host's .deb and
# RPM) run once, with the host's build.
host_only_suites() {
	local build=$1 f name tap
	export SN_BUILD_DIR="$build" SN_SRC_DIR="$src"
	if [ "$SN_DISTCHECK" = 1 ]; then
		step "make distcheck"
		if (cd "$build" && make -j"$jobs" distcheck); then
			passed=$((passed + 1))
		else
			fail_step "make distcheck"
		fi
	fi
	# Each script in tests/ci.d prints a TAP stream, counted like a
	# bats file.
	for f in "$src"/tests/ci.d/*.sh; do
		[ -e "$f" ] || continue
		name=$(basename "$f" .sh)
		step "$name"
		tap="$build/ci-$name.tap"
		(cd "$src" && bash "$f") 2>&1 | tee "$tap"
		count_tap "$tap" "$name"
	done
	if [ "$SN_BENCH" = 1 ]; then
		step "launch latency benchmark"
		if (cd "$src" && bash bench/launch-latency.sh); then
			passed=$((passed + 1))
		else
			fail_step "bench/launch-latency.sh (targets missed)"
		fi
	fi
}

for rel in $releases; do
	p0=$passed f0=$failed s0=$skipped t0=$SECONDS
	step "Slurm $rel ($(sn_release_suite "$rel" || echo 'unknown suite'))"
	if [ "$rel" = "$host_rel" ]; then
		build="$src/_build"
	else
		build="$src/_build-$rel"
	fi
	results="$build/results"
	if ! sn_release_suite "$rel" >/dev/null; then
		setup_err="unknown release (known: $SN_RELEASES)"
	elif [ "$rel" != "$host_rel" ] && [ "$(id -u)" -ne 0 ]; then
		setup_err="its Debian root needs root (chroot)"
	elif [ "$rel" != "$host_rel" ] && ! sn_release_setup "$rel"; then
		setup_err="its Debian root could not be set up"
	else
		setup_err=
	fi
	if [ -n "$setup_err" ]; then
		# Under CI a release that cannot be tested is a failure.
		if [ "$ci" = 1 ]; then
			fail_step "Slurm $rel: $setup_err"
		else
			skipped=$((skipped + 1))
			echo "run-all.sh: Slurm $rel NOT TESTED: $setup_err" >&2
		fi
	else
		SN_SLURM_RELEASE=$rel SN_SRC_DIR="$src" \
		SN_RELEASE_IS_HOST=$([ "$rel" = "$host_rel" ] && echo 1 || echo 0) \
			bash "$src/tests/release-suite.sh" "$build" "$results"
		count_release "$rel" "$results"
		if [ -f "$results/times.txt" ]; then
			echo "time per part, Slurm $rel (s):"
			sort -rn "$results/times.txt" | sed 's/^/  /'
		fi
		if [ "$rel" = "$host_rel" ]; then
			host_only_suites "$build"
		fi
	fi
	line="Slurm $rel: $((passed - p0)) passed, $((failed - f0)) failed"
	[ "$rel" != "$host_rel" ] || line="$line (host; with the release-independent suites)"
	[ $((skipped - s0)) -eq 0 ] || line="$line, $((skipped - s0)) skipped"
	rel_lines+=("$line [$(((SECONDS - t0 + 30) / 60)) min]")
done

finish

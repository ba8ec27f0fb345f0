#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Line coverage of `make check` (./configure --enable-coverage, gcov data
# summarised by gcovr) in a build tree of its own, as TAP: the unit tests
# pass in that build, and the pure-C core (src/core), which `make check`
# exercises whole, stays above a floor.  The figures are in
# docs/coverage.md; the full report is $build/coverage.txt.
#
#   SN_COV_BUILD_DIR  build tree (default: $SN_BUILD_DIR/coverage)
#   SN_COV_CORE_MIN   floor for src/core line coverage in % (default 90)
set -uo pipefail

src=${SN_SRC_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${SN_COV_BUILD_DIR:-${SN_BUILD_DIR:-$src/_build}/coverage}
jobs=${SN_JOBS:-2}
core_min=${SN_COV_CORE_MIN:-90}

fail_all() {
	echo "1..1"
	echo "not ok 1 - coverage: $1"
	[ -f "$2" ] && tail -n 30 "$2" | sed 's/^/# /'
	exit 0
}

command -v gcovr >/dev/null ||
	fail_all "gcovr not installed (tests/install-deps.sh installs it)" /dev/null
# shellcheck source=build-tree.bash
. "$src/tests/ci.d/build-tree.bash"
ci_configure_tree "$build" --enable-coverage '--coverage'
# Counters from an earlier run would inflate the figures.
find "$build" -name '*.gcda' -delete
rm -f "$build"/tests/unit/*.trs "$build"/tests/unit/*.log
echo "# make -j$jobs check (coverage)"
(cd "$build" && timeout 1200 make -j"$jobs" check) >>"$log" 2>&1
check_rc=$?
(cd "$build" && make coverage) >>"$log" 2>&1 ||
	fail_all "make coverage failed" "$log"
# Never -o /dev/null: gcovr replaces its output file, and /dev/null with
# it (every test cluster's fake GPUs are links to /dev/null).
core=$(cd "$build" && gcovr --root "$src" --object-directory "$build" \
	--filter "$src/src/core/" --print-summary \
	-o "$build/coverage-core.txt" 2>>"$log" |
	sed -n 's/^lines: \([0-9.]*\)%.*/\1/p')
total=$(sed -n 's/^lines: \([0-9.]*\)%.*/\1/p' "$log" | tail -n1)

echo "1..2"
if [ "$check_rc" -eq 0 ]; then
	echo "ok 1 - make check passes in the coverage build"
else
	echo "not ok 1 - make check fails in the coverage build (exit $check_rc)"
	grep -E '^(FAIL|ERROR):' "$log" | head -n 10 | sed 's/^/#   /'
fi
echo "# line coverage of make check: src/ ${total:-?}%, src/core ${core:-?}%"
if [ -n "$core" ] && awk -v c="$core" -v m="$core_min" 'BEGIN { exit !(c >= m) }'; then
	echo "ok 2 - src/core line coverage ${core}% >= ${core_min}%"
else
	echo "not ok 2 - src/core line coverage ${core:-unknown}% < ${core_min}% (see $build/coverage.txt)"
fi

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Line coverage of `make check` and of the integration suites that run the
# plugin inside srun/slurmstepd and the helper under it
# (./configure --enable-coverage, gcov data summarised by gcovr), in a
# build tree of its own, as TAP: the unit tests and those suites pass in
# that build, and each floored part of src/ stays above its floor.  A
# table per directory goes to the TAP stream and to
# $build/coverage-table.md (docs/dev/coverage.md holds the figures); the full
# report is $build/coverage.txt.
#
# The suites run on a throwaway cluster of the host's Slurm (root only).
# The daemons, clients and jobs inherit GCOV_PREFIX from here: every
# process writes its counters under one directory instead of the build
# tree, whose parents the job user may not reach.  slurmstepd (root), srun
# and the helper (the job user) write the same .gcda files, so each is
# created empty and world-writable beforehand (gcov takes an empty file
# for a new one, and locks it while merging).  gcov-tool then adds them to
# the counters `make check` left in the build tree.
#
#   SN_COV_BUILD_DIR  build tree (default: $SN_BUILD_DIR/coverage)
#   SN_COV_SUITES     tests/integration files run on it, without .bats
#                     (default below; "" for make check alone)
#   SN_COV_FLOORS     DIR=MIN pairs: line coverage floors in % (default
#                     below); DIR is a row of the table: a directory, or
#                     src/core (every room) or src (all)
set -uo pipefail

src=${SN_SRC_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${SN_COV_BUILD_DIR:-${SN_BUILD_DIR:-$src/_build}/coverage}
jobs=${SN_JOBS:-2}
ci=0
case "${CI:-}" in true | 1 | yes) ci=1 ;; esac
# The suites that add the most lines of the plugin, the helper and the
# admin tools to make check's for their time; together they cover all but
# a few lines of what all seventeen do (docs/dev/coverage.md: the measurements
# behind the pick).  Floors a little below the figures measured.
suites=${SN_COV_SUITES-multinode fleet profiles warmup fabric_hostile reuse health containers ras}
floors=${SN_COV_FLOORS:-src/core=90 src/plugin=87 src/warmup=90 src/warmup/fabric=85}

fail_all() {
	echo "1..1"
	echo "not ok 1 - coverage: $1"
	[ -f "$2" ] && tail -n 30 "$2" | sed 's/^/# /'
	exit 0
}

command -v gcovr >/dev/null ||
	fail_all "gcovr not installed (tests/install-deps.sh installs it)" /dev/null
[ -z "$suites" ] || command -v gcov-tool >/dev/null ||
	fail_all "gcov-tool not installed (it comes with gcc)" /dev/null
# shellcheck source=build-tree.bash
. "$src/tests/ci.d/build-tree.bash"
ci_configure_tree "$build" --enable-coverage '--coverage'
build=$(cd "$build" && pwd)
# Counters from an earlier run would inflate the figures.
find "$build" -name '*.gcda' -delete
rm -f "$build"/tests/unit/*.trs "$build"/tests/unit/*.log \
	"$build"/coverage-*.tap
echo "# make -j$jobs check (coverage)"
(cd "$build" && timeout 1200 make -j"$jobs" check) >>"$log" 2>&1
check_rc=$?

# One gcovr CSV summary (file, lines total, lines covered, ...) of src/,
# from the counters in the build tree only (gcovr's default search path
# is --root: the source tree, where other build trees may lie).
# Never -o /dev/null: gcovr replaces its output file, and /dev/null with
# it (every test cluster's fake GPUs are links to /dev/null).
gcovr_csv() {
	(cd "$build" && gcovr --root "$src" --object-directory "$build" \
		--filter "$src/src/" --csv "$1" "$build") >>"$log" 2>&1
}
gcovr_csv "$build/coverage-unit.csv" ||
	fail_all "gcovr failed on the make check counters" "$log"

n=0
tap_ok() { n=$((n + 1)); echo "ok $n - $*"; }
tap_fail() { n=$((n + 1)); echo "not ok $n - $*"; }
tap_skip() {	# under CI a skip is a failure
	if [ "$ci" = 1 ]; then
		tap_fail "$* (not allowed under CI)"
	else
		n=$((n + 1))
		echo "ok $n - $* # skip"
	fi
}
read -ra suite_list <<<"$suites"
read -ra floor_list <<<"$floors"
echo "1..$((1 + ${#suite_list[@]} + (${#suite_list[@]} > 0) + ${#floor_list[@]}))"
if [ "$check_rc" -eq 0 ]; then
	tap_ok "make check passes in the coverage build"
else
	tap_fail "make check fails in the coverage build (exit $check_rc)"
	grep -E '^(FAIL|ERROR):' "$log" | head -n 10 | sed 's/^/#   /'
fi

# Why the integration suites cannot run here, if they cannot.
no_cluster() {
	local t
	[ "$(id -u)" -eq 0 ] || { echo "not root"; return; }
	for t in bats slurmctld slurmd srun munged; do
		command -v "$t" >/dev/null || { echo "$t not installed"; return; }
	done
	(cd "$build" && make -j"$jobs" integration-deps) >>"$log" 2>&1 ||
		echo "make integration-deps failed"
}

# Runs the suites with GCOV_PREFIX=$1; one TAP line each.
run_suites() {
	local gdir=$1 s tap t0 p f names
	# gcda paths are absolute: strip the build tree, keep src/...
	export GCOV_PREFIX="$gdir"
	GCOV_PREFIX_STRIP=$(printf '%s' "$build" | tr -cd / | wc -c)
	export GCOV_PREFIX_STRIP
	(cd "$build" && find . -name '*.gcno') | while read -r s; do
		mkdir -p "$gdir/$(dirname "$s")"
		: >"$gdir/${s%.gcno}.gcda"
		chmod 0666 "$gdir/${s%.gcno}.gcda"
	done
	chmod -R go+rX "$gdir"
	for s in "${suite_list[@]}"; do
		tap="$build/coverage-$s.tap"
		t0=$SECONDS
		(cd "$src" && SN_BUILD_DIR="$build" SN_SRC_DIR="$src" \
			timeout 1200 bats --tap "tests/integration/$s.bats") \
			>"$tap" 2>&1
		p=$(grep -cE '^ok ' "$tap")
		f=$(grep -cE '^not ok ' "$tap")
		if [ "$f" -eq 0 ] && [ "$p" -gt 0 ]; then
			tap_ok "$s.bats passes in the coverage build ($p tests, $((SECONDS - t0)) s)"
		else
			tap_fail "$s.bats in the coverage build: $f of $((p + f)) failed ($((SECONDS - t0)) s; $tap)"
			# Each failure with the first lines bats said about it.
			names=$(awk '/^not ok / { f = 1; k = 0; print; next }
				/^(ok|not ok) / { f = 0 }
				f && /^#/ && k++ < 12' "$tap" | head -n 40)
			[ -n "$names" ] || names=$(tail -n 10 "$tap")
			printf '%s\n' "$names" | sed 's/^/#   /'
		fi
	done
	unset GCOV_PREFIX GCOV_PREFIX_STRIP
}

# Adds the counters under $1 to the build tree's (gcov-tool merge).
merge_counters() {
	local gdir=$1 merged=$1.merged
	find "$gdir" -name '*.gcda' -empty -delete
	if [ -z "$(find "$gdir/src" -name '*.gcda' 2>/dev/null | head -n1)" ]; then
		tap_fail "no gcov counters from the integration suites in $gdir"
		return
	fi
	if (cd "$build" && gcov-tool merge -o "$merged" "$build" "$gdir") \
		>>"$log" 2>&1 && cp -R "$merged/." "$build/"; then
		tap_ok "the integration suites' counters added to make check's"
	else
		tap_fail "gcov-tool merge $build $gdir failed ($log)"
	fi
}

if [ ${#suite_list[@]} -gt 0 ]; then
	why=$(no_cluster)
	if [ -n "$why" ]; then
		for s in "${suite_list[@]}"; do
			tap_skip "$s.bats in the coverage build: $why"
		done
		tap_skip "integration counters: $why"
	else
		t_int=$SECONDS
		gdir=$(mktemp -d /tmp/spank-nccl-gcov.XXXXXX) && chmod 0755 "$gdir"
		run_suites "$gdir"
		merge_counters "$gdir"
		rm -rf "$gdir" "$gdir.merged"
		echo "# integration suites under coverage: $((SECONDS - t_int)) s"
	fi
fi

# The full report (coverage.txt) and the summary the table comes from.
summary_ok=1
{ (cd "$build" && make coverage) >>"$log" 2>&1 &&
  gcovr_csv "$build/coverage-all.csv"; } || summary_ok=0

# Lines covered/total per directory of src/ (a room of src/core, the
# plugin, the helper and its fabric side, the admin tools), then src/core
# and src/ whole, as "DIR COVERED TOTAL"; from a gcovr CSV.
per_dir() {
	awk -F, 'NR > 1 && $1 ~ /^src\// {
		d = $1; sub(/\/[^\/]*$/, "", d)
		t[d] += $2; c[d] += $3
		if (d ~ /^src\/core\//) { t["src/core"] += $2; c["src/core"] += $3 }
		t["src"] += $2; c["src"] += $3
	} END { for (d in t) print d, c[d], t[d] }' "$1" | LC_ALL=C sort
}
pct() { awk -v c="$1" -v t="$2" 'BEGIN { printf "%.1f", t ? 100 * c / t : 0 }'; }

if [ "$summary_ok" = 0 ]; then
	for fl in "${floor_list[@]}"; do
		tap_fail "${fl%%=*} line coverage unknown: make coverage or gcovr failed ($log)"
	done
	exit 0
fi
table="$build/coverage-table.md"
{
	echo "| part | make check | with the integration suites |"
	echo "|---|---|---|"
	LC_ALL=C join -a 2 -e 0 -o 0,1.2,1.3,2.2,2.3 \
		<(per_dir "$build/coverage-unit.csv") \
		<(per_dir "$build/coverage-all.csv") |
	while read -r d uc ut ac at; do
		[ "$d" = src ] && d="all of src/"
		# shellcheck disable=SC2016  # Markdown's backticks
		printf '| `%s` | %s %% | %s %% (%s of %s) |\n' "$d" \
			"$(pct "$uc" "$ut")" "$(pct "$ac" "$at")" "$ac" "$at"
	done
} >"$table"
echo "# line coverage (make check${suites:+ + $suites}):"
sed 's/^/# /' "$table"

for fl in "${floor_list[@]}"; do
	d=${fl%%=*} min=${fl#*=}
	got=$(per_dir "$build/coverage-all.csv" | awk -v d="$d" \
		'$1 == d { printf "%.1f", 100 * $2 / $3 }')
	if [ -n "$got" ] && awk -v c="$got" -v m="$min" 'BEGIN { exit !(c >= m) }'; then
		tap_ok "$d line coverage $got% >= $min%"
	else
		tap_fail "$d line coverage ${got:-unknown}% < $min% (see $build/coverage.txt)"
	fi
done

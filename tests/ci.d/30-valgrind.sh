#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Every CMocka unit test program of the normal build under valgrind's
# memcheck, with the leak check: any invalid access, uninitialised use or
# definite/indirect leak fails the program (exit 99).  One TAP line per
# program.  Forked children (test_helper_exec, test_hostile_file) are
# checked too; exec'd programs are not (--trace-children=no).
#
#   SN_BUILD_DIR  the configured build tree (default: _build)
set -uo pipefail

src=${SN_SRC_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${SN_BUILD_DIR:-$src/_build}
jobs=${SN_JOBS:-2}

fail_all() {
	echo "1..1"
	echo "not ok 1 - valgrind: $1"
	exit 0
}

[ -f "$build/Makefile" ] ||
	fail_all "$build is not a configured build tree (run tests/run-all.sh)"
command -v valgrind >/dev/null 2>&1 ||
	fail_all "valgrind not installed (tests/install-deps.sh)"

# The test programs as automake knows them; the shell test is not one.
# First let make regenerate a stale Makefile, whose commands would
# otherwise end up in the list.
make -s -C "$build" Makefile >"$build/ci-valgrind-build.log" 2>&1
# shellcheck disable=SC2016
progs=$(make -s -C "$build" -f Makefile -f - sn-print-check-programs \
	<<<'sn-print-check-programs: ; @echo $(check_PROGRAMS)' 2>/dev/null |
	tail -n1 | tr ' ' '\n' | grep -E '^tests/unit/test_[a-z_]+$')
[ -n "$progs" ] || fail_all "no CMocka test programs in $build (CMocka missing?)"
# Built without running them (make check would rewrite test-suite.log).
# shellcheck disable=SC2086
make -s -C "$build" -j"$jobs" $progs >>"$build/ci-valgrind-build.log" 2>&1 ||
	fail_all "building the test programs failed: $build/ci-valgrind-build.log"

# One program under valgrind: its TAP line (number N) to ci-valgrind-NAME.tap.
vg_one() {	# vg_one N PROGRAM
	local n=$1 p=$2 name log rc errors
	name=$(basename "$p")
	log=$build/ci-valgrind-$name.log
	# libtool: run the real binary, not a wrapper script, if there is one.
	(cd "$build" && ./libtool --mode=execute valgrind -q \
		--trace-children=no --leak-check=full \
		--show-leak-kinds=definite,indirect \
		--errors-for-leak-kinds=definite,indirect \
		--error-exitcode=99 --track-fds=no \
		"./$p") >"$log" 2>&1
	rc=$?
	errors=$(grep -cE '^==[0-9]+== .*(Invalid|uninitialised|definitely lost|indirectly lost|Mismatched|overlap)' "$log")
	if [ "$rc" -eq 0 ] && [ "$errors" -eq 0 ]; then
		echo "ok $n - valgrind $name"
	else
		echo "not ok $n - valgrind $name: exit $rc, $errors memcheck reports"
		grep -E "^==[0-9]+==|FAILED|ERROR" "$log" | cut -c1-200 | head -n 25 | sed 's/^/#   /'
	fi >"$build/ci-valgrind-$name.tap"
}

# $jobs programs at once (each is one process on one core), the TAP
# lines in the list's order.
rm -f "$build"/ci-valgrind-*.tap
n=0
echo "1..$(printf '%s\n' "$progs" | wc -l)"
for p in $progs; do
	n=$((n + 1))
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n
	done
	vg_one "$n" "$p" &
done
wait
for p in $progs; do
	cat "$build/ci-valgrind-$(basename "$p").tap"
done
exit 0

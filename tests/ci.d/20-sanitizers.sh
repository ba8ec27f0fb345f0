#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The unit tests built with AddressSanitizer + UndefinedBehaviorSanitizer
# (./configure --enable-sanitizers) in a build tree of their own, one TAP
# line per test program from the automake .trs files.  Any ASan/UBSan
# report makes the program fail (-fno-sanitize-recover=all, exit 1).  The
# plugin built there is never used by the integration cluster: slurmstepd
# cannot dlopen an ASan-instrumented plugin without the runtime preloaded.
#
#   SN_SAN_BUILD_DIR  build tree (default: $SN_BUILD_DIR/sanitizers)
set -uo pipefail

src=${SN_SRC_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${SN_SAN_BUILD_DIR:-${SN_BUILD_DIR:-$src/_build}/sanitizers}
jobs=${SN_JOBS:-2}
ci=0
case "${CI:-}" in true | 1 | yes) ci=1 ;; esac

fail_all() {
	echo "1..1"
	echo "not ok 1 - sanitizers: $1"
	[ -f "$2" ] && tail -n 30 "$2" | sed 's/^/# /'
	exit 0
}

# shellcheck source=build-tree.bash
. "$src/tests/ci.d/build-tree.bash"
ci_configure_tree "$build" --enable-sanitizers '-fsanitize=address,undefined'

# detect_leaks: LeakSanitizer runs at each test program's exit too.
# handle_segv=0: test_nccl_warmup.sh makes the helper die of SIGSEGV on
# purpose and checks the signal; a real one still fails the test.  Not
# strict_string_checks: it makes strcspn/strndup measure the whole rest of
# the text on every line, so parsing a 1 MiB file takes hours.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:handle_segv=0:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
echo "# make -j$jobs check (ASan+UBSan)"
rm -f "$build"/tests/unit/*.trs "$build"/tests/unit/*.log
# A hang must not stall CI: the whole run gets 20 minutes.
(cd "$build" && timeout 1200 make -j"$jobs" check) >>"$log" 2>&1
rc=$?
[ "$rc" -eq 124 ] && echo "# make check timed out after 1200 s" 

trs=("$build"/tests/unit/*.trs)
if [ ! -e "${trs[0]}" ]; then
	fail_all "make check produced no test results (exit $rc: build error?)" "$log"
fi

echo "1..${#trs[@]}"
n=0
for t in "${trs[@]}"; do
	n=$((n + 1))
	name=$(basename "$t" .trs)
	result=$(sed -n 's/^:test-result: *//p' "$t" | head -n1)
	case $result in
	PASS)
		echo "ok $n - asan+ubsan $name" ;;
	SKIP)
		if [ "$ci" = 1 ]; then
			echo "not ok $n - asan+ubsan $name: skipped (not allowed under CI)"
		else
			echo "ok $n - asan+ubsan $name # skip $(grep -m1 -i skip "${t%.trs}.log")"
		fi ;;
	*)
		echo "not ok $n - asan+ubsan $name: ${result:-no result}"
		grep -E 'ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error|SUMMARY|^FAIL|FAILED|ERROR' \
			"${t%.trs}.log" 2>/dev/null | cut -c1-200 | head -n 15 |
			sed 's/^/#   /' ;;
	esac
done
exit 0

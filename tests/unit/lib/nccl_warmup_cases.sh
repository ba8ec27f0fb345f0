# SPDX-License-Identifier: MIT
# Sourced by test_nccl_warmup*.sh: the end-to-end cases of the built
# nccl-warmup against the fake libcuda.so.1 (the driver) and libnccl.so.2
# (tests/fake).  The test sets src (the source tree); this sets helper,
# fake and tmp (removed at exit), clears what the fakes and the helper
# read, and defines run, the expect_* checks and cases_done.  Every
# scenario checks the exit status, the "spank-nccl:" line on stderr and
# the JSON object on stdout.
# shellcheck shell=sh
# src is the test's; rc, out, err, elapsed_ms are set for it to read.
# shellcheck disable=SC2154,SC2034

# shellcheck source=tests/unit/lib/warmup_helper.sh
. "$src/tests/unit/lib/warmup_helper.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/$(basename "$0" .sh).XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
# The crash scenario must not leave core files behind.
# shellcheck disable=SC3045 # dash and bash both have ulimit -c
ulimit -c 0 2>/dev/null || true

failures=0
# Clear everything the fakes or the helper read, then set per scenario.
unset CUDA_VISIBLE_DEVICES FAKE_CUDA_BUSIDS FAKE_CUDA_UUIDS FAKE_CUDA_MIG \
	FAKE_CUDA_FAIL FAKE_CUDA_HANG FAKE_NCCL_FAIL FAKE_NCCL_HANG \
	FAKE_NCCL_CRASH FAKE_NCCL_WRONG_RESULT FAKE_NCCL_INIT_DELAY_MS \
	FAKE_NCCL_BUSBW_GBPS FAKE_NCCL_VERSION FAKE_CUDA_LOG FAKE_NCCL_LOG \
	FAKE_CUDA_DRIVER_VERSION FAKE_CUDA_MEM_MIB FAKE_NCCL_MEM_MIB \
	NCCL_COMM_BLOCKING NCCL_ALGO NCCL_CUMEM_ENABLE LD_PRELOAD
for v in $(env | sed -n 's/^\(NCCL_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
LD_LIBRARY_PATH="$fake/cuda:$fake/nccl"
export LD_LIBRARY_PATH

# run NAME [ENV=VALUE ...] -- ARGS...: runs the helper; sets rc, out, err,
# elapsed_ms.
run() {
	name=$1; shift
	envs=
	while [ "$1" != -- ]; do envs="$envs $1"; shift; done
	shift
	start=$(now_ms)
	# shellcheck disable=SC2086
	env $envs "$helper" --node testnode "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	elapsed_ms=$(( $(now_ms) - start ))
	out=$(cat "$tmp/out")
	err=$(cat "$tmp/err")
}

fail() {
	echo "FAIL [$name]: $*" >&2
	echo "  exit status: $rc" >&2
	echo "  stderr: $err" >&2
	echo "  stdout: $out" >&2
	failures=$((failures + 1))
}

expect_rc() { [ "$rc" -eq "$1" ] || fail "expected exit status $1"; }
expect_err() {
	case $err in *"$1"*) ;; *) fail "stderr lacks: $1";; esac
}
expect_json() {
	case $out in *"$1"*) ;; *) fail "JSON lacks: $1";; esac
}
expect_no_json() {
	case $out in *"$1"*) fail "JSON must not contain: $1";; esac
}
expect_no_err() {
	case $err in *"$1"*) fail "stderr must not contain: $1";; esac
}
# Exactly one line on stdout, one JSON object; one spank-nccl line on stderr.
expect_shape() {
	[ "$(wc -l <"$tmp/out")" -eq 1 ] || fail "stdout is not one line"
	case $out in "{"*"}") ;; *) fail "stdout is not a JSON object";; esac
	[ "$(grep -c '^spank-nccl: ' "$tmp/err")" -eq 1 ] ||
		fail "stderr must have exactly one spank-nccl: line"
	expect_json "\"exit_code\":$rc,"
}

ok_json() {
	expect_shape
	expect_json '"version":1,"node":"testnode"'
	expect_json '"status":"ok"'
	expect_json '"message":null'
}

# cases_done WHAT: the exit of the test: 1 if any check failed.
cases_done() {
	if [ "$failures" -ne 0 ]; then
		echo "$failures check(s) failed" >&2
		exit 1
	fi
	echo "all nccl-warmup ${1:+$1 }scenarios passed"
}

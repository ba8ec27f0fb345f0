#!/bin/sh
# SPDX-License-Identifier: MIT
# The published JSON Schema of the fleet record (docs/record.schema.json)
# is the schema table's, and real records of every mode match it:
#   1. tests/unit/record_schema_print prints the file from the table
#      (src/core/protocol/record_schema.c), byte for byte;
#   2. the built nccl-warmup runs against the fake CUDA/NCCL in check,
#      comm, bandwidth and fabric (one node) mode and once failing
#      (duplicate PCI bus IDs), once crashing; nccl-warmup-record (the
#      record writer, as the Prolog runs it) writes each run's record, and
#      one of a helper that could not start;
#   3. tests/integration/helpers/validate-record.py (python3-jsonschema)
#      validates every line, and the records cover every mode.
# CI=true: a missing validator or helper fails instead of skipping.
# Run by "make check" from the build directory.
set -u
src=${SN_SRC_DIR:-${srcdir:-.}}
print=./tests/unit/record_schema_print
recorder=./src/report/nccl-warmup-record
helper=./src/warmup/nccl-warmup
fake=$(cd ./tests/fake 2>/dev/null && pwd)
schema=$src/docs/record.schema.json
validate=$src/tests/integration/helpers/validate-record.py
ci=no
case ${CI:-} in true | 1 | yes) ci=yes ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_record_json_schema.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

# --- 1. the file is the table's --------------------------------------------
if ! "$print" >"$tmp/printed"; then
	echo "FAIL: $print" >&2
	exit 1
fi
if ! cmp -s "$schema" "$tmp/printed"; then
	diff -u "$schema" "$tmp/printed" >&2
	echo "FAIL: docs/record.schema.json is not what the schema table prints: run tests/unit/record_schema_print >docs/record.schema.json (and bump SN_RECORD_SCHEMA if a field was added)" >&2
	fail=1
fi

# --- 2. records of every mode ------------------------------------------------
records=$tmp/records.jsonl
# record MODE STATUS [HELPER-JSON]: one record, as the Prolog writes it.
record() {
	"$recorder" --node n1 --job 7 --uid "$(id -u)" --user "$(id -un)" \
		--mode "$1" --exit-status "$2" --elapsed-ms 12.5 \
		--gpus 0,1 --record-file "$records" <"${3:-/dev/null}" ||
		{ echo "FAIL: nccl-warmup-record --mode $1 --exit-status $2" >&2; fail=1; }
}
# warmup NAME MODE [ENV=VALUE...] -- [ARGS...]: runs nccl-warmup, then record.
warmup() {
	name=$1 mode=$2
	shift 2
	envs=
	while [ "$1" != -- ]; do envs="$envs $1"; shift; done
	shift
	# shellcheck disable=SC2086
	env $envs "$helper" --node n1 --json --mode "$mode" "$@" \
		>"$tmp/$name.json" 2>"$tmp/$name.err"
	rc=$?
	record "$mode" "$rc" "$tmp/$name.json"
}

helper_ok=yes
if [ ! -x "$helper" ] || [ ! -e "$fake/nccl/libnccl.so.2" ] ||
   [ ! -e "$fake/cuda/libcuda.so.1" ]; then
	helper_ok=no
	echo "nccl-warmup or the fake CUDA/NCCL libraries were not built: records without a helper result only" >&2
	if [ $ci = yes ] && [ "${SN_ENABLE_WARMUP:-}" != no ]; then
		echo "FAIL: CI=true requires the warmup helper to be built" >&2
		fail=1
	fi
fi
if [ $helper_ok = yes ]; then
	unset CUDA_VISIBLE_DEVICES FAKE_CUDA_BUSIDS FAKE_CUDA_FAIL \
		FAKE_NCCL_FAIL FAKE_NCCL_CRASH FAKE_NCCL_BUSBW_GBPS LD_PRELOAD
	LD_LIBRARY_PATH="$fake/cuda:$fake/nccl"
	export LD_LIBRARY_PATH
	# shellcheck disable=SC3045 # the crash must leave no core file
	ulimit -c 0 2>/dev/null || true
	warmup check check --
	warmup comm comm --
	warmup bandwidth bandwidth FAKE_NCCL_BUSBW_GBPS=300 -- --bytes 1M
	warmup fabric fabric -- --job-id 7 --step-id 0 --node-index 0 \
		--nodes 1 --nodelist n1
	warmup duplicate comm \
		FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0 --
	warmup crash comm FAKE_NCCL_CRASH=init --
else
	for m in check comm bandwidth fabric; do
		record "$m" 0
	done
	record comm 3
fi
# Not started (the shell's 127): no result at all.
record comm 127
# By hand (--source manual), on a named cluster: the metrics' source label
# and the record's "cluster"; another source word is refused.
"$recorder" --node n1 --mode check --exit-status 0 --source manual \
	--cluster c1 --record-file "$records" </dev/null ||
	{ echo "FAIL: nccl-warmup-record --source manual" >&2; fail=1; }
tail -n1 "$records" | grep -q '"source":"manual","node":"n1","cluster":"c1"' ||
	{ echo "FAIL: manual record: $(tail -n1 "$records")" >&2; fail=1; }
if "$recorder" --node n1 --mode check --exit-status 0 --source spank \
	--record-file "$records" </dev/null 2>/dev/null; then
	echo "FAIL: --source spank accepted" >&2
	fail=1
fi
[ -s "$records" ] || { echo "FAIL: no records written" >&2; exit 1; }

# --- 3. a real validator --------------------------------------------------
python3 "$validate" "$schema" "$records" >"$tmp/valid" 2>"$tmp/invalid"
rc=$?
cat "$tmp/valid" "$tmp/invalid"
if [ $rc -eq 77 ]; then
	[ $fail -eq 0 ] && exit 77
	exit 1
fi
if [ $rc -ne 0 ]; then
	echo "FAIL: records that do not match $schema, or no validator (above)" >&2
	exit 1
fi
# The validator is live: a record of a type the schema refuses fails.
sed -n '1s/"gpu_count":[0-9]*/"gpu_count":"2"/p' "$records" >"$tmp/bad.jsonl"
if python3 "$validate" "$schema" "$tmp/bad.jsonl" >/dev/null 2>"$tmp/bad.err" ||
   ! grep -q "gpu_count: '2' is not of type 'integer'" "$tmp/bad.err"; then
	echo "FAIL: the validator took a record whose gpu_count is a string: $(cat "$tmp/bad.err")" >&2
	fail=1
fi
for want in mode=check mode=comm mode=bandwidth mode=fabric \
	    class=helper_start; do
	grep -q " $want:" "$tmp/valid" ||
		{ echo "FAIL: no record with $want" >&2; fail=1; }
done
if [ $helper_ok = yes ]; then
	for want in class=ok:5 class=duplicate_busid class=crash; do
		grep -q " $want" "$tmp/valid" ||
			{ echo "FAIL: no record with $want" >&2; fail=1; }
	done
	# The records carry what the helper reported.
	grep -q '"mode":"bandwidth".*"busbw_gbps":[0-9]' "$records" ||
		{ echo "FAIL: the bandwidth record has no busbw" >&2; fail=1; }
	grep -q '"mode":"fabric".*"transport":"NET/Socket"' "$records" ||
		{ echo "FAIL: the fabric record has no transport" >&2; fail=1; }
fi
exit $fail

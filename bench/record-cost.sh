#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Cost of the fleet record per warmup: format + one O_APPEND write +
# the .prom update (lock, read, render, fsync, rename), measured through
# nccl-warmup-record (the Prolog's writer; slurmstepd runs the same code
# in-process) and minus the cost of starting a program that does nothing
# with the same input.
#
#   bash bench/record-cost.sh [RUNS] [DIR]   (default 300, a temp dir under /var/tmp)
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rec=${SN_BUILD_DIR:-$src/_build}/src/report/nccl-warmup-record
runs=${1:-300}
dir=${2:-$(mktemp -d /var/tmp/sn-record-bench.XXXXXX)}
json='{"version":1,"status":"ok","exit_code":0,"mode":"bandwidth","nccl_version":"2.28.9","gpus":[{"index":0,"busid":"0000:01:00.0","uuid":"GPU-a"},{"index":1,"busid":"0000:02:00.0","uuid":"GPU-b"},{"index":2,"busid":"0000:03:00.0","uuid":"GPU-c"},{"index":3,"busid":"0000:04:00.0","uuid":"GPU-d"}],"timings_ms":{"cuda_init":600,"comm_init":480,"total":1500},"busbw_gbps":350.5}'
[ -x "$rec" ] || { echo "record-cost.sh: build $rec first" >&2; exit 1; }
mkdir -p "$dir/prom"

per_run_us() {	# per_run_us CMD...: microseconds per run of CMD
	local t0 t1 i
	t0=$(date +%s%N)
	for ((i = 0; i < runs; i++)); do
		printf '%s' "$json" | "$@" >/dev/null
	done
	t1=$(date +%s%N)
	echo $(((t1 - t0) / runs / 1000))
}

base=$(per_run_us "$rec" --node n1 --mode bandwidth --exit-status 0)
file=$(per_run_us "$rec" --node n1 --mode bandwidth --exit-status 0 \
	--record-file "$dir/records.jsonl")
both=$(per_run_us "$rec" --node n1 --mode bandwidth --exit-status 0 \
	--record-file "$dir/records.jsonl" --prom-dir "$dir/prom")
echo "record-cost: $runs runs in $dir ($(df -T "$dir" | awk 'NR==2 {print $2}'))"
echo "record-cost: program start + parse + format: ${base} us per run"
echo "record-cost: + record_file append: $((file - base)) us"
echo "record-cost: + prom_dir update (lock, read, render, fsync, rename): $((both - file)) us"
echo "record-cost: record line $(tail -n1 "$dir/records.jsonl" | wc -c) bytes, .prom file $(wc -c <"$dir/prom/spank_nccl.prom") bytes"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Where nccl-warmup's time goes, and what moves it: runs the helper on this
# node's GPUs under several variants (teardown, NCCL/CUDA knobs), N times
# each, and prints the median wall time and phases of each, plus NCCL's own
# "Init timings" breakdown.  Needs a GPU node; builds the helper with gcc
# straight from the source tree when no build is given.
#
#   bash bench/warmup-knobs.sh [RUNS]      (default 5)
#   SN_HELPER=/path/to/nccl-warmup bash bench/warmup-knobs.sh
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=${1:-5}
cuda=${CUDA_HOME:-/usr/local/cuda}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

helper=${SN_HELPER:-}
if [ -z "$helper" ]; then
	helper=$(mktemp -d)/nccl-warmup
	# Headers only: the helper loads libcuda.so.1 and libnccl.so.2.
	# The core's rooms and the helper's directories: each on the include
	# path, every .c compiled (as src/core/Makefile.inc has it).
	dirs=$(find "$src/src/core" "$src/src/warmup" -type d)
	gcc -O2 -std=gnu11 -D_GNU_SOURCE -DWU_VERSION=\"bench\" -DPACKAGE_NAME=\"spank-nccl\" -DPACKAGE_VERSION=\"bench\" $(printf -- '-I%s ' $dirs) -I"$cuda/include" \
		-o "$helper" $(find $dirs -maxdepth 1 -name '*.c') -lmunge -lpthread -ldl
fi
echo "helper: $helper"
echo "GPUs: $(nvidia-smi -L 2>/dev/null | wc -l) x $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"

median() { sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "-"}'; }

# One variant: NAME, then env assignments and helper arguments.
variant() {
	local name=$1 i start end out
	shift
	local -a envs=() args=()
	while [ $# -gt 0 ]; do
		case $1 in *=*) envs+=("$1") ;; *) args+=("$1") ;; esac
		shift
	done
	: >"/tmp/knob-$name.txt"
	for i in $(seq 0 "$runs"); do
		start=$(date +%s%N)
		out=$(env "${envs[@]}" timeout 60 "$helper" --json --quiet "${args[@]}") || {
			echo "$name: run $i failed: $out"; return 0; }
		end=$(date +%s%N)
		[ "$i" -eq 0 ] && continue	# first run: caches warm up
		python3 - "$out" "$(( (end - start) / 1000000 ))" >>"/tmp/knob-$name.txt" <<'PY'
import json, sys
r = json.loads(sys.argv[1]); t = r["timings_ms"]
f = lambda k: "%.0f" % t[k] if t.get(k) is not None else "-"
print(sys.argv[2], f("cuda_init"), f("contexts"), f("comm_init"),
      f("allreduce"), f("collectives"), f("teardown"), f("total"))
PY
	done
	printf '%-34s' "$name"
	for col in 1 2 3 4 5 6 7 8; do
		printf ' %9s' "$(awk -v c=$col '{print $c}' "/tmp/knob-$name.txt" | grep -v '^-$' | median)"
	done
	echo
}

# One process per GPU instead of one thread per GPU: every GPU's own
# process (CUDA_VISIBLE_DEVICES=i, a 1-rank communicator) started at once;
# wall = the slowest, phases = the medians over processes and runs.  What
# cuInit and context creation cost when each process has one GPU.
per_process() {
	local n i k start end
	n=$(nvidia-smi -L | grep -c '^GPU ')
	: >/tmp/knob-per-process.txt
	for i in $(seq 0 "$runs"); do
		start=$(date +%s%N)
		for ((k = 0; k < n; k++)); do
			CUDA_VISIBLE_DEVICES=$k timeout 60 "$helper" --json --quiet \
				--teardown exit >"/tmp/knob-pp-$k.json" &
		done
		wait
		end=$(date +%s%N)
		[ "$i" -eq 0 ] && continue
		for ((k = 0; k < n; k++)); do
			python3 - "$(cat "/tmp/knob-pp-$k.json")" "$(( (end - start) / 1000000 ))" >>/tmp/knob-per-process.txt <<'PY'
import json, sys
r = json.loads(sys.argv[1]); t = r["timings_ms"]
f = lambda k: "%.0f" % t[k] if t.get(k) is not None else "-"
print(sys.argv[2], f("cuda_init"), f("contexts"), f("comm_init"),
      f("allreduce"), f("collectives"), f("teardown"), f("total"))
PY
		done
	done
	printf '%-34s' "one process per GPU ($n, 1 rank)"
	for col in 1 2 3 4 5 6 7 8; do
		printf ' %9s' "$(awk -v c=$col '{print $c}' /tmp/knob-per-process.txt | grep -v '^-$' | median)"
	done
	echo
}

printf '%-34s %9s %9s %9s %9s %9s %9s %9s %9s\n' variant wall_ms cuda ctx comm allred coll teardown total
variant clean --teardown clean
variant exit --teardown exit
variant exit+IB_DISABLE NCCL_IB_DISABLE=1 --teardown exit
variant exit+MNNVL_off NCCL_MNNVL_ENABLE=0 --teardown exit
variant exit+RUNTIME_CONNECT=0 NCCL_RUNTIME_CONNECT=0 --teardown exit
variant exit+CUMEM=0 NCCL_CUMEM_ENABLE=0 --teardown exit
variant exit+EAGER_modules CUDA_MODULE_LOADING=EAGER --teardown exit
variant check --mode check
per_process

echo
echo "NCCL's own init breakdown (NCCL_DEBUG=INFO, one run):"
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT timeout 60 "$helper" --quiet 2>&1 |
	grep -E "Init timings|Init COMPLETE" | head -8 || true

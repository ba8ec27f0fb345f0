#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The fabric warmup's own cost against the number of ranks, on loopback,
# without Slurm: for each rank count, one nccl-warmup --mode fabric
# process per "node" (--fabric-root 127.0.0.1, 1 fake GPU each; 4 per
# process from 1024 ranks on), against the fake libcuda/libnccl, whose
# NCCL rendezvouses over real TCP with rank 0's process as the hub and
# moves every collective's buffers through it (tests/fake/fake_nccl_net.c).
# What it measures is the helper's coordination (join, GO, verdict), the
# processes' start and the fake's star exchange on this machine, not real
# NCCL (docs/dev/benchmarks.md puts real NCCL's bootstrap next to it).
#
#   RANKS="2 8 64 256 1024"   rank counts
#   ROUNDS=3                  runs per count (the median is printed)
#   GPUS_PER_NODE_FROM=1024   from this many ranks on, 4 GPUs per process
#   SN_BUILD_DIR=./_build     build tree (make check or make fake-libs)
#   PORT_LO=29600             fabric ports PORT_LO..PORT_LO+99 (below the
#                             ephemeral ports, 32768-60999)
# Prints one line per rank count:
#   ranks nodes gpus/node  wall_s  slowest_node_s  root_comm_init_ms  root_collectives_ms
# wall_s: from the first process started to the last one exited;
# slowest_node_s: the largest "total" a node reports (its own start to
# its verdict).  Exits 1 if any node fails.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${SN_BUILD_DIR:-$here/../_build}
helper=$build/src/warmup/nccl-warmup
fake=$(cd "$build/tests/fake" 2>/dev/null && pwd) || {
	echo "fabric-scale.sh: no $build/tests/fake: run make check (or make fake-libs) first" >&2
	exit 2
}
[ -x "$helper" ] || { echo "fabric-scale.sh: no $helper" >&2; exit 2; }
ranks_list=${RANKS:-"2 8 64 256 1024"}
rounds=${ROUNDS:-3}
four_from=${GPUS_PER_NODE_FROM:-1024}
lo=${PORT_LO:-29600}
hi=$((lo + 99))

# The root holds a coordination socket and the fake NCCL hub a socket per
# other process: two descriptors per node.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
for v in $(env | sed -n 's/^\(NCCL_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset FAKE_NCCL_FAIL FAKE_NCCL_HANG FAKE_CUDA_FAIL FAKE_CUDA_HANG FAKE_NCCL_NET
export LD_LIBRARY_PATH="$fake/cuda:$fake/nccl"
# Device memory is host memory in the fake: reserve none per communicator.
export FAKE_NCCL_MEM_MIB=0

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fabric-scale.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

# json_num FILE KEY: the first number after "KEY": in FILE.
json_num() {
	sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" "$1" | head -n1
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '%6s %6s %9s %8s %15s %18s %20s\n' ranks nodes gpus/node wall_s \
	slowest_node_s root_comm_init_ms root_collectives_ms
failed=0
step=0
for r in $ranks_list; do
	g=1
	[ "$r" -ge "$four_from" ] && g=4
	n=$((r / g))
	cvd=0
	[ "$g" -eq 4 ] && cvd=0,1,2,3
	: >"$tmp/walls"; : >"$tmp/slowest"; : >"$tmp/init"; : >"$tmp/coll"
	for ((k = 0; k < rounds; k++)); do
		step=$((step + 1))
		pids=()
		t0=$EPOCHREALTIME
		for ((i = 0; i < n; i++)); do
			CUDA_VISIBLE_DEVICES=$cvd "$helper" --mode fabric --json \
				--quiet --node "h$i" --job-id "$$" --step-id "$step" \
				--node-index "$i" --nodes "$n" \
				--nodelist "h[0-$((n - 1))]" \
				--fabric-root 127.0.0.1 --fabric-ports "$lo-$hi" \
				--timeout 300 >"$tmp/$i.json" 2>"$tmp/$i.err" &
			pids+=($!)
		done
		bad=0
		for p in "${pids[@]}"; do
			wait "$p" || bad=$((bad + 1))
		done
		t1=$EPOCHREALTIME
		if [ "$bad" -ne 0 ]; then
			echo "fabric-scale.sh: $bad of $n nodes failed at $r ranks, e.g.:" >&2
			grep -h 'spank-nccl' "$tmp"/*.err | head -n 3 >&2
			failed=1
			continue
		fi
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }' >>"$tmp/walls"
		for ((i = 0; i < n; i++)); do
			json_num "$tmp/$i.json" total
		done | sort -n | tail -n1 |
			awk '{ printf "%.2f\n", $1 / 1000 }' >>"$tmp/slowest"
		json_num "$tmp/0.json" comm_init >>"$tmp/init"
		awk -v a="$(json_num "$tmp/0.json" allreduce)" \
		    -v b="$(json_num "$tmp/0.json" collectives)" \
		    'BEGIN { printf "%.1f\n", a + b }' >>"$tmp/coll"
	done
	[ -s "$tmp/walls" ] || continue
	printf '%6d %6d %9d %8s %15s %18s %20s\n' "$r" "$n" "$g" \
		"$(median <"$tmp/walls")" "$(median <"$tmp/slowest")" \
		"$(median <"$tmp/init")" "$(median <"$tmp/coll")"
done
exit $failed

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# What --nccl-warmup=fabric adds to a multi-node step's launch, next to
# --nccl-warmup=comm (each node on its own) and no warmup, in one run on
# one cluster (tests/gpu/fabric-gpu.sh runs it on two network-namespace
# nodes of a GPU host; any up cluster of SN_BENCH_NODES nodes works):
#
#   srun -N NODES --gres=GRES true                        (no option)
#   srun -N NODES --gres=GRES --nccl-warmup=comm true
#   srun -N NODES --gres=GRES --nccl-warmup=fabric true
#
# Medians of SN_BENCH_RUNS runs each (default 5, at least 5), interleaved
# so that drift hits every kind alike, after one discarded run of each.
# Prints a table and the added latencies (median - median of no option).
# Exit 1 if any run failed; there is no target to miss (docs/dev/benchmarks.md
# reports the numbers).
#
# Needs: SLURM_CONF of an up cluster, srun in PATH, spank_nccl.so in its
# plugstack.conf.  SN_BENCH_NODES (default 2), SN_BENCH_GRES (default
# gpu:1).
set -uo pipefail

export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
	NVSHMEM_DISABLE_NVLS=1

runs=${SN_BENCH_RUNS:-5}
nodes=${SN_BENCH_NODES:-2}
gres=${SN_BENCH_GRES:-gpu:1}
samples=$(mktemp /tmp/fabric-latency.XXXXXX)
trap 'rm -f "$samples" "$samples".*' EXIT
errors=0

die() {
	echo "fabric-latency.sh: error: $*" >&2
	exit 1
}

[ "$runs" -ge 5 ] || die "SN_BENCH_RUNS=$runs: medians need at least 5 runs"
[ -n "${SLURM_CONF:-}" ] || die "SLURM_CONF is not set (an up cluster is needed)"
command -v srun >/dev/null || die "srun not in PATH"

# run NAME [SRUN OPTION]: one srun, its wall time sampled under NAME.
run() {
	local name=$1 t0 rc
	shift
	t0=$EPOCHREALTIME
	timeout -k 5 120 srun --immediate=30 -N"$nodes" --gres="$gres" "$@" \
		true >"$samples.out" 2>"$samples.err"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "fabric-latency.sh: srun $* failed (exit $rc):" >&2
		tail -n 5 "$samples.err" >&2
		errors=$((errors + 1))
		return
	fi
	[ -z "$name" ] ||
		awk -v n="$name" -v a="$t0" -v b="$EPOCHREALTIME" \
			'BEGIN { printf "%s\t%.4f\n", n, b - a }' >>"$samples"
}

echo "fabric-latency: $nodes nodes, --gres=$gres, $runs runs each"
run "" 
run "" --nccl-warmup=comm
run "" --nccl-warmup=fabric
for ((i = 0; i < runs; i++)); do
	run "srun (no option)"
	run "srun --nccl-warmup=comm" --nccl-warmup=comm
	run "srun --nccl-warmup=fabric" --nccl-warmup=fabric
done

awk -F'\t' '
{ v[$1] = v[$1] " " $2; n[$1]++ }
function median(name,   a, k, i, j, t) {
	k = split(v[name], a, " ")
	for (i = 1; i <= k; i++)
		for (j = i + 1; j <= k; j++)
			if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
END {
	printf "%-32s %5s %9s\n", "launch (s)", "runs", "median"
	split("srun (no option)|srun --nccl-warmup=comm|srun --nccl-warmup=fabric", names, "|")
	for (i = 1; i <= 3; i++)
		if (n[names[i]])
			printf "%-32s %5d %9.3f\n", names[i], n[names[i]], median(names[i])
	if (n[names[1]] && n[names[2]] && n[names[3]]) {
		base = median(names[1])
		printf "\nadded launch latency, comm:   %.3f s\n", median(names[2]) - base
		printf "added launch latency, fabric: %.3f s\n", median(names[3]) - base
		printf "fabric - comm:                %.3f s\n", median(names[3]) - median(names[2])
	}
}' "$samples"
[ "$errors" -eq 0 ]

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# What --nccl-warmup costs and what it saves, on a GPU node under Slurm
# (tests/gpu/run-gpu-tests.sh runs it after its checks; docs/dev/gpu-testing.md):
#
#   srun true, with and without --nccl-warmup    added launch latency
#   nccl-warmup --json alone                     per-phase times, wall time
#   bench/pytorch_warmup.py                      PyTorch doing the same work
#   nccl-warmup --mode bandwidth --json          bus bandwidth
#
# Medians of SN_BENCH_RUNS runs each (default 5, at least 5), after one
# discarded run of each kind; one table, then the targets:
#   added latency <= SN_BENCH_TARGET_S (default 1.0 s, 2xH200; issue 14),
#   and at least 5x less than the PyTorch warmup.
# Before/after from one run: with SN_HELPER_BEFORE (another nccl-warmup,
# e.g. the previous release) and SN_BENCH_PLUGSTACK (the cluster's
# plugstack.conf, whose warmup_helper= is switched for those runs), the
# same srun and helper measurements are taken with it too, interleaved;
# SN_BENCH_BEFORE_ENV (e.g. LD_LIBRARY_PATH=...) is its environment.
# Exit 1 if any run failed; missed targets are reported, not failed.
#
# Needs: an up cluster (SLURM_CONF exported, srun in PATH) whose node has
# the GPUs and spank_nccl.so in plugstack.conf; SN_HELPER = the helper
# (default: nccl-warmup in PATH); SN_BENCH_GPUS (default: nvidia-smi -L).
# Takes about 1.5 min on 4 H200 (the PyTorch runs dominate).
set -uo pipefail

export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
	NVSHMEM_DISABLE_NVLS=1

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
runs=${SN_BENCH_RUNS:-5}
helper=${SN_HELPER:-$(command -v nccl-warmup)}
before=${SN_HELPER_BEFORE:-}
plugstack=${SN_BENCH_PLUGSTACK:-}
target=${SN_BENCH_TARGET_S:-1.0}
# shellcheck disable=SC2206 # words on purpose: NAME=VALUE ...
before_env=(${SN_BENCH_BEFORE_ENV:-})
gpus=${SN_BENCH_GPUS:-$(nvidia-smi -L | grep -c '^GPU ')}
samples=$(mktemp /tmp/warmup-bench.XXXXXX)
trap 'rm -f "$samples" "$samples".*' EXIT
errors=0

die() {
	echo "warmup-bench.sh: error: $*" >&2
	exit 1
}

[ "$runs" -ge 5 ] || die "SN_BENCH_RUNS=$runs: medians need at least 5 runs"
[ -n "${SLURM_CONF:-}" ] || die "SLURM_CONF is not set (an up cluster is needed)"
command -v srun >/dev/null || die "srun not in PATH"
[ -x "$helper" ] || die "nccl-warmup not found (set SN_HELPER)"
[ "$gpus" -ge 1 ] || die "no GPUs (nvidia-smi -L)"

now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f", b - a }'; }

# sample METRIC VALUE
sample() { printf '%s\t%s\n' "$1" "$2" >>"$samples"; }

# timed NAME CMD...: wall time of CMD (stdout kept in $samples.last).
timed() {
	local name=$1 t0 rc
	shift
	t0=$(now)
	"$@" >"$samples.last" 2>"$samples.err"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "warmup-bench.sh: $name failed (exit $rc): $*" >&2
		tail -n 5 "$samples.err" >&2
		errors=$((errors + 1))
		return 1
	fi
	[ -z "$name" ] || sample "$name" "$(since "$t0")"
}

srun_true() {
	timeout -k 5 120 srun --immediate=30 -N1 --gres=gpu:"$gpus" "$@" true
}

helper_json() {
	timeout -k 5 120 "$helper" --json "$@"
}

# The "before" side: the other helper, in plugstack.conf and by hand.
use_helper() {
	sed -i "s#warmup_helper=[^ ]*#warmup_helper=$1#" "$plugstack"
}
srun_before() {
	use_helper "$before"
	env "${before_env[@]}" timeout -k 5 120 srun --immediate=30 -N1 \
		--gres=gpu:"$gpus" --nccl-warmup true
	local rc=$?
	use_helper "$helper"
	return $rc
}
before_json() {
	env "${before_env[@]}" timeout -k 5 120 "$before" --json "$@"
}

# One JSON line -> samples "helper <phase>_ms" and busbw.
helper_sample() {
	local prefix=$1
	python3 -c '
import json, sys
prefix = sys.argv[1]
d = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
for k, v in d["timings_ms"].items():
    if v is not None:
        print("%s %s (ms)\t%s" % (prefix, k, v))
if d.get("busbw_gbps") is not None:
    print("%s busbw (GB/s)\t%s" % (prefix, d["busbw_gbps"]))
' "$prefix" "$samples.last" >>"$samples" || errors=$((errors + 1))
}

if [ -n "$before" ]; then
	[ -x "$before" ] || die "SN_HELPER_BEFORE=$before is not executable"
	[ -f "$plugstack" ] && grep -q "warmup_helper=$helper" "$plugstack" ||
		die "SN_BENCH_PLUGSTACK must name the plugstack.conf with warmup_helper=$helper"
	echo "warmup-bench: before = $before (env: ${before_env[*]:-none})"
fi
echo "warmup-bench: $gpus GPUs, $runs runs each, helper $helper"
echo "warmup-bench: node $(hostname), $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"

# Discarded first runs: page cache, first-job effects in slurmd.
timed "" srun_true
timed "" srun_true --nccl-warmup
timed "" helper_json

[ -z "$before" ] || timed "" srun_before
for ((i = 0; i < runs; i++)); do
	# Interleaved, so drift hits both sides alike.
	timed "srun true (s)" srun_true
	timed "srun --nccl-warmup true (s)" srun_true --nccl-warmup
	[ -z "$before" ] ||
		timed "BEFORE srun --nccl-warmup true (s)" srun_before
	timed "srun --nccl-warmup=check true (s)" srun_true --nccl-warmup=check
done
for ((i = 0; i < runs; i++)); do
	timed "nccl-warmup wall (s)" helper_json --teardown clean &&
		helper_sample "nccl-warmup"
	[ -z "$before" ] ||
		{ timed "BEFORE nccl-warmup wall (s)" before_json &&
		  helper_sample "BEFORE nccl-warmup"; }
done
# What the plugin runs by default (warmup_teardown=exit).
for ((i = 0; i < runs; i++)); do
	timed "nccl-warmup --teardown exit wall (s)" helper_json --teardown exit
done
for ((i = 0; i < runs; i++)); do
	timed "nccl-warmup bandwidth wall (s)" helper_json --mode bandwidth &&
		helper_sample "bandwidth mode"
done
for ((i = 0; i < runs; i++)); do
	timed "pytorch warmup wall (s)" timeout -k 5 180 \
		python3 "$here/pytorch_warmup.py" --gpus "$gpus" &&
		tail -n 1 "$samples.last" | sed 's/^/  pytorch_warmup.py: /'
done

python3 - "$samples" "$gpus" "$target" <<'EOF'
import statistics
import sys

rows = {}
order = []
for line in open(sys.argv[1]):
    name, value = line.rstrip("\n").split("\t")
    if name not in rows:
        rows[name] = []
        order.append(name)
    rows[name].append(float(value))

med = {k: statistics.median(v) for k, v in rows.items()}
print()
print("%-42s %3s %10s %10s %10s" % ("metric", "n", "median", "min", "max"))
print("-" * 79)
for k in order:
    v = rows[k]
    print("%-42s %3d %10.3f %10.3f %10.3f" % (k, len(v), med[k], min(v),
                                              max(v)))
print()

def get(name):
    if name not in med:
        print("missing measurement: %s" % name)
        return None
    return med[name]

plain = get("srun true (s)")
warm = get("srun --nccl-warmup true (s)")
helper = get("nccl-warmup wall (s)")
torch = get("pytorch warmup wall (s)")
if None in (plain, warm, helper, torch):
    sys.exit(1)
added = warm - plain
print("added launch latency (median srun --nccl-warmup - median srun): "
      "%.3f s" % added)
print("%-58s %8s  %s" % ("target", "value", "verdict"))
target = float(sys.argv[3])
print("%-58s %7.2fs  %s" % ("added latency <= %g s" % target, added,
                            "met" if added <= target else "MISSED"))
old = med.get("BEFORE srun --nccl-warmup true (s)")
if old is not None:
    print("%-58s %7.2fs -> %.2fs" % ("added latency, before -> after",
                                      old - plain, added))
    for k in order:
        if k.startswith("BEFORE nccl-warmup ") and k.endswith("(ms)"):
            new = med.get(k[len("BEFORE "):])
            print("  %-56s %8.1f -> %s" % (k[len("BEFORE nccl-warmup "):],
                                          med[k], "%.1f" % new if new is not None else "-"))
ratio = torch / added if added > 0 else float("inf")
print("%-58s %7.1fx  %s" % ("PyTorch warmup / added latency >= 5x", ratio,
                            "met" if ratio >= 5 else "MISSED"))
print("%-58s %7.1fx" % ("PyTorch warmup / nccl-warmup alone", torch / helper))
check = get("srun --nccl-warmup=check true (s)")
if check is not None:
    print("%-58s %7.2fs" % ("added latency, --nccl-warmup=check", check - plain))
fast = get("nccl-warmup --teardown exit wall (s)")
if fast is not None:
    print("%-58s %7.2fs" % ("clean teardown costs (helper alone, clean - exit)",
                            helper - fast))
bw = med.get("bandwidth mode busbw (GB/s)")
if bw is not None:
    print("%-58s %7.1f GB/s (%s GPUs, 64M all-reduce)" % (
        "bandwidth mode busbw, median", bw, sys.argv[2]))
EOF
rc=$?
if [ "$errors" -ne 0 ] || [ "$rc" -ne 0 ]; then
	echo "warmup-bench.sh: $errors failed runs" >&2
	exit 1
fi

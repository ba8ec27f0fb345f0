#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# What the GPU health checks (NVML, issue 24) add to a warmup: RUNS
# interleaved pairs of `nccl-warmup --mode check --json`, one with
# --health off (no NVML at all) and one with the default policy, on every
# GPU the process sees.  Prints the median wall time of each, their
# difference, and the median of the helper's own measure of the checks
# (JSON health.ms: what the step waits for NVML once its GPUs are known;
# NVML starts and reads the GPUs beside NCCL's load, after cuInit).  Target: at most 50 ms
# added on 1 to 8 GPUs.
#
#   SN_HELPER=PATH bash bench/health-cost.sh [RUNS]   (default 10)
set -euo pipefail
helper=${SN_HELPER:-nccl-warmup}
runs=${1:-10}
command -v "$helper" >/dev/null || { echo "health-cost.sh: no helper $helper (set SN_HELPER)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# json_num FILE KEY: the first "KEY":NUMBER in FILE.
json_num() { sed -nE "s/.*\"$2\":([0-9.]+).*/\\1/p" "$1" | head -n 1; }

for ((i = 0; i < runs; i++)); do
	for policy in off default; do
		"$helper" --mode check --json --quiet --health "$policy" \
			>"$tmp/$policy.$i.json" 2>"$tmp/$policy.$i.err" || {
			echo "health-cost.sh: nccl-warmup --health $policy failed:" >&2
			cat "$tmp/$policy.$i.err" >&2
			exit 1
		}
	done
done
gpus=$(grep -o '"busid"' "$tmp/default.0.json" | wc -l)
# "total" of timings_ms: the whole run, as the helper measured it.
off=$(for f in "$tmp"/off.*.json; do json_num "$f" total; done | median)
on=$(for f in "$tmp"/default.*.json; do json_num "$f" total; done | median)
own=$(for f in "$tmp"/default.*.json; do sed -nE 's/.*"health":\{"checked":true,"why_not":null,"ms":([0-9.]+).*/\1/p' "$f"; done | median)
[ -n "$own" ] || { echo "health-cost.sh: NVML did not answer:" >&2; grep -o '"why_not":"[^"]*"' "$tmp/default.0.json" >&2; exit 1; }
echo "health checks on $gpus GPU(s), medians of $runs interleaved runs (check mode):"
added=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.1f", a - b }')
echo "  --health off: ${off} ms; default: ${on} ms; difference ${added} ms (target <= 50 ms)"
echo "  the wait for the checks after cuInit (JSON health.ms): ${own} ms"
# The target is the added wall time: health.ms alone hides what NVML's
# thread costs the driver's start beside it.
awk -v m="$added" 'BEGIN { exit !(m <= 50) }' || { echo "health-cost.sh: ${added} ms added, above the 50 ms target" >&2; exit 1; }

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# What warmup reuse saves a batch job (docs/dev/benchmarks.md, "Warmup reuse"):
# a job with "#SBATCH --nccl-warmup" on all of one node's GPUs running 1, 4
# and 10 `srun true`, with warmup_reuse=no (before: every srun warms up
# again) and warmup_reuse=yes (after: the sruns reuse the batch step's
# pass), against the same job without --nccl-warmup.  One run, variants
# interleaved per round, medians of SN_BENCH_RUNS rounds (default 3).
#
# Printed per srun count: the time the script's sruns took (measured inside
# the job) and the job's time from submission to the script's end (the
# batch step's own warmup included), each as added time over the same job
# without the option.
#
# Needs an up cluster: SLURM_CONF exported, sbatch in PATH, spank_nccl.so
# in the plugstack.conf next to slurm.conf (or PlugStackConfig=).  The
# script edits that line (warmup_reuse=) and restores it on exit.  The GPU
# count is the first node's (scontrol: Gres=gpu:N), so it runs unchanged on
# the CPU test cluster with fake GPUs (export LD_LIBRARY_PATH to the fake
# libraries: the jobs inherit it) and on a GPU node (docs/dev/gpu-testing.md).
set -uo pipefail

runs=${SN_BENCH_RUNS:-3}
counts=(1 4 10)
work=$(mktemp -d /tmp/warmup-reuse.XXXXXX)
conf_backup=""
errors=0

die() {
	echo "warmup-reuse.sh: error: $*" >&2
	exit 1
}

[ -n "${SLURM_CONF:-}" ] || die "SLURM_CONF is not set (an up cluster is needed)"
command -v sbatch >/dev/null || die "sbatch not in PATH"
[ "$runs" -ge 1 ] || die "SN_BENCH_RUNS=$runs"

plugstack=$(sed -n 's/^[[:space:]]*PlugStackConfig[[:space:]]*=[[:space:]]*//Ip' "$SLURM_CONF" | tail -n1)
: "${plugstack:=$(dirname "$SLURM_CONF")/plugstack.conf}"
grep -q 'spank_nccl\.so' "$plugstack" 2>/dev/null ||
	die "no spank_nccl.so line in $plugstack"
node=$(sinfo -h -o %N -N | head -n1)
gpus=$(scontrol show node "$node" | sed -n 's/.*Gres=gpu:\([^ ,(]*:\)\{0,1\}\([0-9][0-9]*\).*/\2/p' | head -n1)
[ -n "$gpus" ] && [ "$gpus" -ge 1 ] || die "node $node has no gpu GRES"

restore() {
	[ -z "$conf_backup" ] || cp "$conf_backup" "$plugstack"
	rm -rf "$work"
}
trap restore EXIT
conf_backup="$work/plugstack.conf.orig"
cp "$plugstack" "$conf_backup"

# The plugstack line with warmup_reuse=$1 (plugstack.conf is re-read by
# every sbatch/srun/slurmstepd).
set_reuse() {
	sed -E "/spank_nccl\.so/{s/ warmup_reuse=[a-z]+//; s/\$/ warmup_reuse=$1/}" \
		"$conf_backup" >"$plugstack.tmp" && mv -f "$plugstack.tmp" "$plugstack"
}

# run_job VARIANT N: one job; appends "VARIANT N script_s wall_s".
run_job() {
	local variant=$1 n=$2 script="$work/job.sh" t0 out i job
	{
		echo '#!/bin/bash'
		[ "$variant" = none ] || echo '#SBATCH --nccl-warmup'
		echo "#SBATCH -N1 -w $node --gres=gpu:$gpus"
		echo 't0=$EPOCHREALTIME'
		for ((i = 0; i < n; i++)); do echo 'srun true || exit 1'; done
		echo 'echo "t0=$t0 t1=$EPOCHREALTIME"'
	} >"$script"
	case $variant in
	none | before) set_reuse no ;;
	after) set_reuse yes ;;
	esac
	out="$work/job.out"
	rm -f "$out"
	t0=$EPOCHREALTIME
	job=$(timeout -k 5 60 sbatch --parsable -o "$out" "$script") ||
		die "sbatch failed"
	job=${job%%;*}
	# Polls the queue (sbatch --wait polls far more slowly).
	for ((i = 0; i < 6000; i++)); do
		[ -n "$(squeue -h -j "$job" 2>/dev/null)" ] || break
		sleep 0.1
	done
	if ! grep -q '^t0=' "$out" 2>/dev/null; then
		echo "warmup-reuse.sh: $variant job $job with $n sruns failed:" >&2
		tail -n 5 "$out" >&2
		errors=$((errors + 1))
		return
	fi
	sed -n 's/^t0=\([0-9.]*\) t1=\([0-9.]*\)$/\1 \2/p' "$out" |
		awk -v v="$variant" -v n="$n" -v s="$t0" \
			'{ printf "%s %d %.3f %.3f\n", v, n, $2 - $1, $2 - s }' \
		>>"$work/samples"
}

median() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# med VARIANT N FIELD (3: script, 4: wall)
med() {
	awk -v v="$1" -v n="$2" -v f="$3" '$1 == v && $2 == n { print $f }' \
		"$work/samples" | median
}

echo "warmup-reuse.sh: node $node, $gpus GPUs, $runs rounds, srun counts ${counts[*]}"
for ((r = 1; r <= runs; r++)); do
	for n in "${counts[@]}"; do
		for variant in none before after; do
			run_job "$variant" "$n"
		done
	done
done

printf '\n| sruns | sruns: no option | before (reuse off) | after (reuse on) | submit to end: no option | before | after | saved per job |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for n in "${counts[@]}"; do
	awk -v n="$n" -v s0="$(med none "$n" 3)" -v sb="$(med before "$n" 3)" \
	    -v sa="$(med after "$n" 3)" -v w0="$(med none "$n" 4)" \
	    -v wb="$(med before "$n" 4)" -v wa="$(med after "$n" 4)" 'BEGIN {
		printf "| %d | %.2f s | %.2f s (%+.2f) | %.2f s (%+.2f) | %.2f s | %.2f s (%+.2f) | %.2f s (%+.2f) | %.2f s |\n",
			n, s0, sb, sb - s0, sa, sa - s0, w0, wb, wb - w0, wa, wa - w0, wb - wa
	}'
done
[ "$errors" -eq 0 ] || { echo "warmup-reuse.sh: $errors jobs failed" >&2; exit 1; }

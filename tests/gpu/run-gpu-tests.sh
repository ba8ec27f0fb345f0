#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# spank-nccl on a real GPU node under real Slurm, in one go, as root, from
# the repository root (docs/dev/gpu-testing.md):
#
#   1. unpack Debian's Slurm 22.05 + munge debs from .carry/debs into
#      /opt/sl (not into /): the node has no package registry
#   2. build spank-nccl from .carry/spank-nccl-*.tar.xz (the node has no
#      autoconf) against /usr/local/cuda and the node's NCCL
#   3. start munged + slurmctld + slurmd, gres on the real /dev/nvidia*,
#      spank_nccl.so in plugstack.conf (tests/cluster/cluster.sh does the
#      generic parts)
#   4. the checks below, each under a timeout; last line "N passed, N failed"
#   5. three PyTorch jobs of two users, each on its own NCCL RAS, a stuck
#      rank named by spank-nccl-status (tests/gpu/ras-gpu.sh)
#   6. real pyxis + enroot: srun --container-image=./IMG.sqsh --nccl-warmup
#      as the job user, the venv's NCCL in the image (tests/gpu/pyxis-gpu.sh)
#   7. bench/warmup-bench.sh, then bench/warmup-reuse.sh (SN_GPU_BENCH=0
#      leaves both out; SN_REUSE_BENCH_RUNS rounds of the latter, default 1)
#
# This file holds the bookkeeping (say, record, run_test, the final
# summary) and the order of the phases; each phase is in tests/gpu/lib/:
# node.sh (0), install.sh (1), build.sh (2), cluster.sh (3), srun.sh and
# cases.sh (4), bench.sh (7); the RAS phase (5) in tests/gpu/ras-gpu.sh, the
# pyxis phase (6) in tests/gpu/pyxis-gpu.sh with lib/enroot.sh, the fabric
# phase in tests/gpu/fabric-gpu.sh and fabric-one-gpu.sh.
#
# Everything goes to $OUT/run.log; the console gets the results only.
# $OUT also receives summary.txt, build.log, slurmd.log, slurmctld.log,
# bench.txt and node.txt (the device call brings back 8 files at most).
#
# Environment:
#   OUT                 results folder (default /tmp/sn-gpu-out)
#   SN_CARRY            carried files (default ./.carry: tests/gpu/fetch-debs.sh)
#   SN_GPU_BUDGET_S     own deadline in seconds (default 580, under the device's 600 s a call): whatever is
#                       left undone when it passes is counted as failed
#   SN_GPU_BENCH=0      no benchmark
#   SN_GPU_FABRIC=0     no fabric phase (tests/gpu/fabric-gpu.sh: the host as
#                       two network-namespace nodes of one GPU each, then
#                       srun -N2 --nccl-warmup=fabric; needs 2 GPUs and the
#                       carried iproute2)
#   SN_GPU_CHECKS=0     no single-node checks (lib/cases.sh): to iterate
#                       on a later phase
#   SN_GPU_RAS=0        no RAS phase (tests/gpu/ras-gpu.sh: three PyTorch
#                       jobs of two users on the node; needs 4 GPUs)
#   SN_GPU_PYXIS=0      no pyxis phase (needs .carry/enroot: fetch-debs.sh);
#                       SN_PYXIS_BENCH_RUNS rounds of its bench (default 5)
#   SN_GPU_CLUSTER_DIR  the single-node cluster (default /tmp/sn-gpu-cluster)
#   SN_GPU_FABRIC_BENCH=0|1  bench/fabric-latency.sh in that phase (default:
#                       SN_GPU_BENCH)
#   SN_GPU_DRYRUN=1     rehearsal on a GPU-less Debian machine with Slurm
#                       installed: runs in a private mount namespace (bind
#                       mounts instead of symlinks in /usr), fake CUDA/NCCL
#                       libraries (tests/fake) and a fake nvidia-smi; most
#                       GPU checks then fail, the shell logic is exercised
#
# NVLink multicast stays off in every environment this creates: a program
# using it can put the host's shared GPUs out of service.

# The settings below are used by the sourced files, and fabric_dir comes
# from one: shellcheck sees one file at a time.
# shellcheck disable=SC2034,SC2154
set -uo pipefail

export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
	NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
carry=${SN_CARRY:-$src/.carry}
dryrun=${SN_GPU_DRYRUN:-0}
budget_s=${SN_GPU_BUDGET_S:-580}
out=${OUT:-/tmp/sn-gpu-out}
work=${SN_GPU_WORK:-/tmp/sn-gpu}
sl_root=${SN_SL_ROOT:-/opt/sl}
cuda=${SN_CUDA:-/usr/local/cuda}
arch_dir=x86_64-linux-gnu

if [ "$dryrun" = 1 ] && [ -z "${SN_GPU_IN_NS:-}" ]; then
	# Private mounts: the bind mounts over /usr vanish with the namespace.
	exec unshare -m --propagation private \
		env SN_GPU_IN_NS=1 bash "${BASH_SOURCE[0]}" "$@"
fi

mkdir -p "$out"
exec 3>&1 >"$out/run.log" 2>&1
t_begin=$EPOCHREALTIME

# ---------------------------------------------------------------------
# Output and bookkeeping

say() {
	echo "$*"
	echo "$*" >&3
}

elapsed() {
	awk -v a="$t_begin" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

seconds_left() {
	awk -v a="$t_begin" -v b="$EPOCHREALTIME" -v t="$budget_s" \
		'BEGIN { printf "%d", t - (b - a) }'
}

phase() {
	say "==== [$(elapsed) s] $*"
}

passed=0
failed=0
not_applicable=0
results=()

# record PASS|FAIL|N/A NAME [WHY]: N/A is a case the node's shape cannot
# run ("not applicable: needs 2 GPUs"), never a failure.
record() {
	local verdict=$1 name=$2 why=${3:-}
	if [ "$verdict" = PASS ]; then
		passed=$((passed + 1))
	elif [ "$verdict" = N/A ]; then
		not_applicable=$((not_applicable + 1))
	else
		failed=$((failed + 1))
	fi
	results+=("$verdict $name${why:+: $why}")
	say "$verdict $name${why:+: $why}"
}

die_setup() {
	record FAIL "$1" "$2"
	finish
	exit 1
}

# A test body calls want/want_not; the first unmet expectation is the
# test's reason, all are logged.  needs_gpus N: the case is not
# applicable on a node with fewer GPUs (the body returns when it fails).
t_problems=()
t_na=
needs_gpus() {
	[ "$gpu_count" -ge "$1" ] && return 0
	t_na="not applicable: needs $1 GPUs (the node has $gpu_count)"
	return 1
}
want() {
	local what=$1
	shift
	if ! "$@"; then
		t_problems+=("$what")
		echo "  unmet: $what"
	fi
}

# run_test NAME FUNCTION: one counted check, skipped as FAILED (never
# silently) when the budget cannot cover its worst case.
run_test() {
	local name=$1 fn=$2 need=${3:-30}
	if [ "$(seconds_left)" -lt "$need" ]; then
		record FAIL "$name" "not run: only $(seconds_left) s of the ${budget_s} s budget left"
		return
	fi
	echo
	echo "---- test $name ($(elapsed) s)"
	t_problems=()
	t_na=
	"$fn"
	if [ -n "$t_na" ] && [ ${#t_problems[@]} -eq 0 ]; then
		record N/A "$name" "$t_na"
	elif [ ${#t_problems[@]} -eq 0 ]; then
		record PASS "$name"
	else
		record FAIL "$name" "$(printf '%s; ' "${t_problems[@]}" | sed 's/; $//')"
	fi
}

finished=0
finish() {
	[ "$finished" = 1 ] && return
	finished=1
	trap - EXIT TERM INT
	if [ -n "${SN_CLUSTER_DIR:-}" ] && declare -F sn_cluster_stop >/dev/null; then
		# The fabric phase saved the single-node cluster's logs already.
		if [ "$SN_CLUSTER_DIR" != "$fabric_dir" ]; then
			cp -f "$(sn_slurmd_log n1)" "$out/slurmd.log" 2>/dev/null
			cp -f "$(sn_slurmctld_log)" "$out/slurmctld.log" 2>/dev/null
		fi
		# Bounded inside: squeue/scancel under timeout, kills after 5 s.
		sn_cluster_stop >/dev/null 2>&1 3>&-
		[ "$SN_CLUSTER_DIR" = "$fabric_dir" ] ||
			cp -f "$(sn_slurmd_log n1)" "$out/slurmd.log" 2>/dev/null
	fi
	{
		echo "spank-nccl GPU tests on $(hostname) ($(date -u +%FT%TZ)), $(elapsed) s"
		[ -f "$work/node-brief.txt" ] && cat "$work/node-brief.txt"
		printf '%s\n' "${results[@]}"
		echo "$passed passed, $failed failed, $not_applicable not applicable"
	} >"$out/summary.txt"
	say ""
	say "$passed passed, $failed failed, $not_applicable not applicable"
}
trap 'finish' EXIT
trap 'record FAIL run "interrupted (outer timeout?) before the end: the checks not listed did not run"; exit 143' TERM INT

# ---------------------------------------------------------------------
# The phases

# Sourced in this order, at the top level: each file's variables are the
# script's globals, as when they were one file.
for part in lib/node lib/install lib/build lib/cluster lib/srun lib/cases \
	ras-gpu lib/enroot pyxis-gpu lib/bench fabric-gpu fabric-one-gpu; do
	# shellcheck source=/dev/null
	source "$src/tests/gpu/$part.sh" || {
		echo "run-gpu-tests.sh: cannot source $src/tests/gpu/$part.sh (not in the tarball?)" >&2
		exit 1
	}
done

mkdir -p "$work"
chmod 0755 "$work"
say "spank-nccl GPU tests: $src (dry run: $dryrun), results in $out"
[ "$(id -u)" -eq 0 ] || die_setup setup "must run as root"
describe_node
setup_slurm
build_project
start_cluster
[ "${SN_GPU_CHECKS:-1}" = 1 ] && run_checks
run_ras
run_pyxis
run_bench
run_fabric
finish
[ "$failed" -eq 0 ]

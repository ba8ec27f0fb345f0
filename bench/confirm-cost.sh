#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# What the root confirmation of a failed warmup costs (issue 30;
# src/plugin/step_confirm.c), on the local throwaway cluster with the fake
# GPUs: median wall time of `srun --nccl-warmup=comm true` for
#   (a) a passing step (no confirmation runs)
#   (b) a step whose job helper fails at NCCL init (the job's own
#       FAKE_NCCL_FAIL=init): the confirmation runs and passes
# and the confirmation's own time as slurmstepd logs it ("confirmation of
# a failed warmup ... in N ms").  One run; prints the medians.
#
#   ROUNDS=N          launches per variant (default 20)
#   SN_BUILD_DIR      build tree with the plugin (default ./_build)
# Needs root (starts a cluster).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${SN_CLUSTER_DIR:=/tmp/spank-nccl-bench}"
export SN_CLUSTER_DIR
# shellcheck source=../tests/cluster/cluster.sh
source "$here/../tests/cluster/cluster.sh"

rounds=${ROUNDS:-20}
sn_cluster_start || exit 1
trap 'sn_cluster_stop >/dev/null 2>&1' EXIT
cd "$SN_CLUSTER_DIR/tmp" || exit 1
sn_plugstack_set
sn_node_fake
export LD_LIBRARY_PATH
LD_LIBRARY_PATH=$(sn_fake_lib_dir)

# Milliseconds of one srun; the step's exit status is not the point.
time_srun() {
	local t0 t1
	t0=$EPOCHREALTIME
	timeout 60 env "$@" srun -n1 --gres=gpu:2 --nccl-warmup=comm \
		true </dev/null >/dev/null 2>&1
	t1=$EPOCHREALTIME
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }'
}

median() {
	sort -n | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "n/a"; exit }
		print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

log=$(sn_slurmd_log n1)
before=$(wc -l <"$log")
: >a.ms
: >b.ms
for ((i = 0; i < rounds; i++)); do
	time_srun FAKE_NCCL_FAIL= >>a.ms
	time_srun FAKE_NCCL_FAIL=init >>b.ms
done
confirm=$(tail -n +"$((before + 1))" "$log" |
	sed -n 's/.*confirmation of a failed warmup .* in \([0-9]*\) ms.*/\1/p')
echo "rounds: $rounds"
echo "(a) passing comm step, median ms:                    $(median <a.ms)"
echo "(b) failing comm step + confirmation, median ms:     $(median <b.ms)"
echo "confirmations logged: $(wc -l <<<"$confirm"), median ms: $(median <<<"$confirm")"

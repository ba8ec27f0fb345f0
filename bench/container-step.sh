#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# What --nccl-warmup adds to a container step, on the local throwaway
# cluster with real pyxis + enroot (tests/cluster/containers.sh builds
# them once) and the fake GPUs: median wall time of
#   (a) srun --gres=gpu:2 true                          (no container)
#   (b) srun --gres=gpu:2 --container-image=./ok.sqsh true
#   (c) (b) + --nccl-warmup=check,fresh
#   (d) (b) + --nccl-warmup=comm,fresh,nccl=<the fake NCCL on the host>
# The variants alternate within each round so slow drift hits all alike.
# One run, numbers printed; no target (the fake GPUs cost nothing: on a
# GPU node the warmup's own time adds, see docs/dev/benchmarks.md).
#
#   ROUNDS=N        launches per variant (default 20, at least 10)
#   SN_BUILD_DIR    build tree with the plugin, helper and fake libraries
# Needs root (starts a cluster).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${SN_CLUSTER_DIR:=/tmp/spank-nccl-bench-container}"
export SN_CLUSTER_DIR SN_PYXIS=1 SN_HIDE_HOST_NCCL=1
# shellcheck source=../tests/cluster/cluster.sh
source "$here/../tests/cluster/cluster.sh"

rounds=${ROUNDS:-20}
if [ "$rounds" -lt 10 ]; then
	echo "container-step.sh: ROUNDS must be at least 10" >&2
	exit 2
fi

sn_cluster_start || exit 1
trap 'sn_cluster_stop >/dev/null 2>&1' EXIT
cd "$SN_CLUSTER_DIR/tmp" || exit 1
sn_container_image ok ok.sqsh || exit 1
export LD_LIBRARY_PATH
LD_LIBRARY_PATH=$(sn_fake_dir cuda)

args_of() {
	case $1 in
	a) echo "--gres=gpu:2" ;;
	b) echo "--gres=gpu:2 --container-image=./ok.sqsh" ;;
	c) echo "--gres=gpu:2 --container-image=./ok.sqsh --nccl-warmup=check,fresh" ;;
	d) echo "--gres=gpu:2 --container-image=./ok.sqsh --nccl-warmup=comm,fresh,nccl=$(sn_fake_dir nccl)" ;;
	esac
}

# Milliseconds of one srun of variant $1.
time_srun() {
	local t0 t1
	t0=$EPOCHREALTIME
	# shellcheck disable=SC2046
	timeout 60 srun $(args_of "$1") true </dev/null >/dev/null 2>&1 ||
		return 1
	t1=$EPOCHREALTIME
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }'
}

median() {
	sort -n | awk '{ v[NR] = $1 } END {
		if (NR % 2) print v[(NR + 1) / 2];
		else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

declare -A samples
for v in a b c d; do	# warm the page cache, the daemons, enroot
	time_srun "$v" >/dev/null || {
		echo "container-step.sh: variant ($v) failed: srun $(args_of "$v") true" >&2
		exit 1
	}
done
for ((r = 0; r < rounds; r++)); do
	for v in a b c d; do
		t=$(time_srun "$v") || {
			echo "container-step.sh: variant ($v) failed" >&2
			exit 1
		}
		samples[$v]+="$t"$'\n'
	done
done

declare -A med
for v in a b c d; do
	med[$v]=$(printf '%s' "${samples[$v]}" | median)
done
echo "container step launch, median of $rounds (Slurm $(sn_release_local full), pyxis $SN_PYXIS_VERSION, enroot $SN_ENROOT_VERSION, fake GPUs):"
printf '  (a) no container                  %8.1f ms\n' "${med[a]}"
printf '  (b) --container-image             %8.1f ms  (pyxis+enroot: %+.1f ms over a)\n' \
	"${med[b]}" "$(awk -v x="${med[b]}" -v y="${med[a]}" 'BEGIN{print x-y}')"
printf '  (c) (b) + --nccl-warmup=check     %8.1f ms  (%+.1f ms over b)\n' \
	"${med[c]}" "$(awk -v x="${med[c]}" -v y="${med[b]}" 'BEGIN{print x-y}')"
printf '  (d) (b) + --nccl-warmup=comm      %8.1f ms  (%+.1f ms over b)\n' \
	"${med[d]}" "$(awk -v x="${med[d]}" -v y="${med[b]}" 'BEGIN{print x-y}')"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# What spank-nccl adds to a step launch, on the local throwaway cluster:
# median wall time of `srun true` for
#   (a) no plugin (empty plugstack.conf)
#   (b) plugin loaded, not used
#   (c) plugin applying profiles (--nccl-profile=nccl-cumem-off,expandable-segments)
# The variants alternate within each round so slow drift (page cache,
# CPU frequency, other load) hits all of them alike.
#
#   ROUNDS=N          launches per variant (default 40, at least 30)
#   SN_BUILD_DIR      build tree with the plugin (default ./_build)
#   TARGET_B_MS=2 TARGET_C_MS=3   allowed median increase over (a)
# Exits 1 when a target is missed.  Needs root (starts a cluster).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${SN_CLUSTER_DIR:=/tmp/spank-nccl-bench}"
export SN_CLUSTER_DIR
# shellcheck source=../tests/cluster/cluster.sh
source "$here/../tests/cluster/cluster.sh"

rounds=${ROUNDS:-40}
target_b=${TARGET_B_MS:-2}
target_c=${TARGET_C_MS:-3}
if [ "$rounds" -lt 30 ]; then
	echo "launch-latency.sh: ROUNDS must be at least 30" >&2
	exit 2
fi

sn_cluster_start || exit 1
trap 'sn_cluster_stop >/dev/null 2>&1' EXIT
cd "$SN_CLUSTER_DIR/tmp" || exit 1

# Milliseconds (microsecond resolution) of one `srun true`.
time_srun() {
	local t0 t1
	t0=$EPOCHREALTIME
	timeout 30 srun "$@" true </dev/null >/dev/null || return 1
	t1=$EPOCHREALTIME
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }'
}

variant() {
	case $1 in
	a) sn_plugstack_empty ;;
	b | c) sn_plugstack_set ;;
	esac
}

args_of() {
	case $1 in
	c) echo "--nccl-profile=nccl-cumem-off,expandable-segments" ;;
	*) echo "" ;;
	esac
}

median() {
	sort -n | awk '{ v[NR] = $1 } END {
		if (NR % 2) print v[(NR + 1) / 2];
		else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

declare -A samples
# Warm up the binaries, the plugin and the daemons.
for v in a b c; do
	variant "$v"
	# shellcheck disable=SC2046
	for _ in 1 2 3; do time_srun $(args_of "$v") >/dev/null || exit 1; done
done

# (c) must really apply the profiles, or it measures nothing.
variant c
# shellcheck disable=SC2046
got=$(timeout 30 srun $(args_of c) printenv NCCL_CUMEM_ENABLE </dev/null)
if [ "$got" != 0 ]; then
	echo "launch-latency.sh: variant (c) did not apply the profile" >&2
	exit 1
fi

for ((r = 0; r < rounds; r++)); do
	# Rotate the order each round: abc, bca, cab, ...
	order=(a b c)
	for ((k = 0; k < 3; k++)); do
		v=${order[$(((k + r) % 3))]}
		variant "$v"
		# shellcheck disable=SC2046
		ms=$(time_srun $(args_of "$v")) || {
			echo "launch-latency.sh: srun failed in variant $v" >&2
			exit 1
		}
		samples[$v]+="$ms "
	done
done

ma=$(tr ' ' '\n' <<<"${samples[a]}" | grep . | median)
mb=$(tr ' ' '\n' <<<"${samples[b]}" | grep . | median)
mc=$(tr ' ' '\n' <<<"${samples[c]}" | grep . | median)

echo
echo "srun true on a local 1-node Slurm $(srun --version | cut -d' ' -f2) cluster, $rounds launches per variant, medians:"
printf '%-56s %9s %10s %7s %8s\n' variant "median ms" "delta ms" ratio target
awk -v a="$ma" -v b="$mb" -v c="$mc" -v tb="$target_b" -v tc="$target_c" 'BEGIN {
	printf "%-56s %9.2f %10s %7s %8s\n", "(a) no plugin", a, "-", "1.00", "-";
	printf "%-56s %9.2f %+10.2f %7.2f %8s\n", "(b) plugin loaded, unused", b, b - a, b / a, "+" tb;
	printf "%-56s %9.2f %+10.2f %7.2f %8s\n", "(c) --nccl-profile=nccl-cumem-off,expandable-segments", c, c - a, c / a, "+" tc;
	bad = 0;
	if (b - a > tb) { print "target missed: (b) adds more than " tb " ms"; bad = 1 }
	if (c - a > tc) { print "target missed: (c) adds more than " tc " ms"; bad = 1 }
	exit bad
}'

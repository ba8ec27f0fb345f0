#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Did a change move the helper's speed?  Builds nccl-warmup from two source
# trees (or takes two builds) and runs them on this node's GPUs in turns,
# A B A B ..., so that drift of the node (clocks, caches, other tenants)
# falls on both alike; prints the median wall time and phases of each and
# the ratio B/A.  Needs a GPU node; the first run of each is discarded.
#
#   bash bench/helper-ab.sh TREE_A TREE_B [RUNS] [-- HELPER ARGS...]
#   SN_HELPER_A=... SN_HELPER_B=... bash bench/helper-ab.sh - - [RUNS]
#
# A tree is a source checkout or an unpacked `make dist`, flat src/core/ or
# src/core's rooms alike.  Headers: CUDA_HOME (cuda.h), NCCL_INCLUDE
# (nccl.h), MUNGE_PREFIX (munge.h and libmunge, default /usr; libcrypto
# from the system); more -I
# flags in SN_AB_CPPFLAGS (configure's CUDA_CPPFLAGS, in make check).
set -euo pipefail
[ $# -ge 2 ] || { sed -n '3,15p' "$0" >&2; exit 2; }
tree_a=$1 tree_b=$2
shift 2
runs=11
if [ $# -gt 0 ] && [ "$1" != -- ]; then runs=$1; shift; fi
[ "${1:-}" = -- ] && shift
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--mode comm --teardown exit)
cuda=${CUDA_HOME:-/usr/local/cuda}
munge=${MUNGE_PREFIX:-/usr}
work=$(mktemp -d)

# build TREE OUT: every directory of src/core and src/warmup on the
# include path, every .c in them compiled, as the Makefile.inc files do.
build() {
	local tree=$1 out=$2 dirs
	dirs=$(find "$tree/src/core" "$tree/src/warmup" -type d)
	# shellcheck disable=SC2046,SC2086
	gcc -O2 -w -std=gnu11 -D_GNU_SOURCE -DWU_VERSION=\"ab\" \
		-DPACKAGE_NAME=\"spank-nccl\" -DPACKAGE_VERSION=\"ab\" \
		-DSYSCONFDIR=\"/etc\" -DLIBEXECDIR=\"/usr/libexec\" \
		$(printf -- '-I%s ' $dirs) -I"$cuda/include" \
		${NCCL_INCLUDE:+-I"$NCCL_INCLUDE"} ${SN_AB_CPPFLAGS:-} -I"$munge/include" \
		-DSN_HAVE_MUNGE=1 \
		-o "$out" $(find $dirs -maxdepth 1 -name '*.c') \
		-L"$munge/lib/x86_64-linux-gnu" -L"$munge/lib" \
		-Wl,-rpath,"$munge/lib/x86_64-linux-gnu" -lmunge -lcrypto -lpthread -ldl -lm
}

helper_a=${SN_HELPER_A:-$work/a}
helper_b=${SN_HELPER_B:-$work/b}
[ -n "${SN_HELPER_A:-}" ] || build "$tree_a" "$helper_a"
[ -n "${SN_HELPER_B:-}" ] || build "$tree_b" "$helper_b"
echo "A: $tree_a  B: $tree_b  args: ${args[*]}  runs: $runs each, interleaved"
echo "GPUs: $(nvidia-smi -L 2>/dev/null | wc -l) x $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"

# one LABEL HELPER: one run, appended to $work/LABEL as
# "wall cuda_init contexts comm_init collectives total" (ms).
one() {
	local start end out
	start=$(date +%s%N)
	out=$(timeout 120 "$2" --json --quiet "${args[@]}") ||
		{ echo "$1: run failed: $out" >&2; return 1; }
	end=$(date +%s%N)
	python3 - "$out" "$(((end - start) / 1000000))" >>"$work/$1" <<'PY'
import json, sys
t = json.loads(sys.argv[1])["timings_ms"]
f = lambda k: "%.1f" % t[k] if t.get(k) is not None else "-"
print(sys.argv[2], f("cuda_init"), f("contexts"), f("comm_init"),
      f("collectives"), f("total"))
PY
}

for i in $(seq 0 "$runs"); do
	one A "$helper_a"
	one B "$helper_b"
	if [ "$i" -eq 0 ]; then : >"$work/A"; : >"$work/B"; fi
done

median() { sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "-"}'; }
printf '%-14s %10s %10s %8s\n' "median (ms)" A B "B/A"
col=1
for name in wall cuda_init contexts comm_init collectives total; do
	a=$(awk -v c=$col '{print $c}' "$work/A" | grep -v '^-$' | median)
	b=$(awk -v c=$col '{print $c}' "$work/B" | grep -v '^-$' | median)
	ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a + 0 > 0) printf "%.3f", b / a; else print "-" }')
	printf '%-14s %10s %10s %8s\n' "$name" "$a" "$b" "$ratio"
	col=$((col + 1))
done
rm -rf "$work"

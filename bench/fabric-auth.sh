#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# What the fabric warmup's authentication costs (issues 20, 34): three
# nccl-warmup --mode fabric processes on loopback, one per "node"
# (127.0.0.1-3), against the fake CUDA/NCCL of a build tree, timed from
# the first start to the last exit; both mechanisms of this tree side by
# side: MUNGE (a private munged) and the step key, derived as the plugin
# does on an auth/slurm node (in slurmstepd, whose libcrypto is mapped,
# in a thread beside the helper's start: fabric-key-inproc.c, built here
# from src/plugin/step_key.c, stands in for it; its copies, one
# slurmstepd per node and step, are ready before the clock, as the MUNGE
# row's slurmstepd is, and wait on the key's pipe) and where
# slurmstepd has no libcrypto (each "node" runs nccl-warmup
# --fabric-key-derive over a slurm.key beside its helper, which reads the
# key from that pipe: --fabric-key-fd); and,
# given SN_BENCH_BEFORE, a helper built before issue 20 (unauthenticated,
# NCCL_COMM_ID).  In one run, interleaved so that drift hits all alike,
# after one discarded run each.
# Medians of SN_BENCH_RUNS runs (default 21, at least 5).  No Slurm, no GPU;
# there is no target to miss (docs/dev/benchmarks.md reports the numbers).
#
#   SN_BENCH_BEFORE=/tmp/old/src/warmup/nccl-warmup bash bench/fabric-auth.sh
#
# Needs: a build tree (SN_BUILD_DIR, default the source tree) after
# `make check` (the fake libraries), munged and mungekey (package munge),
# a C compiler (CC, default cc) and libcrypto.so.3.
set -uo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SN_BUILD_DIR:-$src}
runs=${SN_BENCH_RUNS:-21}
after=$build/src/warmup/nccl-warmup
before=${SN_BENCH_BEFORE:-}
fake=$build/tests/fake

die() {
	echo "fabric-auth.sh: error: $*" >&2
	exit 1
}

[ "$runs" -ge 5 ] || die "SN_BENCH_RUNS=$runs: medians need at least 5 runs"
[ -x "$after" ] || die "$after not built"
[ -e "$fake/nccl/libnccl.so.2" ] || die "no fake libraries in $fake (make check)"
[ -z "$before" ] || [ -x "$before" ] || die "SN_BENCH_BEFORE=$before is not a program"
command -v munged >/dev/null || die "munged not installed (apt-get install munge)"

tmp=$(mktemp -d /tmp/fabric-auth.XXXXXX)
inproc_pid=
# munged writes its seed file as it exits: waited for before the rm.
stop() {
	local pid
	[ -z "$inproc_pid" ] || kill "$inproc_pid"
	if [ -f "$tmp/munged.pid" ] && pid=$(cat "$tmp/munged.pid") &&
		kill "$pid" 2>/dev/null; then
		while kill -0 "$pid" 2>/dev/null; do
			sleep 0.01	# polls the condition
		done
	fi
	rm -rf "$tmp"
}
trap stop EXIT
sock=$tmp/munge.socket
mungekey -c -k "$tmp/munge.key" >/dev/null 2>&1 || die "mungekey failed"
munged -S "$sock" --key-file="$tmp/munge.key" --log-file="$tmp/munged.log" \
	--pid-file="$tmp/munged.pid" --seed-file="$tmp/munged.seed" --force ||
	die "munged failed: $(cat "$tmp/munged.log")"
n=0
until munge -n -S "$sock" 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1; do
	n=$((n + 1))
	[ $n -le 500 ] || die "munged did not answer"
	sleep 0.01	# polls the condition
done

unset CUDA_VISIBLE_DEVICES LD_PRELOAD
for v in $(env | sed -n 's/^\(NCCL_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
for v in $(env | sed -n 's/^\(FAKE_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
head -c 1024 /dev/urandom >"$tmp/slurm.key"
keyed=$("$after" --fabric-key-derive "$tmp/slurm.key" bench 1 1 0 3>&1 >/dev/null) ||
	die "the key derivation failed"
# slurmstepd on an auth/slurm node: running, libcrypto mapped, before the
# clock starts; one fresh copy of it per node and step, ready (answered on
# ack) before each step's clock.
${CC:-cc} -std=gnu11 -O2 -I"$src/src/plugin" -I"$src/src/core" \
	-o "$tmp/fabric-key-inproc" "$src/bench/fabric-key-inproc.c" \
	"$src/src/plugin/step_key.c" "$src/src/core/protocol/step_key_io.c" ||
	die "cannot build fabric-key-inproc.c"
mkfifo "$tmp/inproc" "$tmp/ack" "$tmp/key0" "$tmp/key1" "$tmp/key2" ||
	die "mkfifo failed"
exec {inproc}<>"$tmp/inproc" {ack}<>"$tmp/ack"
"$tmp/fabric-key-inproc" "$tmp/slurm.key" bench "$tmp/ack" <"$tmp/inproc" &
inproc_pid=$!
export LD_LIBRARY_PATH=$fake/cuda:$fake/nccl NCCL_SOCKET_IFNAME=lo
uid=$(id -u)	# once: the plugin forks no id(1) per step
step=0
errors=0

# node I HELPER [ARGS]: node I's helper; ARGS "key": the step key, from
# the derivation started beside the helper into its pipe, as the plugin
# does without libcrypto in slurmstepd (src/plugin/step_fabric_auth.c);
# "inproc": derived by slurmstepd's stand-in beside the helper's start.
node() {
	local i=$1 helper=$2 args
	shift 2
	args=(--mode fabric --node "n$((i + 1))" --timeout 30 --job-id $$
		--step-id "$step" --node-index "$i" --nodes 3
		--nodelist '127.0.0.[1-3]' --fabric-root 127.0.0.1
		--fabric-ports 30000-30099)
	export FAKE_CUDA_BUSIDS="0000:0$((i + 1)):00.0,0000:1$((i + 1)):00.0"
	if [ "${1:-}" = keyed ]; then	# the key derived beforehand
		"$helper" "${args[@]}" --fabric-key-fd 4 4<<<"$keyed"
		return
	elif [ "${1:-}" = inproc ]; then
		"$helper" "${args[@]}" --fabric-key-fd 4 4<"$tmp/key$i"
		return
	elif [ "${1:-}" != key ]; then
		"$helper" "${args[@]}" "$@"
		return
	fi
	"$helper" --fabric-key-derive "$tmp/slurm.key" bench $$ "$step" \
		"$uid" 3>&1 >/dev/null |
		"$helper" "${args[@]}" --fabric-key-fd 4 4<&0 0</dev/null
}

# one NAME HELPER [ARGS]: a three-node fabric warmup, sampled under NAME.
one() {
	local name=$1 helper=$2 i t0 pids=() rc=0
	shift 2
	step=$((step + 1))
	if [ "${1:-}" = inproc ]; then	# the step's slurmstepds, running
		for i in 0 1 2; do
			echo "$tmp/key$i $$ $step $uid" >&"$inproc"
		done
		for i in 0 1 2; do
			read -r -t 10 -u "$ack" _ ||
				die "fabric-key-inproc is not ready"
		done
	fi
	t0=$EPOCHREALTIME
	for i in 0 1 2; do
		node "$i" "$helper" "$@" >/dev/null 2>"$tmp/err$i" &
		pids+=("$!")
	done
	for i in 0 1 2; do
		wait "${pids[$i]}" || rc=$?
	done
	if [ "$rc" -ne 0 ]; then
		echo "fabric-auth.sh: $name failed (exit $rc): $(cat "$tmp"/err*)" >&2
		errors=$((errors + 1))
		return
	fi
	[ -z "$name" ] || awk -v n="$name" -v a="$t0" -v b="$EPOCHREALTIME" \
		'BEGIN { printf "%s\t%.4f\n", n, b - a }' >>"$tmp/samples"
}

echo "fabric-auth: 3 helpers on loopback, $runs runs each"
one "" "$after" --munge-socket "$sock"
one "" "$after" key
one "" "$after" inproc
[ -z "$before" ] || one "" "$before"
for ((r = 0; r < runs; r++)); do
	one munge "$after" --munge-socket "$sock"
	one inproc "$after" inproc
	one key "$after" key
	one keyed "$after" keyed
	[ -z "$before" ] || one before "$before"
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
	printf "%-46s %5s %9s\n", "3-node fabric warmup, first start to last exit", "runs", "median s"
	if (n["before"])
		printf "%-46s %5d %9.4f\n", "before (no authentication, NCCL_COMM_ID)", n["before"], median("before")
	printf "%-46s %5d %9.4f\n", "MUNGE (munged seals, unique id in GO)", n["munge"], median("munge")
	printf "%-46s %5d %9.4f\n", "step key derived in slurmstepd (auth/slurm)", n["inproc"], median("inproc")
	printf "%-46s %5d %9.4f\n", "step key, nccl-warmup --fabric-key-derive", n["key"], median("key")
	printf "%-46s %5d %9.4f\n", "step key, derived beforehand (HMAC seals only)", n["keyed"], median("keyed")
	printf "\nthe step key against MUNGE: %+.1f ms derived in slurmstepd (target: at most +5 ms), %+.1f ms exec path\n", (median("inproc") - median("munge")) * 1000, (median("key") - median("munge")) * 1000
	if (n["before"])
		printf "against no authentication: MUNGE %+.1f ms, key %+.1f ms\n", (median("munge") - median("before")) * 1000, (median("key") - median("before")) * 1000
}' "$tmp/samples"
[ "$errors" -eq 0 ]

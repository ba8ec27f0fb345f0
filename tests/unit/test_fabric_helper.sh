#!/bin/sh
# SPDX-License-Identifier: MIT
# nccl-warmup --mode fabric without Slurm: three helper processes on
# loopback (--fabric-root 127.0.0.1), one per "node" 127.0.0.1-3 (the node
# list names them by address, so the root's check that node I connects
# from node I's address holds), authenticated by a munged of the test's
# own or, with SN_TEST_FABRIC_AUTH=key (test_fabric_helper_key.sh; the
# default for a helper built --without-munge), by a step key on an
# inherited descriptor, against the fake libcuda/libnccl, whose NCCL really rendezvouses
# over TCP at the root's ncclGetUniqueId (tests/fake/fake_nccl_net.c).  Every scenario checks each node's exit
# status, its message and JSON, that the nodes not at fault finish within
# their deadline, and that nothing is left listening in the port range.
# Waits are on the processes (wait PID) and on ss, never on fixed sleeps.
# Run by "make check" from the build directory.
set -u

# helper, fake, the skip where they were not built, now_ms.
src=${SN_SRC_DIR:-${srcdir:-.}}
# shellcheck source=tests/unit/lib/warmup_helper.sh
. "$src/tests/unit/lib/warmup_helper.sh"
auth=${SN_TEST_FABRIC_AUTH:-munge}
ldd "$helper" 2>/dev/null | grep -q libmunge || auth=key
if [ "$auth" = munge ] &&
   { ! command -v munged >/dev/null || ! command -v mungekey >/dev/null; }; then
	echo "munged and mungekey (munge) are needed: the fabric mode authenticates with MUNGE" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi
if ! command -v ss >/dev/null; then
	echo "ss (iproute2) is needed to check for listeners" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_fabric_helper.XXXXXX") || exit 99
squatter=
cleanup() {
	[ -n "$squatter" ] && kill "$squatter" 2>/dev/null
	[ -f "$tmp/munged.pid" ] && kill "$(cat "$tmp/munged.pid")" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
unset CUDA_VISIBLE_DEVICES FAKE_CUDA_BUSIDS FAKE_CUDA_FAIL FAKE_CUDA_HANG \
	FAKE_NCCL_FAIL FAKE_NCCL_HANG FAKE_NCCL_NET FAKE_NCCL_NET_HOSTS \
	FAKE_NCCL_INIT_FAIL_HOSTS FAKE_CUDA_HANG_INIT_HOSTS LD_PRELOAD
for v in $(env | sed -n 's/^\(NCCL_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
LD_LIBRARY_PATH="$fake/cuda:$fake/nccl"
export LD_LIBRARY_PATH
host=$(hostname)
# NCCL's bootstrap (the fake's too) on loopback, where the "nodes" are.
NCCL_SOCKET_IFNAME=lo
export NCCL_SOCKET_IFNAME

# The step key (as the plugin's root derivation writes it), or the test's
# own munged: ready when a credential round-trips.
head -c 64 /dev/urandom >"$tmp/site.key"
"$helper" --fabric-key-derive "$tmp/site.key" test 1 1 0 3>"$tmp/key" ||
	exit 99
sock=$tmp/munge.socket
if [ "$auth" = key ]; then
	set -- --fabric-key-fd 4
else
	set -- --munge-socket "$sock"
fi
auth_opts="$*"
[ "$auth" = key ] || {
mungekey -c -k "$tmp/munge.key" >/dev/null 2>&1 || exit 99
munged -S "$sock" --key-file="$tmp/munge.key" --log-file="$tmp/munged.log" \
	--pid-file="$tmp/munged.pid" --seed-file="$tmp/munged.seed" --force \
	2>>"$tmp/munged.log" || { cat "$tmp/munged.log" >&2; exit 99; }
n=0
until munge -n -S "$sock" 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1; do
	n=$((n + 1))
	[ $n -le 500 ] || { echo "munged did not answer on $sock" >&2; exit 99; }
	sleep 0.01	# polls the condition; no fixed wait
done
}

# A port range of this test's own, derived from its PID so that parallel
# make check runs do not meet; ports go lo..lo+99, below Linux's
# ephemeral ports (32768-60999), which the clients' own sockets take, and
# below 28000: the fake NCCL's RAS listens on 28028 (NCCL's default) in
# whichever helper of a parallel test has a communicator, and the
# plugin's per-step RAS ports start at 28100 (config/ras.h).
lo=$(( 20000 + ($$ % 80) * 100 ))
hi=$(( lo + 99 ))
job=$(( $$ % 100000 ))
step=0

listeners() {
	ss -Htln "( sport >= :$lo and sport <= :$hi )" 2>/dev/null
}

# node I NAME [ENV=VALUE ...] -- ARGS: starts one node's helper (2 GPUs).
node() {
	i=$1; nname=$2; shift 2
	envs=
	while [ "$1" != -- ]; do envs="$envs $1"; shift; done
	shift
	# shellcheck disable=SC2086
	env $envs FAKE_CUDA_BUSIDS="0000:0$((i + 1)):00.0,0000:1$((i + 1)):00.0" \
		"$helper" --mode fabric --json --node "$nname" \
		--job-id "$job" --step-id "$step" --node-index "$i" \
		--nodes "${nodes:-3}" --nodelist "${nodelist:-127.0.0.[1-3]}" \
		--fabric-root 127.0.0.1 --fabric-ports "$lo-$hi" \
		$auth_opts "$@" 4<"${keyfile:-$tmp/key}" \
		>"$tmp/out$i" 2>"$tmp/err$i" &
	eval "pid$i=\$!"
}

# finish NAME: waits for every node started; rc0.., out0.., err0.., ms0..
finish() {
	name=$1
	for i in 0 1 2; do
		eval "p=\${pid$i:-}"
		[ -n "$p" ] || continue
		wait "$p"
		eval "rc$i=\$?"
		elapsed=$(( $(now_ms) - start ))
		eval "ms$i=$elapsed"
		eval "pid$i="
	done
	# Every helper has exited: whatever it listened on must be closed.
	if listeners | grep -v ":${squat_port:-0} " | grep -q .; then
		echo "FAIL [$name]: still listening after the helpers exited:" >&2
		listeners >&2
		failures=$((failures + 1))
	fi
	step=$((step + 1))
}

fail() {
	echo "FAIL [$name] node $1: $2" >&2
	eval "echo \"  exit status: \$rc$1\"" >&2
	sed 's/^/  stderr: /' "$tmp/err$1" >&2
	sed 's/^/  stdout: /' "$tmp/out$1" >&2
	failures=$((failures + 1))
}
expect_rc() { eval "[ \"\$rc$1\" -eq $2 ]" || fail "$1" "expected exit status $2"; }
expect_err() { grep -qF -- "$2" "$tmp/err$1" || fail "$1" "stderr lacks: $2"; }
expect_json() { grep -qF -- "$2" "$tmp/out$1" || fail "$1" "JSON lacks: $2"; }
expect_within() {
	eval "[ \"\$ms$1\" -le $2 ]" || fail "$1" "took more than $2 ms"
}
# The port of NCCL's bootstrap root (from the root's unique id).
comm_port() {
	sed -n 's/.*"comm_id":"127\.0\.0\.1:\([0-9]*\)".*/\1/p' "$tmp/out$1"
}

# --- three nodes, 2 GPUs each: one communicator of 6 ranks ---------------
# Each under tests/fake/env_guard.c: fabric mode sets NCCL's log variables
# before NVML's thread starts (a setenv() beside a getenv() can crash).
start=$(now_ms)
# shellcheck disable=SC2086
node 0 n1 $guard_env -- --timeout 20
# shellcheck disable=SC2086
node 1 n2 $guard_env -- --timeout 20
# shellcheck disable=SC2086
node 2 n3 $guard_env -- --timeout 20
finish three-nodes
port=$(comm_port 0)
[ -n "$port" ] || fail 0 "no comm_id (NCCL's bootstrap root from the unique id)"
coord=$(sed -n 's/.*"coordinator":"127\.0\.0\.1:\([0-9]*\)".*/\1/p' "$tmp/out0")
if [ -z "$coord" ] || [ "$coord" -lt "$lo" ] || [ "$coord" -gt "$hi" ]; then
	fail 0 "coordinator port '$coord' not in $lo-$hi"
fi
for i in 0 1 2; do
	expect_rc $i 0
	expect_json $i "\"mode\":\"fabric\",\"status\":\"ok\""
	expect_json $i "\"transport\":\"NET/Socket\""
	# Every node uses the root's id: one bootstrap root, NCCL's own.
	expect_json $i "\"fabric\":{\"nodes\":3,\"node_index\":$i,\"ranks\":6,\"rank_base\":$((2 * i)),\"comm_id\":\"127.0.0.1:$port\",\"coordinator\":\"127.0.0.1:$coord\",\"refused_connections\":0,\"blame_index\":null,\"blame_node\":null}"
	# every collective verified across the nodes
	expect_json $i '"collectives":{"allreduce":'
	expect_json $i '"sendrecv":'
	expect_err $i "ranks $((2 * i))-$((2 * i + 1)) of 6 over 3 nodes, network NET/Socket"
done

# --- a taken coordinator port: the next candidate -------------------------
# The first candidate is held by a helper of the same user for a step of
# two nodes, whose second never comes: it answers the members with a
# sealed REFUSE (node count), and they find their root one port later.
# shellcheck disable=SC2086
FAKE_CUDA_BUSIDS=0000:0a:00.0 "$helper" --mode fabric --json --node s1 \
	--job-id "$job" --step-id "$step" --node-index 0 --nodes 2 \
	--nodelist '127.0.0.[1-2]' --fabric-root 127.0.0.1 \
	--fabric-ports "$lo-$hi" $auth_opts 4<"$tmp/key" \
	--timeout 30 >"$tmp/squat" 2>&1 &
squatter=$!
n=0
until squat_port=$(listeners | sed -n 's/.*127\.0\.0\.1:\([0-9]*\) .*/\1/p' | head -n1)
      [ -n "$squat_port" ]; do
	n=$((n + 1))
	if [ $n -gt 500 ] || ! kill -0 "$squatter" 2>/dev/null; then
		echo "FAIL [taken-port]: the squatter never listened" >&2
		failures=$((failures + 1)); break
	fi
	sleep 0.01	# polls the condition; no fixed wait
done
start=$(now_ms)
node 0 n1 -- --timeout 20
node 1 n2 -- --timeout 20
node 2 n3 -- --timeout 20
finish taken-port
kill "$squatter" 2>/dev/null; wait "$squatter" 2>/dev/null; squatter=
for i in 0 1 2; do
	expect_rc $i 0
	expect_json $i '"status":"ok"'
	# Past the squatter's port; the members heard its sealed REFUSE.
	expect_json $i '"coordinator":"127.0.0.1:'
	grep -qF "\"coordinator\":\"127.0.0.1:$squat_port\"" "$tmp/out$i" &&
		fail $i "joined the squatter's port $squat_port"
done
squat_port=
[ -z "$(listeners)" ] || { echo "FAIL [taken-port]: left listening" >&2; failures=$((failures + 1)); }

# --- no munged, or no key: the node says so, as nobody's GPU or NCCL fault -
start=$(now_ms)
keyfile=/dev/null
node 0 n1 -- --timeout 4 --munge-socket "$tmp/no-such.socket"
keyfile=
finish no-munge
expect_rc 0 12
if [ "$auth" = key ]; then
	expect_err 0 "no step key on descriptor 4"
else
	expect_err 0 "MUNGE cannot make a credential"
fi
expect_json 0 '"status":"fabric_setup"'

# --- a node that never joins: the others name it, within their deadline ---
start=$(now_ms)
node 0 n1 -- --timeout 4
node 1 n2 -- --timeout 4
finish never-joins
for i in 0 1; do
	expect_rc $i 10
	expect_err $i "fabric warmup: node 127.0.0.3 (index 2 of 3) never joined within"
	expect_json $i '"status":"peer_failed"'
	expect_json $i '"blame_index":2,"blame_node":"127.0.0.3"'
	expect_within $i 4500
done

# --- a node whose driver hangs (per host, as in the netns cluster) --------
start=$(now_ms)
node 0 n1 -- --timeout 4
node 1 n2 -- --timeout 4
node 2 n3 FAKE_CUDA_HANG_INIT_HOSTS="other,$host" -- --timeout 4
finish hang-init
expect_rc 2 8
expect_err 2 "cuInit"
for i in 0 1; do
	expect_rc $i 10
	expect_err $i "node 127.0.0.3 (index 2 of 3) never joined"
	expect_within $i 4500
done

# --- NCCL init fails on one node: it keeps its code, the others name it ---
start=$(now_ms)
node 0 n1 -- --timeout 20
node 1 n2 FAKE_NCCL_INIT_FAIL_HOSTS="$host" -- --timeout 20
node 2 n3 -- --timeout 20
finish init-fails
expect_rc 1 5
expect_err 1 "FAKE_NCCL_INIT_FAIL_HOSTS"
expect_json 1 '"blame_index":1,"blame_node":"n2"'
for i in 0 2; do
	expect_rc $i 10
	expect_err $i "fabric warmup: node 127.0.0.2 (index 1 of 3) failed: NCCL communicator init"
	expect_json $i '"blame_index":1,"blame_node":"127.0.0.2"'
	# stopped by the verdict, not by their own deadline
	expect_within $i 10000
done

# --- a collective fails on the last node ----------------------------------
start=$(now_ms)
node 0 n1 -- --timeout 20
node 1 n2 -- --timeout 20
node 2 n3 FAKE_NCCL_FAIL=collectives -- --timeout 20
finish collective-fails
expect_rc 2 5
expect_json 2 '"failed_op":"broadcast"'
for i in 0 1; do
	expect_rc $i 10
	expect_err $i "fabric warmup: node 127.0.0.3 (index 2 of 3) failed: NCCL broadcast failed"
	expect_within $i 10000
done

# --- transport policy: sockets refused; IB and a net plugin pass ----------
start=$(now_ms)
node 0 n1 -- --timeout 20 --fabric-transport no-socket
node 1 n2 -- --timeout 20 --fabric-transport no-socket
node 2 n3 -- --timeout 20 --fabric-transport no-socket
finish no-socket
n11=0
for i in 0 1 2; do
	r=$(eval "echo \$rc$i")
	case $r in
	11) n11=$((n11 + 1)); expect_err $i "NCCL chose NET/Socket (TCP) between the nodes, which fabric_transport=no-socket refuses";;
	10) expect_err $i "failed: NCCL chose NET/Socket";;
	*) fail $i "expected exit status 11 (or 10 naming the node that saw it)";;
	esac
	expect_json $i '"transport":"NET/Socket"'
done
[ "$n11" -ge 1 ] || fail 0 "no node exited 11"

start=$(now_ms)
node 0 n1 FAKE_NCCL_NET=IB -- --timeout 20 --fabric-transport no-socket
node 1 n2 FAKE_NCCL_NET=IB -- --timeout 20 --fabric-transport no-socket
node 2 n3 FAKE_NCCL_NET_HOSTS="other:IB,$host:Libfabric" -- --timeout 20 --fabric-transport no-socket
finish ib-and-plugin
expect_rc 0 0; expect_json 0 '"transport":"NET/IB"'
expect_rc 1 0
expect_rc 2 0; expect_json 2 '"transport":"NET/Plugin Libfabric (v10)"'

# --- the inter-node busbw floor: an unreachable one fails every node -----
start=$(now_ms)
node 0 n1 -- --timeout 20 --min-busbw 100000 --bytes 1M
node 1 n2 -- --timeout 20 --min-busbw 100000 --bytes 1M
node 2 n3 -- --timeout 20 --min-busbw 100000 --bytes 1M
finish floor
n7=0
for i in 0 1 2; do
	r=$(eval "echo \$rc$i")
	case $r in
	7) n7=$((n7 + 1))
	   expect_err $i "inter-node all-reduce bus bandwidth "
	   expect_err $i " is below the floor of 100000 GB/s (1048576 bytes, 6 GPUs)"
	   expect_json $i '"busbw_gbps":';;
	10) expect_err $i "failed: inter-node all-reduce bus bandwidth ";;
	*) fail $i "expected exit status 7 (or 10 naming the node that measured it)";;
	esac
done
[ "$n7" -ge 1 ] || fail 0 "no node exited 7"

# --- one node: comm over its GPUs, no coordination, loopback allowed ------
start=$(now_ms)
nodes=1; nodelist=n1
node 0 n1 -- --timeout 20
finish one-node
nodes=3; nodelist='127.0.0.[1-3]'
expect_rc 0 0
expect_json 0 '"fabric":{"nodes":1,"node_index":0,"ranks":2,"rank_base":0,"comm_id":null,"coordinator":null,"refused_connections":0,"blame_index":null,"blame_node":null}'

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed" >&2
	exit 1
fi
echo "all fabric helper scenarios passed"

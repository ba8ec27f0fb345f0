# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# The fabric warmup on a node with ONE GPU (issue 20), sourced by
# run-gpu-tests.sh: two nccl-warmup --mode fabric processes as the job
# user, on loopback, as node index 0 (127.0.0.1) and 1 (127.0.0.2) of a
# two-node step, both on the one GPU.  Distinct NCCL_HOSTID values make
# real NCCL see two hosts (no "Duplicate GPU detected": its duplicate
# check is per host hash), so it builds one communicator of 2 ranks over
# NET/Socket from the unique id that node 0's ncclGetUniqueId made and the
# MUNGE-authenticated coordination handed to node 1.  A stranger (nobody)
# hammers the coordinator's ports all the while
# (tests/integration/helpers/fabric-stranger.pl): it must be refused, and
# the step pass.  Where two GPUs exist, fabric-gpu.sh runs two Slurm nodes.

fabric1_ports=31500-31507

# fabric1_listening: a LISTEN socket on 127.0.0.1 in $fabric1_ports
# (/proc/net/tcp: the node has no ss).
fabric1_listening() {
	local lo=${fabric1_ports%-*} hi=${fabric1_ports#*-} addr st
	while read -r _ addr _ st _; do
		if [ "$st" = 0A ] && [ "${addr%%:*}" = 0100007F ] &&
			((16#${addr##*:} >= lo && 16#${addr##*:} <= hi)); then
			return 0
		fi
	done </proc/net/tcp
	return 1
}

# fabric1_wait WHAT COMMAND...: until COMMAND succeeds, at most 30 s.
fabric1_wait() {
	local what=$1 i
	shift
	for ((i = 0; i < 600; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	echo "  gave up waiting for $what"
	return 1
}

# fabric1_helper INDEX: one node's helper, as the job user, in the
# background; its JSON in $work/fabric1.INDEX.json.
fabric1_helper() {
	local i=$1
	timeout -k 5 60 runuser -u "$SN_USER" -- env PATH="$PATH" \
		NCCL_HOSTID="sn-fabric-one-gpu-$i" NCCL_SOCKET_IFNAME=lo \
		NCCL_NVLS_ENABLE=0 \
		${LD_LIBRARY_PATH:+LD_LIBRARY_PATH="$LD_LIBRARY_PATH"} \
		"$(sn_helper_path)" --mode fabric --json --node "n$((i + 1))" \
		--timeout 40 --job-id 4242 --step-id 0 --node-index "$i" \
		--nodes 2 --nodelist '127.0.0.[1-2]' --fabric-root 127.0.0.1 \
		--fabric-ports "$fabric1_ports" \
		--munge-socket "$SN_CLUSTER_DIR/munge/munge.socket" \
		>"$work/fabric1.$i.json" 2>"$work/fabric1.$i.err" &
}

fabric1_json_has() { grep -qF -- "$2" "$work/fabric1.$1.json"; }

t_fabric_one_gpu() {
	local p0 p1 rc0 rc1 stranger refused
	rm -rf "$work"/fabric1.* "$work/stranger"
	mkdir -p "$work/stranger" && chmod 0777 "$work/stranger"
	# In this order, each step waiting on the one before (node 1 would
	# otherwise join within milliseconds and the coordinator stop
	# listening before the stranger tried it): node 0's coordinator
	# listens, the stranger has swept every port once (its .started
	# file), then node 1 starts.
	fabric1_helper 0; p0=$!
	fabric1_wait "node 0's coordinator" fabric1_listening
	runuser -u nobody -- env PATH="$PATH" \
		perl "$src/tests/integration/helpers/fabric-stranger.pl" \
		hello 127.0.0.1 "$fabric1_ports" 4242 0 "$work/stranger/stats" \
		"$SN_CLUSTER_DIR/munge/munge.socket" \
		</dev/null >"$work/stranger/log" 2>&1 &
	stranger=$!
	fabric1_wait "the stranger's first sweep" test -e "$work/stranger/stats.started"
	fabric1_helper 1; p1=$!
	wait "$p0"; rc0=$?
	wait "$p1"; rc1=$?
	kill -TERM "$stranger" 2>/dev/null
	wait "$stranger" 2>/dev/null
	sed 's/^/  n1 err| /' "$work/fabric1.0.err"
	sed 's/^/  n2 err| /' "$work/fabric1.1.err"
	want "node 0 exits 0 (exit $rc0)" test "$rc0" -eq 0
	want "node 1 exits 0 (exit $rc1)" test "$rc1" -eq 0
	want "one communicator of 2 ranks: node 0 rank 0" \
		fabric1_json_has 0 '"ranks":2,"rank_base":0'
	want "node 1 rank 1" fabric1_json_has 1 '"ranks":2,"rank_base":1'
	want "NCCL's bootstrap root from node 0's unique id on loopback" \
		fabric1_json_has 1 '"comm_id":"127.0.0.1:'
	want "NET/Socket between the two host hashes" \
		fabric1_json_has 0 '"transport":"NET/Socket"'
	want "every collective verified" fabric1_json_has 0 '"sendrecv":'
	refused=$(sed -nE 's/.*"refused_connections":([0-9]+).*/\1/p' "$work/fabric1.0.json")
	echo "  node 0 refused ${refused:-?} connections; stranger: $(cat "$work/stranger/stats" "$work/stranger/log" 2>/dev/null)"
	want "node 0 refused the stranger" test "${refused:-0}" -ge 1
	want "the stranger heard nothing" \
		grep -qE '^connected=[1-9][0-9]* answered=0$' "$work/stranger/stats"
	want "GPUs idle again" gpus_idle_now
}

run_fabric_one_gpu() {
	[ "${SN_GPU_FABRIC:-1}" = 1 ] || return 0
	phase "fabric on one GPU (two helpers on loopback, two NCCL host ids)"
	run_test fabric-one-gpu-authenticated t_fabric_one_gpu 70
}

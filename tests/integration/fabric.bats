#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# --nccl-warmup=fabric on three slurmd nodes, each in its own network
# namespace: one communicator across the step's nodes, built by the fake
# NCCL's real TCP rendezvous at NCCL_COMM_ID on n1's namespace address
# (tests/fake/README.md), and every fault blamed on the node at fault: a
# node whose helper never joins, a node whose NCCL init fails, a taken
# port, every port taken.  Concurrent fabric steps, a one-node step, and
# nothing left listening or running afterwards.

SN_NODES=3
load common

setup_file() { sn_file_setup; }
teardown_file() { sn_file_teardown; }
setup() {
	sn_test_setup
	sn_require_warmup
	MARKER="$SN_CLUSTER_DIR/tmp/fabric-ran-$BATS_TEST_NUMBER"
	rm -f "$MARKER"
	LISTENER_PID=
	export SN_TIMEOUT=60
}
teardown() {
	# Only the listener this test started (its pid), never by name.
	[ -z "$LISTENER_PID" ] || kill "$LISTENER_PID" 2>/dev/null || :
}

# The helper's JSON of the last warmup of JOB on NODE (the plugin logs
# every run to slurmd's log with the helper's result).
warmup_json() {
	local node=$1 job=$2
	grep -aE "job $job step [0-9]+ on $node: nccl-warmup (passed|failed)" \
		"$(sn_slurmd_log "$node")" | tail -n1 |
		sed -E 's/^.*nccl-warmup (passed|failed) in [0-9]+ ms: //'
}

# Asserts the JSON of JOB on NODE has every "key":value given.
assert_json() {
	local node=$1 job=$2 json kv
	shift 2
	json=$(warmup_json "$node" "$job")
	for kv in "$@"; do
		grep -qF "$kv" <<<"$json" ||
			sn_fail "$node: no $kv in the helper's result: $json" ||
			return 1
	done
}

# Murmur3's finaliser and the port of attempt A for JOB.STEP in LO-HI:
# src/core/fabric_addr.c's sn_fabric_port, to know the first candidate.
mix32() {
	local h=$1
	h=$(((h ^ (h >> 16)) & 0xffffffff))
	h=$(((h * 0x85ebca6b) & 0xffffffff))
	h=$(((h ^ (h >> 13)) & 0xffffffff))
	h=$(((h * 0xc2b2ae35) & 0xffffffff))
	echo $(((h ^ (h >> 16)) & 0xffffffff))
}
fabric_port() {
	local lo=$1 hi=$2 job=$3 step=$4 attempt=$5
	echo $((lo + ($(mix32 "$job") + step + attempt) % (hi - lo + 1)))
}

# Listens on PORT... inside n1's network namespace until the test ends;
# returns once every socket is bound (the listener writes a file).
occupy_on_n1() {
	local ready="$SN_CLUSTER_DIR/tmp/listener-$BATS_TEST_NUMBER"
	rm -f "$ready"
	# shellcheck disable=SC2016
	nsenter --net="/run/netns/$(sn__netns_name 1)" perl -MIO::Socket::INET -e '
		my $ready = shift;
		my @s = map { IO::Socket::INET->new(LocalAddr => "0.0.0.0",
			LocalPort => $_, Listen => 5, ReuseAddr => 1)
			or die "listen $_: $!\n" } @ARGV;
		open(my $f, ">", $ready) or die; close($f);
		sleep;' "$ready" "$@" </dev/null >/dev/null 2>&1 3>&- &
	LISTENER_PID=$!
	sn__wait_for 100 test -e "$ready" ||
		sn_fail "the listener on n1 ($*) did not start"
}

# Nothing of the warmup listens in any node's namespace, and no helper
# runs: the plugin reaped each one before the tasks started.
assert_nothing_left() {
	local lo=$1 hi=$2 i ns left
	for i in 1 2 3; do
		ns=/run/netns/$(sn__netns_name "$i")
		left=$(nsenter --net="$ns" ss -Htlnp |
			awk -v lo="$lo" -v hi="$hi" -v own="${LISTENER_PID:-x}" '
				{ port = $4; sub(/.*:/, "", port) }
				$0 ~ "pid=" own "," { next }
				(port >= lo && port <= hi) || /nccl-warmup/')
		[ -z "$left" ] || sn_fail "n$i still listens: $left" || return 1
	done
	[ -z "$(sn_helper_procs)" ] ||
		sn_fail "nccl-warmup still running: $(sn_helper_procs)"
}

# srun -N3 --gres=gpu:2 --nccl-warmup=fabric, each task touching $MARKER
# and printing its job id.
fabric_srun() {
	sn_srun -N3 --gres=gpu:2 --nccl-warmup=fabric "$@" \
		sh -c "touch $MARKER; echo \$SLURM_JOB_ID"
}

@test "fabric: srun -N3 --gres=gpu:2 builds one communicator of 6 ranks across the namespaces" {
	local job port
	sn_fake_env ok
	run --separate-stderr fabric_srun
	sn_assert_status 0
	[ "$(sn_count_msgs 'warmup failed')" -eq 0 ] || sn_fail "a node failed"
	[ -e "$MARKER" ] || sn_fail "the tasks did not run"
	job=$(head -n1 <<<"$output")
	[ "$(sn_fake_loads)" -eq 3 ] ||
		sn_fail "nccl-warmup ran $(sn_fake_loads) times, expected 3"
	# Rank = node index x 2 + local index; the bootstrap root on n1's
	# namespace address (not loopback), at a port of the default range;
	# the fake NCCL's INFO log said "Using network Socket".
	assert_json n1 "$job" '"mode":"fabric"' '"nodes":3' '"node_index":0' \
		'"ranks":6' '"rank_base":0' "\"comm_id\":\"$SN_NET_PREFIX.11:" \
		'"transport":"NET/Socket"'
	assert_json n2 "$job" '"node_index":1' '"ranks":6' '"rank_base":2' \
		"\"comm_id\":\"$SN_NET_PREFIX.11:" '"transport":"NET/Socket"'
	assert_json n3 "$job" '"node_index":2' '"ranks":6' '"rank_base":4' \
		"\"comm_id\":\"$SN_NET_PREFIX.11:" '"transport":"NET/Socket"'
	port=$(warmup_json n3 "$job" | sed -nE 's/.*"comm_id":"[0-9.]+:([0-9]+)".*/\1/p')
	[ -n "$port" ] && [ "$port" -ge 29400 ] && [ "$port" -le 29499 ] ||
		sn_fail "comm_id port '$port' outside fabric_ports 29400-29499"
	assert_nothing_left 29400 29499
}

@test "fabric: a one-node step equals comm (verbose: one summary)" {
	local job
	sn_fake_env ok
	run --separate-stderr sn_srun -N1 --gres=gpu:2 \
		--nccl-warmup=fabric,verbose printenv SLURM_JOB_ID
	sn_assert_status 0
	[ "$(sn_count_msgs 'warmup ok')" -eq 1 ] ||
		sn_fail "expected one summary line"
	job=$(head -n1 <<<"$output")
	assert_json n1 "$job" '"mode":"fabric"' '"nodes":1' '"ranks":2' \
		'"rank_base":0' '"status":"ok"'
}

@test "fabric: a node whose helper never joins fails the step, n1 and n3 name n2" {
	sn_plugstack_set warmup_timeout=8
	sn_fake_env ok
	export FAKE_CUDA_HANG_INIT_HOSTS=n2
	run --separate-stderr fabric_srun
	sn_assert_failed
	[ ! -e "$MARKER" ] || sn_fail "the tasks ran despite the failed warmup"
	sn_assert_msg 'warmup failed on node n1 .*node n2'
	sn_assert_msg 'warmup failed on node n3 .*node n2'
	sn_assert_msg 'warmup failed on node n2 '
	assert_nothing_left 29400 29499
}

@test "fabric: a node whose NCCL init fails is blamed by the others and in the fleet record" {
	local rec="$SN_CLUSTER_DIR/tmp/fabric-records-$BATS_TEST_NUMBER"
	rm -rf "$rec"
	mkdir -p "$rec"
	sn_plugstack_set "record_file=$rec/%n.jsonl"
	sn_fake_env ok
	export FAKE_NCCL_INIT_FAIL_HOSTS=n3
	run --separate-stderr fabric_srun
	sn_assert_failed
	[ ! -e "$MARKER" ] || sn_fail "the tasks ran despite the failed warmup"
	sn_assert_msg 'warmup failed on node n1 .*node n3'
	sn_assert_msg 'warmup failed on node n2 .*node n3'
	sn_assert_msg 'warmup failed on node n3 .*NCCL'
	# The others' records: another node's fault, naming it; n3's: its own.
	grep -q '"class":"peer_failed".*"blame_node":"n3"' "$rec/n1.jsonl" ||
		sn_fail "n1's record: $(cat "$rec/n1.jsonl")"
	grep -q '"class":"peer_failed".*"blame_node":"n3"' "$rec/n2.jsonl" ||
		sn_fail "n2's record: $(cat "$rec/n2.jsonl")"
	grep -q '"class":"nccl_error"' "$rec/n3.jsonl" ||
		sn_fail "n3's record: $(cat "$rec/n3.jsonl")"
	assert_nothing_left 29400 29499
}

@test "fabric: a taken port on n1 is skipped, the step still passes" {
	local lo=31000 hi=31007 job taken port
	sn_plugstack_set "fabric_ports=$lo-$hi"
	sn_fake_env ok
	# An allocation first, to know the job id and so the step's first
	# candidate port (its first step is step 0).
	run --separate-stderr sn_salloc -N3 --gres=gpu:2 --no-shell
	sn_assert_status 0
	job=$(sed -nE 's/.*Granted job allocation ([0-9]+).*/\1/p' <<<"$stderr$output" | head -n1)
	[ -n "$job" ] || sn_fail "no job id from salloc"
	taken=$(fabric_port "$lo" "$hi" "$job" 0 0)
	occupy_on_n1 "$taken"
	run --separate-stderr sn_srun --jobid="$job" -N3 --gres=gpu:2 \
		--nccl-warmup=fabric printenv SLURM_STEP_ID
	scancel "$job"
	sn_assert_status 0
	[ "$(sort -u <<<"$output")" = 0 ] || sn_fail "not step 0: $output"
	port=$(warmup_json n2 "$job" | sed -nE 's/.*"comm_id":"[0-9.]+:([0-9]+)".*/\1/p')
	[ -n "$port" ] && [ "$port" -ge "$lo" ] && [ "$port" -le "$hi" ] &&
		[ "$port" -ne "$taken" ] ||
		sn_fail "comm_id port '$port': expected one of $lo-$hi but $taken"
	assert_nothing_left "$lo" "$hi"
}

@test "fabric: every port of fabric_ports taken on n1 fails the step, saying so" {
	local lo=31010 hi=31013
	sn_plugstack_set "fabric_ports=$lo-$hi" warmup_timeout=8
	sn_fake_env ok
	occupy_on_n1 $(seq "$lo" "$hi")
	run --separate-stderr fabric_srun
	sn_assert_failed
	[ ! -e "$MARKER" ] || sn_fail "the tasks ran despite the failed warmup"
	# n1 says which ports it could not have; the others name n1, the
	# node they could not reach.
	sn_assert_msg "warmup failed on node n1 .*($lo-$hi|fabric_ports)"
	sn_assert_msg 'warmup failed on node n2 .*n1'
	sn_assert_msg 'warmup failed on node n3 .*n1'
	assert_nothing_left "$lo" "$hi"
}

@test "fabric: fabric_min_busbw= is the inter-node floor: below it the step fails on every node" {
	local node
	# Far above what the fake NCCL's TCP collectives reach on any machine
	# (a floor that passes would make this a timed test).
	sn_plugstack_set fabric_min_busbw=100000
	sn_fake_env ok
	run --separate-stderr fabric_srun
	sn_assert_failed
	[ ! -e "$MARKER" ] || sn_fail "the tasks ran despite the failed warmup"
	# Every node says so: the bandwidth it measured, or the node whose
	# measurement failed first.
	for node in n1 n2 n3; do
		sn_assert_msg "warmup failed on node $node .*inter-node .*bandwidth .* below the floor of 100000" ||
			return 1
	done
	assert_nothing_left 29400 29499
}

@test "fabric: two fabric steps at once both pass" {
	local a b
	sn_fake_env ok
	fabric_srun >"$MARKER.a" 2>&1 3>&- &
	a=$!
	fabric_srun >"$MARKER.b" 2>&1 3>&- &
	b=$!
	wait "$a" || sn_fail "first step failed: $(cat "$MARKER.a")"
	wait "$b" || sn_fail "second step failed: $(cat "$MARKER.b")"
	[ "$(grep -c '^[0-9]' "$MARKER.a")" -eq 3 ] &&
		[ "$(grep -c '^[0-9]' "$MARKER.b")" -eq 3 ] ||
		sn_fail "tasks: $(cat "$MARKER.a" "$MARKER.b")"
	assert_nothing_left 29400 29499
}

@test "fabric: plugstack.conf fabric_ports= and fabric_transport= are checked, naming the key" {
	sn_plugstack_set fabric_ports=80-90
	run --separate-stderr sn_srun -N1 true
	sn_assert_failed
	sn_assert_msg 'fabric_ports=80-90.*1024-65535'
	sn_plugstack_set fabric_transport=ib
	run --separate-stderr sn_srun -N1 true
	sn_assert_failed
	sn_assert_msg 'fabric_transport=ib.*no-socket'
}

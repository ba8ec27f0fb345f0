#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# --nccl-warmup=fabric on three slurmd nodes, each in its own network
# namespace: one communicator across the step's nodes, built by the fake
# NCCL's real TCP rendezvous at the bootstrap root that n1's
# ncclGetUniqueId opened on n1's namespace address (tests/fake/README.md),
# and every fault blamed on the node at fault: a
# node whose helper never joins, a node whose NCCL init fails, a taken
# port, every port taken.  Concurrent fabric steps, a one-node step, the
# step key on a MUNGE cluster (fabric_auth=key: derived by an exec'd
# nccl-warmup, slurmstepd has no libcrypto), and nothing left listening or
# running afterwards.

SN_NODES=3
load common
load helpers/fabric

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
	# Rank = node index x 2 + local index; NCCL's bootstrap root (from
	# n1's ncclGetUniqueId) on n1's namespace address, not loopback; the
	# coordinator at a port of the default range, nobody refused; the
	# fake NCCL's INFO log said "Using network Socket".
	assert_json n1 "$job" '"mode":"fabric"' '"nodes":3' '"node_index":0' \
		'"ranks":6' '"rank_base":0' "\"comm_id\":\"$SN_NET_PREFIX.11:" \
		'"transport":"NET/Socket"' '"refused_connections":0'
	assert_json n2 "$job" '"node_index":1' '"ranks":6' '"rank_base":2' \
		"\"comm_id\":\"$SN_NET_PREFIX.11:" '"transport":"NET/Socket"'
	assert_json n3 "$job" '"node_index":2' '"ranks":6' '"rank_base":4' \
		"\"comm_id\":\"$SN_NET_PREFIX.11:" '"transport":"NET/Socket"'
	port=$(warmup_json n3 "$job" | sed -nE 's/.*"coordinator":"[0-9.]+:([0-9]+)".*/\1/p')
	[ -n "$port" ] && [ "$port" -ge 29400 ] && [ "$port" -le 29499 ] ||
		sn_fail "coordinator port '$port' outside fabric_ports 29400-29499"
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

@test "fabric: fabric_auth=key under MUNGE: the key by nccl-warmup --fabric-key-derive (no libcrypto in slurmstepd), the step passes" {
	local job n key=$SN_CLUSTER_DIR/etc/fabric.key
	head -c 64 /dev/urandom >"$key" && chmod 0600 "$key"
	sn_plugstack_set fabric_auth=key "fabric_key=$key"
	sn_fake_env ok
	run --separate-stderr fabric_srun
	sn_plugstack_reset
	sn_assert_status 0
	job=$(head -n1 <<<"$output")
	for n in n1 n2 n3; do
		grep -q "fabric warmup, job $job step [0-9]*: the step key derived by nccl-warmup --fabric-key-derive (not in slurmstepd: libcrypto.so.3 is not mapped" \
			"$(sn_slurmd_log $n)" || sn_fail "$n: not the exec path"
	done
	assert_json n1 "$job" '"status":"ok"' '"nodes":3' '"refused_connections":0'
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
	local n rec="$SN_CLUSTER_DIR/tmp/fabric-records-$BATS_TEST_NUMBER"
	rm -rf "$rec"
	mkdir -p "$rec"
	sn_plugstack_set "record_file=$rec/%n.jsonl"
	sn_fake_env ok
	export FAKE_NCCL_INIT_FAIL_HOSTS=n3
	# The job's NCCL_DEBUG (no NCCL_DEBUG_FILE): each node's NCCL log,
	# once, under its own header, as in comm mode (warmup.bats).
	NCCL_DEBUG=INFO run --separate-stderr fabric_srun
	sn_assert_failed
	[ ! -e "$MARKER" ] || sn_fail "the tasks ran despite the failed warmup"
	sn_assert_msg 'warmup failed on node n1 .*node n3'
	sn_assert_msg 'warmup failed on node n2 .*node n3'
	sn_assert_msg 'warmup failed on node n3 .*NCCL'
	for n in n1 n2 n3; do
		[ "$(sn_count_msgs "NCCL's log of the warmup on node $n \(NCCL_DEBUG=INFO, its stdout\), the last [0-9]+ lines:$")" -eq 1 ] ||
			sn_fail "not one NCCL log header for $n"
	done
	sn_assert_msg 'spank-nccl: \| n[123]:[0-9]+:[0-9]+ \[[0-9]\] NCCL INFO '
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
	port=$(warmup_json n2 "$job" | sed -nE 's/.*"coordinator":"[0-9.]+:([0-9]+)".*/\1/p')
	[ -n "$port" ] && [ "$port" -ge "$lo" ] && [ "$port" -le "$hi" ] &&
		[ "$port" -ne "$taken" ] ||
		sn_fail "coordinator port '$port': expected one of $lo-$hi but $taken"
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
	# n1 says which ports it could not have (not its GPUs' or NCCL's
	# fault: fabric_setup); the others name n1, the node they could not
	# reach.
	sn_assert_msg "warmup failed on node n1 .*ports $lo-$hi on n1 are all taken by other processes"
	grep -a 'on n1: nccl-warmup failed' "$(sn_slurmd_log n1)" | tail -n1 |
		grep -qF '"status":"fabric_setup"' ||
		sn_fail "n1's result is not fabric_setup"
	# Whose fault: the ports' (the environment's), never the node's.
	grep -a 'on n1: nccl-warmup failed' "$(sn_slurmd_log n1)" | tail -n1 |
		grep -qF '"fault":"environment"' ||
		sn_fail "n1's squatted port is not the environment's fault"
	grep -a 'on n2: nccl-warmup failed' "$(sn_slurmd_log n2)" | tail -n1 |
		grep -qF '"fault":"node"' &&
		sn_fail "n2 blamed itself for n1's squatted port"
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

@test "fabric: a node failing a GPU health check (NVML) is the node at fault; the others are peer_failed" {
	sn_fake_env ok
	export FAKE_NVML_HOSTS=n2 FAKE_NVML_ECC_UNCORR=4
	# n2's GPU: its root confirmation sees it too (the node at fault).
	sn_node_fake_from_env
	run --separate-stderr fabric_srun
	sn_assert_failed
	[ ! -e "$MARKER" ] || sn_fail "the tasks ran despite the failed warmup"
	sn_assert_msg 'warmup failed on node n2 .*GPU 0 ecc: 4 volatile uncorrectable ECC errors'
	sn_assert_msg 'warmup failed on node n1 .*node n2'
	sn_assert_msg 'warmup failed on node n3 .*node n2'
	assert_nothing_left 29400 29499
}

#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# --nccl-warmup=fabric on a cluster without munged (issue 34):
# AuthType=auth/slurm and CredType=cred/slurm with a slurm.key, three
# nodes (SN_AUTH=slurm, tests/cluster/cluster.sh).  The plugin reads
# AuthType, derives the step key as root and hands it to the helpers;
# the step passes (derived in slurmstepd, which has libcrypto through
# auth_slurm.so).  fabric_auth=munge there fails in one message that
# blames no node.  Slurm 22.05 has no auth/slurm (23.11+): release-suite.sh
# does not run this file there.  The hostile tests under the key: fabric_hostile.bats
# with SN_AUTH=slurm.

SN_NODES=3
export SN_AUTH=slurm
load common
load helpers/fabric

setup_file() {
	sn_release_has_auth_slurm || return 0
	sn_file_setup
}
teardown_file() { sn_release_has_auth_slurm || return 0; sn_file_teardown; }
setup() {
	sn_release_has_auth_slurm ||
		skip "Slurm $(sn_release_local) has no auth/slurm (23.11+)"
	sn_test_setup
	sn_require_warmup
	MARKER="$SN_CLUSTER_DIR/tmp/fabric-auth-ran-$BATS_TEST_NUMBER"
	rm -f "$MARKER"
	export SN_TIMEOUT=60
}

@test "fabric_auth: auth/slurm, no munged: srun -N3 fabric passes with the step key" {
	local job n
	[ ! -e "$SN_CLUSTER_DIR/munge/munged.pid" ] || sn_fail "munged was started"
	grep -qx 'AuthType=auth/slurm' "$SLURM_CONF" || sn_fail "not auth/slurm"
	sn_fake_env ok
	run --separate-stderr fabric_srun
	sn_assert_status 0
	job=$(head -n1 <<<"$output")
	assert_json n1 "$job" '"status":"ok"' '"mode":"fabric"' '"nodes":3' \
		'"ranks":6' '"refused_connections":0'
	assert_json n2 "$job" '"status":"ok"' '"rank_base":2'
	assert_json n3 "$job" '"status":"ok"' '"node_index":2' '"rank_base":4'
	[ -e "$MARKER" ] || sn_fail "the tasks did not run"
	# slurmstepd has libcrypto (auth_slurm.so): the key derived there.
	for n in n1 n2 n3; do
		grep -q "fabric warmup, job $job step [0-9]*: the step key derived in slurmstepd" \
			"$(sn_slurmd_log $n)" || sn_fail "$n: not derived in slurmstepd"
	done
	assert_nothing_left 29400 29499
}

@test "fabric_auth: fabric_auth=munge without munged: one message, no node blamed" {
	local rec=$SN_CLUSTER_DIR/tmp/fabric-auth-rec
	rm -rf "$rec" && mkdir -p "$rec"
	sn_plugstack_set fabric_auth=munge "record_file=$rec/%n.jsonl"
	sn_fake_env ok
	run --separate-stderr fabric_srun
	sn_plugstack_reset
	sn_assert_failed
	sn_assert_msg 'warmup failed on node n1 .*MUNGE'
	[ "$(sn_count_msgs 'resubmit without it')" -eq 0 ] ||
		sn_fail "no node is at fault: no --exclude hint"
	grep -q '"class":"fabric_setup"' "$rec/n1.jsonl" ||
		sn_fail "n1: $(cat "$rec/n1.jsonl")"
}

@test "fabric_auth: a site key root cannot read: one message, the reason in slurmd's log, no node blamed" {
	local rec=$SN_CLUSTER_DIR/tmp/fabric-auth-rec3
	rm -rf "$rec" && mkdir -p "$rec"
	sn_plugstack_set "fabric_key=$SN_CLUSTER_DIR/etc/no-such.key" \
		"record_file=$rec/%n.jsonl"
	sn_fake_env ok
	run --separate-stderr fabric_srun
	sn_plugstack_reset
	sn_assert_failed
	sn_assert_msg 'warmup failed on node n1 .*step key'
	[ "$(sn_count_msgs 'resubmit without it')" -eq 0 ] ||
		sn_fail "no node is at fault: no --exclude hint"
	grep -q '"class":"fabric_setup"' "$rec/n1.jsonl" ||
		sn_fail "n1: $(cat "$rec/n1.jsonl")"
	grep -q "derivation failed: .*cannot read the site key $SN_CLUSTER_DIR/etc/no-such.key" \
		"$(sn_slurmd_log n1)" || sn_fail "no reason in n1's slurmd log"
}

#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# A node without a host NCCL (the jobs of container sites bring theirs in
# the image): check mode names no NCCL and passes, by hand, as a step's
# --nccl-warmup=check and as the Prolog's default MODE=check, so no node
# is failed or drained for lacking one.  The cluster hides the host's
# libnccl from its nodes (SN_HIDE_HOST_NCCL=1, tests/cluster/containers.sh)
# and the steps get only the fake driver in LD_LIBRARY_PATH.

load common

prolog_conf() { echo "$SN_CLUSTER_DIR/etc/nccl-warmup-prolog.conf"; }

setup_file() {
	export SN_HIDE_HOST_NCCL=1
	export SN_SLURM_CONF_EXTRA="Prolog=$SN_CLUSTER_DIR/etc/prolog"
	sn_file_setup || return 1
	if [ "$SN_INSTALLED" = 1 ]; then
		PROLOG_SCRIPT=/usr/libexec/nccl-warmup-prolog
	else
		PROLOG_SCRIPT=$SN_CLUSTER_DIR/libexec/nccl-warmup-prolog
		sn__install_file 0755 "$SN_BUILD_DIR/scripts/nccl-warmup-prolog" \
			"$PROLOG_SCRIPT" || return 1
	fi
	# The Prolog runs only for the test that writes its configuration.
	cat >"$SN_CLUSTER_DIR/etc/prolog" <<W
#!/bin/sh
[ -e '$(prolog_conf)' ] || exit 0
NCCL_WARMUP_PROLOG_CONF='$(prolog_conf)' exec '$PROLOG_SCRIPT'
W
	chmod 0755 "$SN_CLUSTER_DIR/etc/prolog"
}
teardown_file() { sn_file_teardown; }

setup() {
	sn_test_setup
	sn_require_warmup
	rm -f "$(prolog_conf)"
	SN_FAKE_LOG="$SN_CLUSTER_DIR/tmp/fake-cuda-$BATS_TEST_NUMBER.log"
	rm -f "$SN_FAKE_LOG"
	export FAKE_CUDA_LOG=$SN_FAKE_LOG
	# The fake driver only: no NCCL anywhere the loader looks.
	export LD_LIBRARY_PATH
	LD_LIBRARY_PATH=$(sn_fake_dir cuda)
	MARKER="$SN_CLUSTER_DIR/tmp/ran-$BATS_TEST_NUMBER"
	rm -f "$MARKER"
}

teardown() {
	rm -f "$(prolog_conf)"
	if sinfo -h -N -o %T -n n1 | grep -q drain; then
		sn_timeout scontrol update nodename=n1 state=resume
	fi
}

@test "no host NCCL: the helper by hand, check passes naming no NCCL, comm fails" {
	run --separate-stderr sn_srun -n1 --gres=gpu:4 \
		"$(sn_helper_path)" --mode check --json
	sn_assert_status 0
	grep -q 'no NCCL on the node' <<<"$stderr" ||
		sn_fail "check did not say there is no NCCL"
	[ "$(jq -r .status <<<"$output")" = ok ] || sn_fail "JSON: not ok"
	[ "$(jq -r .nccl_path <<<"$output")" = null ] ||
		sn_fail "JSON names an NCCL"
	# The node really has none: a mode that needs NCCL fails on it.
	run --separate-stderr sn_srun -n1 --gres=gpu:4 \
		"$(sn_helper_path)" --mode comm
	[ "$status" -eq 5 ] || sn_fail "comm mode: status $status, expected 5"
	grep -q 'no NCCL found' <<<"$stderr" || sn_fail "comm: no 'no NCCL found'"
}

@test "no host NCCL: srun --nccl-warmup=check runs the tasks and says so" {
	run --separate-stderr sn_srun -n2 --gres=gpu:2 \
		--nccl-warmup=check,verbose touch "$MARKER"
	sn_assert_status 0
	[ -e "$MARKER" ] || sn_fail "the tasks did not run"
	sn_assert_msg 'warmup ok on n1: 2 GPUs .*no NCCL on the node'
	[ "$(sn_fake_loads)" -eq 1 ] || sn_fail "the helper did not run once"
}

@test "no host NCCL: the Prolog's MODE=check passes, node stays up" {
	{
		echo "HELPER=$(sn_helper_path)"
		echo "MODE=check"
		echo "TIMEOUT=20"
		echo "export LD_LIBRARY_PATH=$(sn_fake_dir cuda)"
		echo "export FAKE_CUDA_LOG=$SN_FAKE_LOG"
	} >"$(prolog_conf)"
	chmod 0644 "$(prolog_conf)"
	run --separate-stderr sn_srun -n1 --gres=gpu:2 touch "$MARKER"
	sn_assert_status 0
	[ -e "$MARKER" ] || sn_fail "the job did not run"
	[ "$(sn_fake_loads)" -eq 1 ] || sn_fail "the Prolog's check did not run"
	[ "$(sn_node_settled n1)" = idle ] ||
		sn_fail "node $(sinfo -h -N -o %T -n n1)"
}

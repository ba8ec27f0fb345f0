#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# Faults on a three-node cluster (network namespaces): a helper that is
# missing, not executable, killed by a signal, prints garbage or nothing,
# floods its pipes, forges messages, or leaves processes behind (in its
# group, in its own session, daemonized); CUDA_VISIBLE_DEVICES empty or
# nonsense; GPUs on some nodes only; one node of three failing; slurmd
# restarted during a warmup.  The misbehaving helper is
# helpers/fake-helper.sh, installed root-owned and named by warmup_helper=
# as an admin would; the real nccl-warmup with the fake CUDA/NCCL plays
# the rest.  Policy (docs/security.md): the helper's exit status decides,
# its output only explains.

SN_NODES=3
load common
load helpers/faults

setup_file() {
	sn_file_setup || return
	sn_install_fake_helper
}
teardown_file() { sn_file_teardown; }
setup() {
	sn_test_setup
	sn_require_warmup
	sn_require_file "$(sn_fake_helper_path)" "fake helper not installed"
	MARKER="$SN_CLUSTER_DIR/tmp/ran-$BATS_TEST_NUMBER"
	rm -f "$MARKER"*
}

# srun -N3 with two GPUs per node and a warmup; each task touches
# $MARKER.NODE.
warm3() {
	sn_srun -N3 --gres=gpu:2 --nccl-warmup=comm "$@" \
		sh -c "touch $MARKER.\$(hostname)"
}

tasks_ran_on() {
	local got
	got=$(cd "$(dirname "$MARKER")" &&
	      ls "$(basename "$MARKER")".* 2>/dev/null |
	      sed 's/.*\.//' | sort | paste -sd' ' -)
	[ "$got" = "$*" ] || sn_fail "tasks ran on [$got], expected [$*]"
}

@test "faults: missing helper fails the step on every node, naming the path" {
	sn_plugstack_set "warmup_helper=$SN_CLUSTER_DIR/libexec/no-such-helper"
	run --separate-stderr warm3
	sn_assert_failed
	tasks_ran_on
	for n in n1 n2 n3; do
		sn_assert_msg "node $n .*could not execute $SN_CLUSTER_DIR/libexec/no-such-helper: No such file"
	done
	sn_assert_msg 'ask your admins'
}

@test "faults: helper not executable (mode 0644) fails with Permission denied" {
	sn_install_fake_helper fake-helper-noexec 0644
	sn_plugstack_set "warmup_helper=$SN_CLUSTER_DIR/libexec/fake-helper-noexec"
	sn_fake_mode ok
	run --separate-stderr warm3
	sn_assert_failed
	tasks_ran_on
	sn_assert_msg 'could not execute .*fake-helper-noexec: Permission denied'
	[ -z "$(sn_fake_nodes)" ] || sn_fail "the helper ran: $(sn_fake_nodes)"
}

@test "faults: helper killed by a signal fails the step, naming the signal" {
	sn_use_fake_helper
	sn_fake_mode signal
	run --separate-stderr warm3
	sn_assert_failed
	tasks_ran_on
	sn_assert_msg 'node n1 .*killed by signal 11'
	[ "$(sn_fake_nodes)" = "n1 n2 n3" ] || sn_fail "ran on $(sn_fake_nodes)"
	sn_assert_no_leftovers
}

@test "faults: garbage on stdout with exit 0 passes (the exit status decides)" {
	local job
	sn_use_fake_helper
	sn_fake_mode garbage-ok
	run --separate-stderr warm3
	sn_assert_status 0
	tasks_ran_on n1 n2 n3
	sn_assert_no_msgs
	job=$(sn_timeout squeue -h -t all -o %i | sort -n | tail -n1)
	# Logged as a pass without a result, the garbage not echoed.
	grep -aq "job $job step 0 on n2: nccl-warmup passed in [0-9]* ms: (no result)" \
		"$(sn_slurmd_log n2)" || sn_fail "n2's log lacks the pass"
}

@test "faults: garbage on stdout with a failing exit names the code and stderr" {
	sn_use_fake_helper
	sn_fake_mode garbage-fail
	run --separate-stderr warm3
	sn_assert_failed
	tasks_ran_on
	sn_assert_msg 'node n3 .*NCCL failure \(exit code 5\): fake helper: the GPUs are on fire'
}

@test "faults: a helper that fails silently still gets a message" {
	sn_use_fake_helper
	sn_fake_mode silent-fail
	run --separate-stderr warm3
	sn_assert_failed
	tasks_ran_on
	# What failed where, on a line of its own (the why and the fix follow).
	sn_assert_msg 'node n2 \(GPUs [^)]*\): CUDA failure \(exit code 4\)$'
}

@test "faults: 10 MiB on stdout and stderr is bounded and does not stall" {
	local t0=$EPOCHREALTIME
	sn_use_fake_helper
	sn_fake_mode flood
	run --separate-stderr warm3
	sn_assert_status 0
	tasks_ran_on n1 n2 n3
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { exit !(b - a < 20) }' ||
		sn_fail "took $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{print b-a}') s"
}

@test "faults: forged lines and escape sequences from the helper are neutralised" {
	local job log
	sn_use_fake_helper
	sn_fake_mode inject
	run --separate-stderr warm3
	sn_assert_failed
	# No line of srun's output begins with a forged message...
	if grep -aE '^spank-nccl: FORGED' <<<"$stderr"; then
		sn_fail "a forged line reached the user"
	fi
	sn_assert_msg 'node n1 .*FORGED'
	# ...and no control character but the newline reached it or the log.
	if printf '%s' "$stderr" | tr -d '\n' | LC_ALL=C grep -aq '[[:cntrl:]]'; then
		sn_fail "control characters in srun's stderr"
	fi
	job=$(sn_timeout squeue -h -t all -o %i | sort -n | tail -n1)
	for n in n1 n2 n3; do
		log=$(grep -a "^\[[^]]*\] \[$job\.0\]" "$(sn_slurmd_log "$n")")
		[ -n "$log" ] || sn_fail "no log lines of job $job on $n"
		if printf '%s' "$log" | tr -d '\n' | LC_ALL=C grep -aq '[[:cntrl:]]'; then
			sn_fail "control characters in $n's slurmd log"
		fi
		if grep -a 'FORGED' "$(sn_slurmd_log "$n")" | grep -qv "^\[[^]]*\] \[$job\.0\]"; then
			sn_fail "a forged line in $n's slurmd log"
		fi
	done
}

# Issue 30: a value the user chose reaches slurmd's log only escaped.
# --export puts the variable in the step's environment, not srun's, so
# slurmstepd (not srun) parses it and logs the refusal.
@test "faults: a newline in SPANK_NCCL_WARMUP or SPANK_NCCL_PROFILE forges no line in slurmd's log" {
	local job n log var forged
	for var in SPANK_NCCL_WARMUP SPANK_NCCL_PROFILE; do
		forged=$'comm\nspank-nccl: FORGEDENV node n2 is broken'
		run --separate-stderr sn_srun -N1 -w n1 \
			--export="ALL,$var=$forged" true
		sn_assert_failed
		job=$(sn_timeout squeue -h -t all -o %i | sort -n | tail -n1)
		log=$(grep -a "^\[[^]]*\] \[$job\.0\]" "$(sn_slurmd_log n1)")
		grep -qF "comm?spank-nccl: FORGEDENV node n2 is broken" <<<"$log" ||
			sn_fail "$var: the refusal is not in n1's slurmd log, escaped: $log"
		# A forged line has no "[time] [job.step]" of slurmstepd's before it.
		for n in n1 n2 n3; do
			if grep -a 'FORGEDENV' "$(sn_slurmd_log "$n")" |
				grep -qv "^\[[^]]*\] \[[0-9]*\.0\]"; then
				sn_fail "$var: a forged line in $n's slurmd log"
			fi
		done
	done
}

@test "faults: SLURMD_NODENAME from the user cannot make a failure blame another node" {
	sn_use_fake_helper
	sn_fake_mode silent-fail
	SLURMD_NODENAME=n9-innocent run --separate-stderr warm3
	sn_assert_failed
	sn_assert_msg 'node n1 '
	[ "$(sn_count_msgs 'n9-innocent')" -eq 0 ] ||
		sn_fail "the user's SLURMD_NODENAME reached the message"
	[ "$(sn_fake_nodes)" = "n1 n2 n3" ] || sn_fail "--node: $(sn_fake_nodes)"
}

# no_survivor MODE WHAT [TRIES]: the fake helper in MODE leaves WHAT behind
# on each node (its PID in $SN_FAKE_DIR/MODE-TAG-NODE.pid); the step
# passes and nothing is left (sn_assert_no_leftovers TRIES).
no_survivor() {
	local mode=$1 what=$2 f n
	shift 2
	sn_use_fake_helper
	sn_fake_mode "$mode"
	run --separate-stderr warm3
	sn_assert_status 0
	for n in n1 n2 n3; do
		f="$SN_FAKE_DIR/$mode-$SN_FAKE_TAG-$n.pid"
		[ -s "$f" ] || sn_fail "no $what was started on $n"
	done
	sn_assert_no_leftovers "$@"
}

@test "faults: a helper's grandchild in its process group does not survive" {
	no_survivor grandchild grandchild
}

@test "faults: a grandchild that calls setsid() does not survive" {
	# Killed and reaped before user_init returned: nothing to wait for.
	no_survivor setsid "setsid grandchild" 0
}

@test "faults: a daemonized grandchild (double fork, setsid) does not survive" {
	no_survivor daemon daemon 0
}

@test "faults: CUDA_VISIBLE_DEVICES from the user never reaches the helper" {
	sn_use_fake_helper
	sn_fake_mode ok
	# Without GPUs Slurm removes the user's value: warmup skipped.
	CUDA_VISIBLE_DEVICES=garbage run --separate-stderr sn_srun -N3 \
		--nccl-warmup=comm sh -c 'echo "${CUDA_VISIBLE_DEVICES-unset}"'
	sn_assert_status 0
	[ "$(sort -u <<<"$output")" = unset ] || sn_fail "tasks: $output"
	[ -z "$(sn_fake_nodes)" ] || sn_fail "helper ran on $(sn_fake_nodes)"
	CUDA_VISIBLE_DEVICES= run --separate-stderr sn_srun -N3 \
		--nccl-warmup=comm true
	sn_assert_status 0
	[ -z "$(sn_fake_nodes)" ] || sn_fail "helper ran on $(sn_fake_nodes)"
	# With GPUs, Slurm's binding replaces it: the real helper passes.
	sn_fake_env ok
	sn_plugstack_reset
	CUDA_VISIBLE_DEVICES=garbage run --separate-stderr sn_srun -N3 \
		--gres=gpu:2 --nccl-warmup=comm,verbose \
		sh -c 'echo "$CUDA_VISIBLE_DEVICES"'
	sn_assert_status 0
	[ "$(sort -u <<<"$output")" = 0,1 ] || sn_fail "tasks: $output"
	[ "$(sn_count_msgs 'warmup ok on n[123]: 2 GPUs')" -eq 3 ] ||
		sn_fail "expected three passes"
}

@test "faults: CUDA_VISIBLE_DEVICES nonsense or empty from a profile" {
	local conf="$SN_CLUSTER_DIR/etc/faults-profiles.conf"
	cat >"$conf" <<'EOF'
[profile cvd-junk]
description = an admin's mistake: a nonsense device list
set CUDA_VISIBLE_DEVICES=junk

[profile cvd-empty]
description = hides every GPU
set CUDA_VISIBLE_DEVICES=
EOF
	chmod 0644 "$conf"
	sn_plugstack_set "profiles=$conf"
	sn_fake_env ok
	# No GPU bound by Slurm: the profile's nonsense reaches the helper,
	# which finds no GPU, and the message shows the value.
	run --separate-stderr sn_srun -N3 --nccl-profile=cvd-junk \
		--nccl-warmup=comm touch "$MARKER.x"
	sn_assert_failed
	[ ! -e "$MARKER.x" ] || sn_fail "tasks ran"
	sn_assert_msg 'node n2 \(GPUs junk\): .*(no visible|No GPU|no GPU)'
	# Empty: no GPU in this step, nothing to check.
	run --separate-stderr sn_srun -N3 --nccl-profile=cvd-empty \
		--nccl-warmup=comm touch "$MARKER.y"
	sn_assert_status 0
	[ -e "$MARKER.y" ] || sn_fail "tasks did not run"
	[ "$(sn_fake_loads)" -eq 3 ] ||
		sn_fail "helper ran $(sn_fake_loads) times, expected 3 (junk only)"
}

@test "faults: GPUs on one node of three (heterogeneous step): warmup there only" {
	sn_use_fake_helper
	sn_fake_mode real
	sn_fake_env ok
	run --separate-stderr sn_srun --nccl-warmup=comm,verbose \
		-N1 -w n2 --gres=gpu:2 true : -N2 -x n2 true
	sn_assert_status 0
	[ "$(sn_fake_nodes)" = n2 ] || sn_fail "helper ran on [$(sn_fake_nodes)]"
	[ "$(sn_count_msgs 'warmup ok on n2: 2 GPUs')" -eq 1 ] ||
		sn_fail "no pass on n2"
	# verbose: n1 and n3 only say why they skipped it.
	[ "$(sn_count_msgs 'n[13]')" -eq 2 ] || sn_fail "n1/n3 mentioned"
	[ "$(sn_count_msgs 'warmup skipped on node n[13]: the step has no GPUs there')" -eq 2 ] ||
		sn_fail "n1/n3 do not say they skipped it"
}

@test "faults: one bad node of three fails the step naming only that node" {
	sn_use_fake_helper
	sn_fake_mode real
	sn_fake_env ok
	SN_FAKE_BAD_NODE=n2 run --separate-stderr warm3
	sn_assert_failed
	[ "$(sn_fake_nodes)" = "n1 n2 n3" ] || sn_fail "ran on $(sn_fake_nodes)"
	sn_assert_msg 'warmup failed on node n2 .*0000:01:00\.0'
	[ "$(sn_count_msgs 'warmup failed')" -eq 1 ] ||
		sn_fail "$(sn_count_msgs 'warmup failed') failure messages"
	[ "$(sn_count_msgs 'node n[13]')" -eq 0 ] || sn_fail "n1/n3 blamed"
	sn_assert_no_leftovers
}

@test "faults: one bad node with --kill-on-bad-exit: the others end, nothing left" {
	local t0=$EPOCHREALTIME elapsed
	sn_use_fake_helper
	sn_fake_mode real
	sn_fake_env ok
	# n1 and n3 sit 4 s in NCCL init; n2 fails its bus-ID check at once.
	# Slurm 22.05 cannot signal a step whose tasks do not exist yet (no
	# proctrack container during user_init), so srun's kill reaches n1
	# and n3 when their warmups end; the warmup deadline bounds that
	# (docs/security.md, "Cancelled during the warmup").
	FAKE_NCCL_INIT_DELAY_MS=4000 SN_FAKE_BAD_NODE=n2 \
		run --separate-stderr warm3 --kill-on-bad-exit=1
	elapsed=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", b - a }')
	sn_assert_failed
	sn_assert_msg 'warmup failed on node n2 '
	[ "$(sn_count_msgs 'node n[13]')" -eq 0 ] || sn_fail "n1/n3 blamed"
	[ "$elapsed" -lt 12 ] || sn_fail "srun took $elapsed s"
	sn_assert_no_leftovers 50
	sn_wait_job "$(sn_timeout squeue -h -t all -o %i | sort -n | tail -n1)" ||
		sn_fail "the job did not leave the queue"
}

@test "faults: slurmd restarted during a slow warmup: no stuck step, no orphan" {
	local pid job srun_pid rc t0
	sn_use_fake_helper
	sn_fake_mode real
	sn_fake_env ok
	export FAKE_NCCL_INIT_DELAY_MS=3000
	warm3 >"$SN_CLUSTER_DIR/tmp/restart-$BATS_TEST_NUMBER.out" 2>&1 &
	srun_pid=$!
	# Wait until n2's helper is running, then restart n2's slurmd.
	t0=$SECONDS
	until [ "$(sn_fake_nodes)" = "n1 n2 n3" ]; do
		((SECONDS - t0 < 15)) || sn_fail "the helpers never started"
		sleep 0.1
	done
	pid=$(cat "$SN_CLUSTER_DIR/run/slurmd-n2.pid")
	kill -TERM "$pid"
	t0=$SECONDS
	while sn_pid_running "$pid"; do
		((SECONDS - t0 < 10)) || sn_fail "slurmd n2 did not stop"
		sleep 0.1
	done
	sn__start_slurmd 2 || sn_fail "slurmd n2 did not restart"
	rc=0
	wait "$srun_pid" || rc=$?
	output=$(cat "$SN_CLUSTER_DIR/tmp/restart-$BATS_TEST_NUMBER.out")
	[ "$rc" -eq 0 ] || sn_fail "srun exit $rc across the restart: $output"
	tasks_ran_on n1 n2 n3
	job=$(sn_timeout squeue -h -t all -o %i | sort -n | tail -n1)
	sn_wait_job "$job" || sn_fail "job $job stuck after the restart"
	sn_assert_no_leftovers 20
	# The node is usable again.
	run --separate-stderr sn_srun -N3 true
	sn_assert_status 0
}

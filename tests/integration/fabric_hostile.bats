#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# Strangers against --nccl-warmup=fabric on the three-node cluster (issue
# 20): an unprivileged process (nobody) and a process of another user
# (sncother), on another node of the network or on the step's first node,
# try to join as a node (with a wrapping GPU count, forged and
# self-sealed credentials), to stall the coordinator with idle
# connections, and to pose as the root (a GO, and a VERDICT that would
# pass a failed node or frame a healthy one).  Each time the honest step
# ends as it would alone, no innocent node is blamed or recorded as
# failed, the stranger hears nothing from the step, and nothing is left
# listening.  The strangers: tests/integration/helpers/fabric-stranger.pl.
# Under MUNGE (default) or, with SN_AUTH=slurm (Slurm 23.11+; run on the
# newest release by tests/release-suite.sh), under the step key with no
# munged: the self-sealed credentials are then a real key of another
# step of the job's user.

SN_NODES=3
load common
load helpers/fabric

OTHER_USER=sncother

setup_file() {
	sn_file_setup
	getent passwd "$OTHER_USER" >/dev/null ||
		useradd -r -M -s /bin/sh "$OTHER_USER"
}
teardown_file() { sn_file_teardown; }
setup() {
	sn_test_setup
	sn_require_warmup
	MARKER="$SN_CLUSTER_DIR/tmp/fabric-hostile-ran-$BATS_TEST_NUMBER"
	REC="$SN_CLUSTER_DIR/tmp/fabric-hostile-rec-$BATS_TEST_NUMBER"
	STATS="$SN_CLUSTER_DIR/tmp/fabric-hostile-stats-$BATS_TEST_NUMBER"
	rm -rf "$MARKER" "$REC" "$STATS".*
	mkdir -p "$REC"
	chmod 0777 "$SN_CLUSTER_DIR/tmp"
	LISTENER_PID=
	STRANGERS=()
	export SN_TIMEOUT=60
}
teardown() {
	stop_strangers
	[ -z "$LISTENER_PID" ] || kill "$LISTENER_PID" 2>/dev/null || :
}

STRANGER=$BATS_TEST_DIRNAME/helpers/fabric-stranger.pl

# What a stranger seals with: munged's socket (its own uid's credential),
# or under SN_AUTH=slurm key:HEX, the key of step 1 of the job, which root
# derives as the plugin would: a member of another step of the same user.
stranger_seal() {
	local cluster key
	if [ "$SN_AUTH" != slurm ]; then
		echo "$SN_CLUSTER_DIR/munge/munge.socket"
		return
	fi
	cluster=$(sed -n 's/^ClusterName=//Ip' "$SLURM_CONF")
	key=$("$(sn_helper_path)" --fabric-key-derive \
		"$SN_CLUSTER_DIR/etc/slurm.key" "$cluster" "$JOB" 1 "$(id -u)" \
		3>&1 >/dev/null)
	[ "${#key}" -eq 64 ] || sn_fail "no key of another step: '$key'" ||
		return 1
	echo "key:$key"
}

# stranger NODE USER MODE ARGS...: fabric-stranger.pl as USER in node
# NODE's network namespace, until stop_strangers.
stranger() {
	local node=$1 user=$2
	shift 2
	nsenter --net="/run/netns/$(sn__netns_name "$node")" \
		runuser -u "$user" -- perl "$STRANGER" "$@" \
		</dev/null >>"$STATS.log" 2>&1 3>&- &
	STRANGERS+=("$!")
}

stop_strangers() {
	local pid
	for pid in "${STRANGERS[@]}"; do
		# runuser's child: TERM the whole process group of nsenter.
		pkill -TERM -P "$pid" 2>/dev/null || :
		kill -TERM "$pid" 2>/dev/null || :
	done
	for pid in "${STRANGERS[@]}"; do
		wait "$pid" 2>/dev/null || :
	done
	STRANGERS=()
}

# Asserts what the stranger that wrote STATS saw: it reached the
# coordinator (connected > 0) and heard nothing back (answered=0).
assert_unanswered() {
	local f=$1
	sn__wait_for 50 test -s "$f" || sn_fail "no stats from the stranger ($f)" || return 1
	grep -qE '^connected=[1-9][0-9]* answered=0$' "$f" ||
		sn_fail "the stranger: $(cat "$f"); $(cat "$STATS.log" 2>/dev/null)"
}

# Waits until every stranger STATS.NAME... is looping, and makes n3 join
# late (its fake cuInit takes 3 s), so the coordinator on n1 listens long
# enough for the strangers to find it whatever the machine's load.
strangers_ready() {
	local name
	for name in "$@"; do
		sn__wait_for 300 test -e "$STATS.$name.started" ||
			sn_fail "stranger $name never started: $(cat "$STATS.log" 2>/dev/null)" ||
			return 1
	done
	export FAKE_CUDA_SLOW_INIT_HOSTS=n3 FAKE_CUDA_SLOW_INIT_MS=3000
}

# A job allocation of three nodes: its id (the stranger reads it as
# anyone can, from squeue).
allocate() {
	run --separate-stderr sn_salloc -N3 --gres=gpu:2 --no-shell
	sn_assert_status 0
	JOB=$(sed -nE 's/.*Granted job allocation ([0-9]+).*/\1/p' <<<"$stderr$output" | head -n1)
	[ -n "$JOB" ] || sn_fail "no job id from salloc"
}

step_srun() {
	sn_srun --jobid="$JOB" -N3 --gres=gpu:2 --nccl-warmup=fabric "$@" \
		sh -c "touch $MARKER; echo \$SLURM_STEP_ID"
}

# Every node's record of the job: class CLASS (ok by default).
assert_records() {
	local class=${1:-ok} n
	for n in n1 n2 n3; do
		grep -q "\"job\":$JOB,.*\"class\":\"$class\"" "$REC/$n.jsonl" ||
			sn_fail "$n's record, expected class $class: $(cat "$REC/$n.jsonl" 2>/dev/null)" ||
			return 1
	done
}

@test "fabric, strangers: nobody and another user on n3 claim nodes n2 and n3 (plain, forged, self-sealed HELLOs): refused, the step passes" {
	local lo=31020 hi=31027 refused
	sn_plugstack_set "fabric_ports=$lo-$hi" "record_file=$REC/%n.jsonl"
	sn_fake_env ok
	allocate
	# Both start before the step and keep trying all through it.
	stranger 3 nobody hello "$SN_NET_PREFIX.11" "$lo-$hi" "$JOB" 0 \
		"$STATS.nobody" "$(stranger_seal)"
	stranger 3 "$OTHER_USER" hello "$SN_NET_PREFIX.11" "$lo-$hi" "$JOB" 0 \
		"$STATS.other" "$(stranger_seal)"
	strangers_ready nobody other
	run --separate-stderr step_srun
	stop_strangers
	scancel "$JOB"
	sn_assert_status 0
	[ -e "$MARKER" ] || sn_fail "the tasks did not run"
	[ "$(sn_count_msgs 'warmup failed')" -eq 0 ] || sn_fail "a node failed"
	assert_json n1 "$JOB" '"ranks":6' '"rank_base":0' '"status":"ok"'
	assert_json n2 "$JOB" '"rank_base":2' '"status":"ok"'
	assert_json n3 "$JOB" '"rank_base":4' '"status":"ok"'
	refused=$(warmup_json n1 "$JOB" | sed -nE 's/.*"refused_connections":([0-9]+).*/\1/p')
	[ "${refused:-0}" -ge 1 ] ||
		sn_fail "n1 refused no stranger: $(warmup_json n1 "$JOB")"
	assert_unanswered "$STATS.nobody"
	assert_unanswered "$STATS.other"
	assert_records ok
	assert_nothing_left "$lo" "$hi"
}

@test "fabric, strangers: 200 idle connections per candidate port from n3 do not stall the step" {
	local lo=31030 hi=31033
	sn_plugstack_set "fabric_ports=$lo-$hi" "record_file=$REC/%n.jsonl"
	sn_fake_env ok
	allocate
	stranger 3 nobody idle "$SN_NET_PREFIX.11" "$lo-$hi" 200 "$STATS.idle"
	strangers_ready idle
	run --separate-stderr step_srun
	stop_strangers
	scancel "$JOB"
	sn_assert_status 0
	[ -e "$MARKER" ] || sn_fail "the tasks did not run"
	assert_unanswered "$STATS.idle"
	assert_records ok
	assert_nothing_left "$lo" "$hi"
}

@test "fabric, strangers: a fake root on n1 (nobody) cannot pass a failed node nor frame another" {
	local lo=31040 hi=31047 first
	sn_plugstack_set "fabric_ports=$lo-$hi" "record_file=$REC/%n.jsonl"
	sn_fake_env ok
	allocate
	first=$(fabric_port "$lo" "$hi" "$JOB" 0 0)
	stranger 1 nobody fakeroot "$first" "$JOB" 0 "$STATS.root" "$STATS.ready"
	sn__wait_for 100 test -e "$STATS.ready" || sn_fail "the fake root did not start"
	# n2's NCCL fails: its VERDICT status=256 would make that exit 0 and
	# blame=2 would frame n3.  The real verdict names n2.
	export FAKE_NCCL_INIT_FAIL_HOSTS=n2
	run --separate-stderr step_srun
	stop_strangers
	scancel "$JOB"
	sn_assert_failed
	[ ! -e "$MARKER" ] || sn_fail "the tasks ran despite n2's failed NCCL"
	sn_assert_msg 'warmup failed on node n1 .*node n2'
	sn_assert_msg 'warmup failed on node n3 .*node n2'
	sn_assert_msg 'warmup failed on node n2 .*NCCL'
	[ "$(sn_count_msgs 'framed by a stranger')" -eq 0 ] ||
		sn_fail "the stranger's text reached the user"
	grep -q '"class":"nccl_error"' "$REC/n2.jsonl" || sn_fail "n2: $(cat "$REC/n2.jsonl")"
	grep -q '"class":"peer_failed".*"blame_node":"n2"' "$REC/n3.jsonl" ||
		sn_fail "n3 must blame n2: $(cat "$REC/n3.jsonl")"
	grep -q '"class":"peer_failed".*"blame_node":"n2"' "$REC/n1.jsonl" ||
		sn_fail "n1 must blame n2: $(cat "$REC/n1.jsonl")"
	! grep -q 'framed' "$REC"/*.jsonl "$(sn_slurmd_log n1)" "$(sn_slurmd_log n2)" "$(sn_slurmd_log n3)" ||
		sn_fail "the stranger's text reached a record or slurmd's log"
	# The members skipped it: the coordinator was the next candidate.
	assert_json n2 "$JOB" "\"coordinator\":\"$SN_NET_PREFIX.11:$(fabric_port "$lo" "$hi" "$JOB" 0 1)\""
	assert_nothing_left "$lo" "$hi"
}

@test "fabric, strangers: a fake root on n1 of another user, sealing its WELCOME (MUNGE, or another step's key), is passed over; the step passes" {
	local lo=31050 hi=31057 first
	sn_plugstack_set "fabric_ports=$lo-$hi" "record_file=$REC/%n.jsonl"
	sn_fake_env ok
	allocate
	first=$(fabric_port "$lo" "$hi" "$JOB" 0 0)
	stranger 1 "$OTHER_USER" fakeroot "$first" "$JOB" 0 "$STATS.root" \
		"$STATS.ready" "$(stranger_seal)"
	sn__wait_for 100 test -e "$STATS.ready" || sn_fail "the fake root did not start"
	run --separate-stderr step_srun
	stop_strangers
	scancel "$JOB"
	sn_assert_status 0
	[ -e "$MARKER" ] || sn_fail "the tasks did not run"
	# The members reached it (its stats) and joined the next candidate.
	assert_unanswered "$STATS.root"
	assert_json n2 "$JOB" '"status":"ok"' \
		"\"coordinator\":\"$SN_NET_PREFIX.11:$(fabric_port "$lo" "$hi" "$JOB" 0 1)\""
	assert_json n3 "$JOB" '"status":"ok"' \
		"\"coordinator\":\"$SN_NET_PREFIX.11:$(fabric_port "$lo" "$hi" "$JOB" 0 1)\""
	assert_records ok
	assert_nothing_left "$lo" "$hi"
}

@test "fabric, strangers: every candidate port on n1 squatted by nobody: the step fails naming the ports, nobody's node is at fault" {
	local lo=31060 hi=31063 n
	sn_plugstack_set "fabric_ports=$lo-$hi" "record_file=$REC/%n.jsonl" \
		warmup_timeout=8
	sn_fake_env ok
	allocate
	for n in $(seq "$lo" "$hi"); do
		stranger 1 nobody fakeroot "$n" "$JOB" 0 "$STATS.root$n" "$STATS.ready$n"
	done
	for n in $(seq "$lo" "$hi"); do
		sn__wait_for 100 test -e "$STATS.ready$n" || sn_fail "squatter $n did not start"
	done
	run --separate-stderr step_srun
	stop_strangers
	scancel "$JOB"
	sn_assert_failed
	sn_assert_msg "warmup failed on node n1 .*ports $lo-$hi on n1 are all taken by other processes"
	sn_assert_msg "warmup failed on node n2 .*n1 .*ports $lo-$hi on n1 are all taken by other processes"
	[ "$(sn_count_msgs 'resubmit without it')" -eq 0 ] ||
		sn_fail "n1 is not at fault: no --exclude hint"
	grep -q '"class":"fabric_setup"' "$REC/n1.jsonl" || sn_fail "n1: $(cat "$REC/n1.jsonl")"
	# n2 and n3 found only squatters: the same class, naming n1.
	grep -q '"class":"fabric_setup".*"blame_node":"n1"' "$REC/n2.jsonl" ||
		sn_fail "n2: $(cat "$REC/n2.jsonl")"
	# No node counts it as its own failure.
	run "$SN_BUILD_DIR/src/report/spank-nccl-report" --json "$REC"/*.jsonl
	! grep -q '"failures":[1-9]' <<<"$output" || sn_fail "counted as a node's failure: $output"
	assert_nothing_left "$lo" "$hi"
}

# The step as the job user (the stranger finds NCCL's bootstrap listener
# by its owner's uid); JOB, if not set, from its tasks' output.
user_step_srun() {
	run --separate-stderr sn_as_user srun "$@" -N3 --gres=gpu:2 \
		--nccl-warmup=fabric sh -c "touch $MARKER; echo \$SLURM_JOB_ID"
	[ -n "${JOB:-}" ] || JOB=$(grep -m1 -xE '[0-9]+' <<<"$output") || :
}

# The step passed (every record ok), or failed as the environment's: no
# node blamed in any record, none counted as a node's failure.
assert_passed_or_environment() {
	local n
	echo "# step exit $status; records: $(cat "$REC"/*.jsonl | grep -o '"class":"[a-z_]*","fault":[a-z"]*' | paste -sd' ')" >&3
	if [ "$status" -eq 0 ]; then
		[ -e "$MARKER" ] || sn_fail "the tasks did not run"
		assert_records ok
		return
	fi
	for n in n1 n2 n3; do
		grep -q '"fault":"environment"' "$REC/$n.jsonl" ||
			sn_fail "$n's record is not the environment's: $(cat "$REC/$n.jsonl")" ||
			return 1
	done
	! grep -q '"blame_node":"' "$REC"/*.jsonl ||
		sn_fail "a node blamed: $(cat "$REC"/*.jsonl)"
	[ "$(sn_count_msgs 'resubmit without it')" -eq 0 ] ||
		sn_fail "an --exclude hint for a healthy node"
	run "$SN_BUILD_DIR/src/report/spank-nccl-report" --json "$REC"/*.jsonl
	! grep -q '"failures":[1-9]' <<<"$output" || sn_fail "counted as a node's failure: $output"
}

@test "fabric, strangers: nobody's silent connection to NCCL's bootstrap port on n1: the step passes or fails as the environment's, no node blamed" {
	local lo=31070 hi=31073
	sn_plugstack_set "fabric_ports=$lo-$hi" "record_file=$REC/%n.jsonl" \
		warmup_timeout=8
	sn_fake_env ok
	stranger 1 nobody bootstrap "$(id -u "$SN_USER")" "$lo-$hi" "$STATS.boot"
	strangers_ready boot
	user_step_srun
	stop_strangers
	echo "# the stranger: $(cat "$STATS.boot")" >&3
	assert_passed_or_environment
	assert_nothing_left "$lo" "$hi"
	# When NCCL's bootstrap stalls all the same (every node's NCCL init
	# hangs, as such a connection made them): no node is blamed.
	rm -f "$REC"/*.jsonl "$MARKER"
	JOB=
	sn_plugstack_set "fabric_ports=$lo-$hi" "record_file=$REC/%n.jsonl" \
		warmup_timeout=4
	unset FAKE_CUDA_SLOW_INIT_HOSTS FAKE_CUDA_SLOW_INIT_MS
	export FAKE_NCCL_HANG=init
	user_step_srun
	unset FAKE_NCCL_HANG
	sn_assert_failed
	assert_passed_or_environment
	grep -q '"class":"timeout"' "$REC/n1.jsonl" || sn_fail "n1: $(cat "$REC/n1.jsonl")"
	assert_nothing_left "$lo" "$hi"
}

@test "fabric, strangers: nobody's silent listeners on 7 of 8 candidate ports on n1: the step passes or fails as the environment's, no node blamed" {
	local lo=31080 hi=31087 ports=() a t0
	sn_plugstack_set "fabric_ports=$lo-$hi" "record_file=$REC/%n.jsonl" \
		warmup_timeout=8
	sn_fake_env ok
	# The job user's allocation: its step 0's first seven candidates.
	run --separate-stderr sn_as_user salloc -N3 --gres=gpu:2 --no-shell
	sn_assert_status 0
	JOB=$(sed -nE 's/.*Granted job allocation ([0-9]+).*/\1/p' <<<"$stderr$output" | head -n1)
	[ -n "$JOB" ] || sn_fail "no job id from salloc"
	for a in 0 1 2 3 4 5 6; do
		ports+=("$(fabric_port "$lo" "$hi" "$JOB" 0 "$a")")
	done
	stranger 1 nobody silent "$STATS.silent" "$STATS.ready" "${ports[@]}"
	sn__wait_for 100 test -e "$STATS.ready" || sn_fail "the listeners did not start"
	t0=$SECONDS
	user_step_srun --jobid="$JOB"
	stop_strangers
	scancel "$JOB"
	echo "# $((SECONDS - t0)) s; the stranger: $(cat "$STATS.silent")" >&3
	assert_passed_or_environment
	assert_nothing_left "$lo" "$hi"
}

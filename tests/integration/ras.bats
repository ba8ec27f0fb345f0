#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# ras= (issue 35): every step's NCCL RAS on its own 127.0.0.1 port in the
# task environment (src/core/config/ras.c), the same for the warmup's
# NCCL; concurrent steps apart; a port something listens on skipped; the
# user's own NCCL_RAS_ADDR kept; ras=off and ras=nccl; spank-nccl-status
# on a step stuck in NCCL (fake NCCL's RAS).  One node.

load common
load helpers/fabric
load helpers/fleet
load helpers/ras

setup_file() { sn_file_setup; }
teardown_file() {
	[ -z "${LISTENER_PID:-}" ] || kill "$LISTENER_PID" 2>/dev/null
	sn_file_teardown
}
setup() { sn_test_setup; }
teardown() {
	ras_job_stop
	if [ -n "${LISTENER_PID:-}" ]; then
		kill "$LISTENER_PID" 2>/dev/null
		wait "$LISTENER_PID" 2>/dev/null
		LISTENER_PID=
	fi
}

# The port of "127.0.0.1:PORT" in ADDR, or a failure.
ras_port() {
	[[ $1 =~ ^127\.0\.0\.1:([0-9]+)$ ]] ||
		sn_fail "NCCL_RAS_ADDR \"$1\" is not 127.0.0.1:PORT" || return 1
	echo "${BASH_REMATCH[1]}"
}

@test "ras=step (default): each task gets NCCL_RAS_ADDR, the port of its job and step" {
	local addr job step port
	run --separate-stderr sn_srun -n2 env
	sn_assert_status 0
	addr=$(sn_env_value NCCL_RAS_ADDR "$output")
	port=$(ras_port "$addr")
	job=$(sn_env_value SLURM_JOB_ID "$output")
	step=$(sn_env_value SLURM_STEP_ID "$output")
	[ "$port" -eq "$(fabric_port 28100 28999 "$job" "$step" 0)" ] ||
		sn_fail "port $port is not job $job step $step's of 28100-28999"
	sn_assert_env_all NCCL_RAS_ADDR "$addr" 2
	sn_assert_env_all SPANK_NCCL_RAS_ADDR "$addr" 2
	sn_assert_no_msgs
}

# Both steps wait for each other's file: they run at the same time.
@test "ras=step: the batch step and two concurrent steps of its job, three addresses" {
	local script batch a b
	export RAS_DIR=$SN_CLUSTER_DIR/tmp/ras-$BATS_TEST_NUMBER
	rm -rf "$RAS_DIR"
	mkdir -p "$RAS_DIR"
	# step.sh ME OTHER: writes its address, waits for OTHER's.
	cat >"$RAS_DIR/step.sh" <<'S'
#!/bin/sh
echo "$NCCL_RAS_ADDR" >"$RAS_DIR/$1.tmp" && mv "$RAS_DIR/$1.tmp" "$RAS_DIR/$1"
i=0
while [ ! -e "$RAS_DIR/$2" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
[ -e "$RAS_DIR/$2" ]
S
	chmod 0755 "$RAS_DIR/step.sh"
	script=$(sn_batch_script ras.sh <<'S'
#!/bin/bash
#SBATCH -n2
echo "$NCCL_RAS_ADDR" >"$RAS_DIR/batch"
srun -n1 --overlap "$RAS_DIR/step.sh" a b &
srun -n1 --overlap "$RAS_DIR/step.sh" b a &
wait %1 && wait %2
S
)
	sn_sbatch_run "$script" || sn_fail "sbatch failed"
	[ "$SN_JOB_EXIT" = "0:0" ] || sn_fail "job exit $SN_JOB_EXIT: $SN_JOB_OUT"
	batch=$(cat "$RAS_DIR/batch") a=$(cat "$RAS_DIR/a") b=$(cat "$RAS_DIR/b")
	ras_port "$batch" >/dev/null && ras_port "$a" >/dev/null &&
		ras_port "$b" >/dev/null || return 1
	[ "$a" != "$b" ] && [ "$a" != "$batch" ] && [ "$b" != "$batch" ] ||
		sn_fail "batch $batch, steps $a and $b: not three addresses"
}

@test "ras=step: a port something listens on is skipped for the next" {
	local job port ready=$SN_CLUSTER_DIR/tmp/listening-$BATS_TEST_NUMBER
	rm -f "$ready"
	sn_plugstack_set ras_ports=31000-31009
	run --separate-stderr sn_srun -n1 printenv SLURM_JOB_ID
	sn_assert_status 0
	job=$((output + 1))
	port=$(fabric_port 31000 31009 "$job" 0 0)
	# shellcheck disable=SC2016
	perl -MIO::Socket::INET -e '
		my ($ready, $port) = @ARGV;
		my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1",
			LocalPort => $port, Listen => 5, ReuseAddr => 1)
			or die "listen $port: $!\n";
		open(my $f, ">", $ready) or die; close($f);
		sleep;' "$ready" "$port" </dev/null >/dev/null 2>&1 3>&- &
	LISTENER_PID=$!
	sn__wait_for 100 test -e "$ready" ||
		sn_fail "the listener on $port did not start"
	run --separate-stderr sn_srun -n1 env
	sn_assert_status 0
	[ "$(sn_env_value SLURM_JOB_ID "$output")" = "$job" ] ||
		sn_fail "expected job $job (another job was submitted meanwhile?)"
	sn_assert_env_all NCCL_RAS_ADDR "127.0.0.1:$(fabric_port 31000 31009 "$job" 0 1)" 1
}

@test "ras=step: the user's own NCCL_RAS_ADDR is kept" {
	export NCCL_RAS_ADDR=localhost:31999
	run --separate-stderr sn_srun -n1 env
	sn_assert_status 0
	sn_assert_env_all NCCL_RAS_ADDR localhost:31999 1
	sn_assert_env_absent SPANK_NCCL_RAS_ADDR
}

@test "ras=step: the warmup's NCCL and the tasks see one address" {
	local addr seen
	sn_require_warmup
	sn_fake_env ok
	export FAKE_NCCL_LOG=$SN_CLUSTER_DIR/tmp/fake-nccl-$BATS_TEST_NUMBER.log
	rm -f "$FAKE_NCCL_LOG"
	run --separate-stderr sn_srun -n2 --gres=gpu:2 --nccl-warmup=comm env
	sn_assert_status 0
	addr=$(sn_env_value NCCL_RAS_ADDR "$output")
	ras_port "$addr" >/dev/null || return 1
	seen=$(sed -n 's/^lib=nccl .* ras=//p' "$FAKE_NCCL_LOG" | sort -u)
	[ "$seen" = "$addr" ] ||
		sn_fail "the warmup's NCCL saw NCCL_RAS_ADDR [$seen], the tasks $addr"
}

@test "ras=off: NCCL_RAS_ENABLE=0 and no address; ras=nccl: neither" {
	sn_plugstack_set ras=off
	run --separate-stderr sn_srun -n1 env
	sn_assert_status 0
	sn_assert_env_all NCCL_RAS_ENABLE 0 1
	sn_assert_env_absent NCCL_RAS_ADDR
	sn_plugstack_set ras=nccl
	run --separate-stderr sn_srun -n1 env
	sn_assert_status 0
	sn_assert_env_absent NCCL_RAS_ENABLE
	sn_assert_env_absent NCCL_RAS_ADDR
	sn_assert_env_absent SPANK_NCCL_RAS_ADDR
}

# The address ras=step sets is no setting of the job's: a node's NCCL
# failure stays the node's, and a failure lists only the job's NCCL_*.
@test "ras=step: the address does not make a node's NCCL failure the job's" {
	local rec=$SN_CLUSTER_DIR/tmp/ras-records-$BATS_TEST_NUMBER
	sn_require_warmup
	rm -rf "$rec"
	mkdir -p "$rec"
	sn_plugstack_set "record_file=$rec/%n.jsonl"
	sn_fake_env nccl-init-fail
	run --separate-stderr sn_srun -n1 --gres=gpu:2 --nccl-warmup=comm env
	sn_assert_failed
	grep -q '"class":"nccl_error".*"fault":"node"\|"fault":"node".*"class":"nccl_error"' \
		"$rec/n1.jsonl" || sn_fail "not the node's: $(cat "$rec/n1.jsonl")"
	# The node's own NCCL works again (the root check reads the node's
	# fakes, not the job's environment).
	unset FAKE_NCCL_FAIL
	sn_node_fake_from_env
	export NCCL_ALGO=Tree
	# The settings in effect are detail: shown under verbose.
	run --separate-stderr sn_srun -n1 --gres=gpu:2 \
		--nccl-warmup=comm,verbose true
	sn_assert_failed
	sn_assert_msg 'NCCL_\* in effect: NCCL_ALGO=Tree;'
	! grep -q 'NCCL_RAS_ADDR' <<<"$stderr" ||
		sn_fail "the RAS address listed as a setting: $stderr"
}

# Four ranks on n1, the user's job: rank 1 one all-reduce behind, rank 3
# dead.  Root asks (as the job's user: Slurm lets no other uid in).
@test "spank-nccl-status: names the dead and the behind rank by task, node and GPU; --json; root asks a user's job" {
	local verdict
	sn_require_warmup
	export FAKE_NCCL_RAS_BEHIND=1 FAKE_NCCL_RAS_DEAD=3
	AS_USER=1 ras_job_start 127.0.0.1 4 -n4 --gres=gpu:4 || return 1
	run --separate-stderr ras_status "$RAS_JOB"
	sn_assert_status 0
	echo "$output" >"$SN_CLUSTER_DIR/tmp/ras-status-n1.txt"
	verdict="verdict: rank 3 (task 3 on n1, GPU 3) is dead (RAS lost its process); rank 1 (task 1 on n1, GPU 1) has launched AllReduce 1 while the other 2 ranks are at 2"
	[ "${lines[-1]}" = "$verdict" ] || sn_fail "want [$verdict]"
	grep -qx "communicator 0x[0-9a-f]*: 4 ranks, 3 answering, 2 at AllReduce 2" <<<"$output" ||
		sn_fail "no communicator line"
	run --separate-stderr ras_status --json "$RAS_JOB.0"
	sn_assert_status 0
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
r = {k["rank"]: k for k in d["communicators"][0]["ranks"]}
assert d["step"] == 0 and d["asked_on"] == "n1" and d["user"] != "root", d
assert [r[i]["state"] for i in range(4)] == ["ok", "off", "ok", "dead"], r
assert (r[1]["task"], r[1]["node"], r[1]["gpu"], r[1]["count"]) == (1, "n1", 1, 1), r[1]
assert d["communicators"][0]["collective"] == "AllReduce", d
' "$output" || sn_fail "--json"
}

# The slurmd log line of job JOB's killed step (step_hang.c).
ras_killed() {
	grep -q "step $1\.0 killed (signal [0-9]*): RAS's last verdict" "$(sn_slurmd_log)"
}

# At least N RAS answers since ras_sampled_reset (the fake notes each).
ras_sampled() {
	[ "$(wc -l <"$FAKE_NCCL_RAS_DIR/answered" 2>/dev/null || echo 0)" -ge "$1" ]
}

# Waits for the srun of a job that was cancelled.
ras_job_ended() {
	wait "$RAS_SRUN" 2>/dev/null || true
	RAS_SRUN='' RAS_JOB=''
}

# scancel [ARGS] JOB once the sampler asked RAS twice after the tasks
# were ready (the 1st answer may still be in flight).
ras_kill_sampled() {
	rm -f "$FAKE_NCCL_RAS_DIR/answered"
	sn__wait_for 100 ras_sampled 2 || sn_fail "the sampler never asked RAS" ||
		return 1
	scancel "${@:2}" "$1"
}

# Issue 35 item 3: a step killed while rank 1 is behind leaves RAS's
# verdict (step_hang.c's sampler) in its record, the job's fault; a step
# killed with its communicator in step leaves none; ras_sample=off
# starts no sampler (nothing asks RAS).
@test "hang record: scancel (and --signal) of a step with a rank behind (dead) records RAS's verdict; a healthy one none; ras_sample=off" {
	local rec=$SN_CLUSTER_DIR/tmp/ras-hang-$BATS_TEST_NUMBER job
	sn_require_warmup
	rm -rf "$rec"
	mkdir -p "$rec"
	sn_plugstack_set "record_file=$rec/%n.jsonl" ras_sample=1
	FAKE_NCCL_RAS_BEHIND=1 AS_USER=1 ras_job_start 127.0.0.1 4 -n4 --gres=gpu:4 ||
		return 1
	job=$RAS_JOB
	ras_kill_sampled "$job" || return 1
	sn__wait_for 300 grep -q '"hang":"' "$rec/n1.jsonl" ||
		sn_fail "no hang record: $(cat "$rec/n1.jsonl" 2>&1)"
	python3 -c '
import json, sys
[r] = [json.loads(l) for l in open(sys.argv[1])]
want = "rank 1 (task 1 on n1, GPU 1) has launched AllReduce 1 while the other 3 ranks are at 2"
assert r["hang"] == want, r["hang"]
assert (r["job"], r["step"], r["fault"], r["verdict"]) == (int(sys.argv[2]), 0, "job", "fail"), r
assert r["user"] != "root" and r["signal"] > 0, r
' "$rec/n1.jsonl" "$job" || sn_fail "hang record"
	ras_job_ended
	# scancel --signal=USR1 (KILL is a cancel: TERM first): the tasks die
	# of it, the job goes on ending.
	FAKE_NCCL_RAS_DEAD=1 AS_USER=1 ras_job_start 127.0.0.1 2 -n2 --gres=gpu:2 ||
		return 1
	job=$RAS_JOB
	ras_kill_sampled "$job" --signal=USR1 || return 1
	sn__wait_for 300 grep -q "\"job\":$job,.*\"hang\":\"rank 1 (task 1 on n1, GPU 1) is dead" "$rec/n1.jsonl" ||
		sn_fail "no hang record for --signal=USR1: $(cat "$rec/n1.jsonl")"
	grep -q "\"job\":$job,.*\"signal\":10," "$rec/n1.jsonl" || sn_fail "not signal 10 (USR1)"
	scancel "$job"
	ras_job_ended
	AS_USER=1 ras_job_start 127.0.0.1 2 -n2 --gres=gpu:2 || return 1
	job=$RAS_JOB
	ras_kill_sampled "$job" || return 1
	sn__wait_for 300 ras_killed "$job" || sn_fail "no kill seen for job $job"
	[ "$(wc -l <"$rec/n1.jsonl")" -eq 2 ] ||
		sn_fail "a record for a healthy step: $(cat "$rec/n1.jsonl")"
	ras_job_ended
	sn_plugstack_set "record_file=$rec/%n.jsonl" ras_sample=off
	FAKE_NCCL_RAS_BEHIND=1 AS_USER=1 ras_job_start 127.0.0.1 2 -n2 --gres=gpu:2 ||
		return 1
	job=$RAS_JOB
	scancel "$job"
	ras_job_ended
	! ras_killed "$job" || sn_fail "a sampler with ras_sample=off"
	[ ! -e "$FAKE_NCCL_RAS_DIR/answered" ] || sn_fail "RAS asked with ras_sample=off"
	[ "$(wc -l <"$rec/n1.jsonl")" -eq 2 ] ||
		sn_fail "a record with ras_sample=off: $(cat "$rec/n1.jsonl")"
	validate_records "hang records" <"$rec/n1.jsonl"
}

@test "spank-nccl-status: NCCL before 2.28.7 (text), a step without NCCL, another user's job, NCCL 2.23, ras=off" {
	sn_require_warmup
	FAKE_NCCL_VERSION=22600 FAKE_NCCL_RAS_BEHIND=1 ras_job_start 127.0.0.1 2 -n2 --gres=gpu:2 ||
		return 1
	run --separate-stderr ras_status "$RAS_JOB"
	sn_assert_status 0
	grep -qE '^  Rank 1 has launched up to operation 1 -- GPU 1 managed by process [0-9]+ on node [0-9.]+  \[task 1 on n1\]$' <<<"$output" ||
		sn_fail "RAS's text without the task named"
	run --separate-stderr ras_status --json "$RAS_JOB"
	sn_assert_status 1
	[[ $stderr == *"answers RAS in text only (before 2.28.7): no --json" ]] || sn_fail "--json on text"
	ras_job_stop

	RAS_NO_NCCL=1 ras_job_start 127.0.0.1 1 -n1 || return 1
	run --separate-stderr ras_status "$RAS_JOB"
	sn_assert_status 1
	[ "$stderr" = "spank-nccl: step $RAS_JOB.0 runs no NCCL: none of its 1 processes has libnccl loaded" ] ||
		sn_fail "no NCCL not said"
	AS_USER=1 run --separate-stderr ras_status "$RAS_JOB"
	sn_assert_status 1
	[[ $stderr == "spank-nccl: cannot reach step $RAS_JOB.0 on n1 as you (srun: "*"Access/permission denied)"* ]] ||
		sn_fail "root's job was not refused to the user"
	ras_job_stop
	# NCCL 2.23 (no RAS), installed as libnccl.so.2 -> libnccl.so.2.23.4
	local old=$SN_CLUSTER_DIR/tmp/nccl-2.23.4
	mkdir -p "$old"
	cp "$(sn_fake_dir nccl-alt)/libnccl.so.2" "$old/libnccl.so.2.23.4"
	ln -sf libnccl.so.2.23.4 "$old/libnccl.so.2"
	LD_LIBRARY_PATH=$old ras_job_start 127.0.0.1 1 -n1 --gres=gpu:1 || return 1
	run --separate-stderr ras_status "$RAS_JOB"
	sn_assert_status 1
	[ "$stderr" = "spank-nccl: step $RAS_JOB.0's NCCL is 2.23.4: RAS, which this asks, needs NCCL 2.24 or later" ] ||
		sn_fail "NCCL 2.23 not said"
	ras_job_stop
	sn_plugstack_set ras=off
	ras_job_start 127.0.0.1 1 -n1 --gres=gpu:1 || return 1
	run --separate-stderr ras_status "$RAS_JOB"
	sn_assert_status 1
	[[ $stderr == "spank-nccl: NCCL's RAS is off in step $RAS_JOB.0 "* ]] ||
		sn_fail "ras=off not said"
	[ "$(grep -c 'spank-nccl: ' <<<"$stderr")" -le 3 ] || sn_fail "over 3 lines"
}


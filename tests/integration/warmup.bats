#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# --nccl-warmup on a one-node cluster with four fake GPUs: every helper
# outcome, policies, the deadline, privileges, once per node, quiet
# success, GPU-less steps, and batch jobs.  The fake CUDA runtime and NCCL
# (tests/fake) play each fault; see sn_fake_env in common.bash.

load common

setup_file() { sn_file_setup; }
teardown_file() { sn_file_teardown; }
setup() {
	sn_test_setup
	sn_require_warmup
	MARKER="$SN_CLUSTER_DIR/tmp/ran-$BATS_TEST_NUMBER"
	rm -f "$MARKER"
}

# srun -n2 --gres=gpu:2 --nccl-warmup=MODE touching $MARKER in each task.
warm_srun() {
	local mode=$1
	shift
	sn_srun -n2 --gres=gpu:2 --nccl-warmup="$mode" "$@" touch "$MARKER"
}

# The step ran its tasks / did not.
assert_tasks_ran() {
	[ -e "$MARKER" ] || sn_fail "the tasks did not run"
}
assert_tasks_blocked() {
	[ ! -e "$MARKER" ] || sn_fail "the tasks ran despite the failed warmup"
}

@test "warmup ok: distinct GPUs, quiet success, helper ran once" {
	sn_fake_env ok
	run --separate-stderr warm_srun comm
	sn_assert_status 0
	assert_tasks_ran
	sn_assert_no_msgs
	[ "$(sn_fake_loads)" -eq 1 ] ||
		sn_fail "helper ran $(sn_fake_loads) times, expected 1"
}

@test "warmup verbose: one summary line on success" {
	sn_fake_env ok
	run --separate-stderr warm_srun comm,verbose
	sn_assert_status 0
	assert_tasks_ran
	[ "$(sn_count_msgs 'ok')" -eq 1 ] ||
		sn_fail "expected one summary line"
	sn_assert_msg 'n1'
	sn_assert_msg '0000:01:00\.0'
}

@test "warmup ok: GH200-style bus IDs differing only in the PCI domain" {
	sn_fake_env gh200
	run --separate-stderr warm_srun check,verbose
	sn_assert_status 0
	assert_tasks_ran
	sn_assert_msg '0009:01:00\.0'
}

@test "warmup: duplicate PCI bus ID fails the step, naming node and bus ID" {
	sn_fake_env duplicate
	run --separate-stderr warm_srun comm
	sn_assert_failed
	assert_tasks_blocked
	sn_assert_msg 'n1'
	sn_assert_msg '0000:01:00\.0'
	sn_assert_msg '[Dd]uplicate|same PCI bus ID'
	# One message for the node, not one per task.
	[ "$(sn_count_msgs '0000:01:00\.0')" -eq 1 ] ||
		sn_fail "the failure was reported $(sn_count_msgs '0000:01:00\.0') times"
}

@test "warmup: duplicate bus ID found by check mode too" {
	sn_fake_env duplicate
	run --separate-stderr warm_srun check
	sn_assert_failed
	assert_tasks_blocked
	sn_assert_msg '[Dd]uplicate|same PCI bus ID'
}

@test "warmup: CUDA initialisation failure" {
	sn_fake_env cuda-init-fail
	run --separate-stderr warm_srun comm
	sn_assert_failed
	assert_tasks_blocked
	sn_assert_msg 'CUDA'
	sn_assert_msg 'n1'
}

@test "warmup: NCCL init failure" {
	sn_fake_env nccl-init-fail
	run --separate-stderr warm_srun comm
	sn_assert_failed
	assert_tasks_blocked
	sn_assert_msg 'NCCL'
}

@test "warmup: a crash in NCCL is reported as such" {
	sn_fake_env crash
	run --separate-stderr warm_srun comm
	sn_assert_failed
	assert_tasks_blocked
	sn_assert_msg 'signal|crash'
}

@test "warmup: a wrong all-reduce result fails the step" {
	sn_fake_env wrong-result
	run --separate-stderr warm_srun comm
	sn_assert_failed
	assert_tasks_blocked
	sn_assert_msg '[Ww]rong|result'
}

@test "warmup bandwidth: below warmup_min_busbw fails, above passes" {
	sn_plugstack_set warmup_min_busbw=4
	sn_fake_env slow
	run --separate-stderr warm_srun bandwidth
	sn_assert_failed
	assert_tasks_blocked
	sn_assert_msg '[Bb]andwidth|busbw|GB/s'
	sn_fake_env fast
	run --separate-stderr warm_srun bandwidth,verbose
	sn_assert_status 0
	assert_tasks_ran
	sn_assert_msg 'GB/s'
}

@test "warmup_policy=warn: the failure is printed, the step runs" {
	sn_plugstack_set warmup_policy=warn
	sn_fake_env duplicate
	run --separate-stderr warm_srun comm
	sn_assert_status 0
	assert_tasks_ran
	sn_assert_msg '[Dd]uplicate|same PCI bus ID'
	sn_assert_msg 'warn'
}

@test "warmup_policy=fail is the default and can be set explicitly" {
	sn_plugstack_set warmup_policy=fail
	sn_fake_env duplicate
	run --separate-stderr warm_srun comm
	sn_assert_failed
	assert_tasks_blocked
}

@test "warmup timeout: a hung NCCL init is killed at its deadline, nothing left" {
	local t0 t1 elapsed_ms
	sn_plugstack_set warmup_timeout=2
	sn_fake_env hang
	t0=$EPOCHREALTIME
	run --separate-stderr warm_srun comm
	t1=$EPOCHREALTIME
	elapsed_ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", (b - a) * 1000 }')
	sn_assert_failed
	assert_tasks_blocked
	sn_assert_msg '2 s|timed out|timeout|did not finish'
	# The fake init hangs forever: without the deadline srun would wait
	# for the test's own timeout (SN_TIMEOUT).  No tighter bound: speed
	# lives in bench/, and a loaded CI machine adds seconds to any srun.
	[ "$elapsed_ms" -le 15000 ] ||
		sn_fail "srun took $elapsed_ms ms with warmup_timeout=2"
	[ "$elapsed_ms" -ge 1500 ] ||
		sn_fail "srun returned after $elapsed_ms ms: the hang was not simulated"
	# The plugin reaps the helper before the step ends; wait on that event.
	sn__wait_for 50 test -z "$(sn_helper_procs)" ||
		sn_fail "nccl-warmup still running: $(sn_helper_procs)"
}

@test "warmup as the unprivileged user: helper's real/effective/saved ids are the user's" {
	local uid gid line
	uid=$(id -u "$SN_USER")
	gid=$(id -g "$SN_USER")
	sn_fake_env ok
	run --separate-stderr sn_as_user env LD_LIBRARY_PATH="$LD_LIBRARY_PATH" \
		FAKE_CUDA_LOG="$FAKE_CUDA_LOG" timeout 30 srun -n2 --gres=gpu:2 \
		--nccl-warmup=comm printenv SLURM_JOB_ID
	sn_assert_status 0
	line=$(grep '^lib=cuda ' "$SN_FAKE_LOG") ||
		sn_fail "the helper did not run"
	[ "$(wc -l <<<"$line")" -eq 1 ] || sn_fail "helper ran more than once"
	grep -q " uid=$uid/$uid/$uid gid=$gid/$gid/$gid\$" <<<"$line" ||
		sn_fail "helper ids: $line (want uid $uid gid $gid)"
	# The plugin logs the helper's own report (ids included) on the node.
	local job
	job=$(head -n1 <<<"$output")
	grep "job $job step" "$(sn_slurmd_log n1)" |
		grep -q "\"uid\":\[$uid,$uid,$uid\],\"gid\":\[$gid,$gid,$gid\]" ||
		sn_fail "slurmd log lacks the helper's ids for job $job"
	# Supplementary groups are the user's, not root's.
	local extra
	extra=$(getent group "$SN_USER_GROUP2" | cut -d: -f3)
	grep "job $job step" "$(sn_slurmd_log n1)" |
		grep -q "\"groups\":\[[0-9,]*\b$extra\b" ||
		sn_fail "helper lacks the user's supplementary group $extra"
	! grep "job $job step" "$(sn_slurmd_log n1)" |
		grep -q '"groups":\[0[],]' ||
		sn_fail "helper kept root's group"
}

@test "warmup runs once per node: -n4 on one node" {
	local job
	sn_fake_env ok
	run --separate-stderr sn_srun -n4 --gres=gpu:4 --nccl-warmup=comm \
		printenv SLURM_JOB_ID
	sn_assert_status 0
	[ "$(sn_fake_loads)" -eq 1 ] ||
		sn_fail "helper ran $(sn_fake_loads) times, expected 1"
	job=$(head -n1 <<<"$output")
	[ "$(sn_warmup_runs n1 "$job")" -eq 1 ] ||
		sn_fail "slurmd log shows $(sn_warmup_runs n1 "$job") runs"
}

# What it costs is bench/'s business (no timed assertions here): the step
# must not start the helper at all, and slurmd's log must say why.
@test "warmup: a step without GPUs skips the helper" {
	local job
	sn_fake_env ok
	run --separate-stderr sn_srun -n2 --nccl-warmup=comm sh -c \
		'touch "$0"; [ "$SLURM_PROCID" != 0 ] || echo "$SLURM_JOB_ID"' \
		"$MARKER"
	sn_assert_status 0
	assert_tasks_ran
	sn_assert_no_msgs
	[ "$(sn_fake_loads)" -eq 0 ] || sn_fail "helper ran without GPUs"
	job=$(head -n1 <<<"$output")
	grep -q "job $job step [0-9]* on .*: no GPUs in this step, warmup skipped" \
		"$(sn_slurmd_log n1)" ||
		sn_fail "slurmd log of job $job does not say the warmup was skipped"
}

@test "warmup off: --nccl-warmup=off runs nothing" {
	sn_fake_env duplicate
	run --separate-stderr warm_srun off
	sn_assert_status 0
	assert_tasks_ran
	[ "$(sn_fake_loads)" -eq 0 ] || sn_fail "helper ran with mode off"
}

@test "warmup: no option, no helper" {
	sn_fake_env duplicate
	run --separate-stderr sn_srun -n2 --gres=gpu:2 touch "$MARKER"
	sn_assert_status 0
	assert_tasks_ran
	[ "$(sn_fake_loads)" -eq 0 ] || sn_fail "helper ran without the option"
}

@test "warmup env-var form: SPANK_NCCL_WARMUP=comm" {
	sn_fake_env duplicate
	SPANK_NCCL_WARMUP=comm run --separate-stderr \
		sn_srun -n2 --gres=gpu:2 touch "$MARKER"
	sn_assert_failed
	assert_tasks_blocked
	sn_assert_msg '[Dd]uplicate|same PCI bus ID'
}

@test "warmup: bare --nccl-warmup uses the site's warmup_mode" {
	sn_plugstack_set warmup_mode=check
	sn_fake_env ok
	run --separate-stderr sn_srun -n1 --gres=gpu:2 --nccl-warmup \
		printenv SLURM_JOB_ID
	sn_assert_status 0
	local job
	job=$(head -n1 <<<"$output")
	grep "job $job step" "$(sn_slurmd_log n1)" |
		grep -q '"mode":"check"' || sn_fail "helper not run in check mode"
}

@test "warmup: a missing helper (admin error) fails the step with a clear message" {
	sn_plugstack_set warmup_helper=/nonexistent/nccl-warmup
	sn_fake_env ok
	run --separate-stderr warm_srun comm
	sn_assert_failed
	assert_tasks_blocked
	sn_assert_msg '/nonexistent/nccl-warmup'
}

@test "sbatch: #SBATCH --nccl-warmup runs in the batch step; each srun step on the same GPUs reuses it" {
	local script
	sn_fake_env ok
	script=$(sn_batch_script warm-batch.sh <<'S'
#!/bin/bash
#SBATCH --gres=gpu:2
#SBATCH --nccl-warmup=comm
srun true
srun true
S
)
	sn_sbatch_run "$script" || sn_fail "sbatch failed"
	[ "$SN_JOB_EXIT" = "0:0" ] || sn_fail "job exit $SN_JOB_EXIT: $SN_JOB_OUT"
	# The batch step runs it; the two steps reuse its pass (reuse.bats).
	[ "$(sn_fake_loads)" -eq 1 ] ||
		sn_fail "helper ran $(sn_fake_loads) times, expected 1"
	[ "$(sn_warmup_runs n1 "$SN_JOB_ID")" -eq 1 ] ||
		sn_fail "slurmd log shows $(sn_warmup_runs n1 "$SN_JOB_ID") runs"
	[ "$(grep -cE "job $SN_JOB_ID step [01] on n1: nccl-warmup reused" \
		"$(sn_slurmd_log n1)")" -eq 2 ] || sn_fail "steps 0 and 1 did not reuse"
}

@test "sbatch: a failing warmup fails the batch job without draining the node" {
	local script state
	sn_fake_env duplicate
	script=$(sn_batch_script warm-batch-fail.sh <<S
#!/bin/bash
#SBATCH --gres=gpu:2
#SBATCH --nccl-warmup=comm
touch $MARKER
S
)
	sn_sbatch_run "$script" || sn_fail "sbatch failed"
	[ "$SN_JOB_EXIT" != "0:0" ] || sn_fail "job succeeded: $SN_JOB_OUT"
	assert_tasks_blocked
	state=$(sn_node_settled n1)
	[ "$state" = idle ] || sn_fail "node n1 is $state after the failed job"
	sn_assert_msg '[Dd]uplicate|same PCI bus ID' "$SN_JOB_OUT"
}

# ---------------------------------------------------------------------
# Which NCCL the warmup loads: the job's preload, the step's nccl=, the
# job's LD_LIBRARY_PATH, the site's warmup_nccl=, the system (in order).

@test "warmup names the driver and the NCCL it loaded, everywhere" {
	local nccl
	nccl=$(sn_fake_dir nccl)/libnccl.so.2
	sn_fake_env ok
	run --separate-stderr warm_srun comm,verbose
	sn_assert_status 0
	assert_tasks_ran
	sn_assert_msg "driver CUDA [0-9]+\.[0-9]+, NCCL [0-9.]+ from $nccl \(ld_library_path\)"
	# slurmd's log keeps the helper's JSON: path, source, collectives.
	grep -q "\"nccl_path\":\"$nccl\",\"nccl_source\":\"ld_library_path\"" \
		"$(sn_slurmd_log)" || sn_fail "slurmd log lacks the NCCL path"
	grep -q '"collectives":{"allreduce":[0-9.]*,"broadcast":[0-9.]*,"allgather":[0-9.]*,"reducescatter":[0-9.]*,"sendrecv":' \
		"$(sn_slurmd_log)" || sn_fail "slurmd log lacks the collectives"
}

@test "warmup: nccl=PATH names the step's NCCL; a preloaded NCCL wins over it" {
	local alt
	alt=$(sn_fake_dir nccl-alt)
	sn_fake_env ok
	run --separate-stderr warm_srun "comm,verbose,nccl=$alt"
	sn_assert_status 0
	assert_tasks_ran
	sn_assert_msg "NCCL 2\.23\.4 from $alt/libnccl\.so\.2 \(user\)"
	rm -f "$MARKER"
	# Two NCCLs on the node: the job preloads one, names the other.
	LD_PRELOAD=$alt/libnccl.so.2 run --separate-stderr \
		warm_srun "comm,verbose,nccl=$(sn_fake_dir nccl)"
	sn_assert_status 0
	sn_assert_msg "NCCL 2\.23\.4 from $alt/libnccl\.so\.2 \(preload\)"
}

@test "warmup: warmup_nccl= in plugstack.conf after the job's LD_LIBRARY_PATH" {
	local alt
	alt=$(sn_fake_dir nccl-alt)
	sn_plugstack_set "warmup_nccl=$alt"
	sn_fake_env ok
	run --separate-stderr warm_srun comm,verbose
	sn_assert_status 0
	sn_assert_msg "from $(sn_fake_dir nccl)/libnccl\.so\.2 \(ld_library_path\)"
	rm -f "$MARKER"
	LD_LIBRARY_PATH=$(sn_fake_dir cuda) run --separate-stderr \
		warm_srun comm,verbose
	sn_assert_status 0
	assert_tasks_ran
	sn_assert_msg "NCCL 2\.23\.4 from $alt/libnccl\.so\.2 \(admin\)"
}

@test "warmup: nccl= of an NCCL without ncclCommInitRankConfig fails, naming it" {
	sn_fake_env ok
	run --separate-stderr warm_srun "comm,nccl=$(sn_fake_dir nccl-old)"
	sn_assert_failed
	assert_tasks_blocked
	sn_assert_msg "lacks ncclCommInitRankConfig: NCCL 2\.14 or newer is needed"
}

@test "warmup: a bad nccl= is refused at submission with the fix" {
	sn_fake_env ok
	run --separate-stderr warm_srun "comm,nccl=lib/libnccl.so.2"
	sn_assert_failed
	assert_tasks_blocked
	sn_assert_msg "nccl= needs the absolute path of libnccl\.so\.2"
}

@test "warmup: NCCL_ALGO=Tree in the job fails the step before its tasks, naming broadcast" {
	sn_fake_env ok
	NCCL_ALGO=Tree run --separate-stderr warm_srun comm
	sn_assert_failed
	assert_tasks_blocked
	sn_assert_msg "NCCL broadcast failed"
	# The setting and its fix, on the first line; no advice to use a
	# profile the user may already have asked for (issue 31).
	sn_assert_msg "warmup failed on node n1 .*NCCL_ALGO=Tree leaves it no algorithm on NCCL >= 2.24: unset NCCL_ALGO$"
	! grep -q -- "--nccl-profile=" <<<"$stderr" ||
		sn_fail "advises a profile: $stderr"
	grep -q '"failed_op":"broadcast"' "$(sn_slurmd_log)" ||
		sn_fail "slurmd log lacks failed_op"
}

# ---------------------------------------------------------------------
# The helper's result travels on a pipe of its own (--result-fd), never
# stdout, where NCCL writes its log when NCCL_DEBUG is set and
# NCCL_DEBUG_FILE is not (the fake NCCL as the real one), and where CUDA,
# a net plugin or the job's LD_PRELOAD may print anything.

# warm_srun with NCCL's log on (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=ALL)
# and a preload printing a fake JSON and junk on stdout and stderr
# (tests/fake/junk_preload.c), for the job's processes, not srun's own.
junk_srun() {
	local mode=$1
	shift
	warm_srun "$mode" --export="ALL,LD_PRELOAD=$(sn_fake_dir junk)/libjunk.so,NCCL_DEBUG=INFO,NCCL_DEBUG_SUBSYS=ALL$*"
}

# The plugin's messages on srun's stderr, without NCCL's log lines ("| ")
# and the task's own junk (the preload, in the tasks too, forges one).
own_msgs() {
	grep -E "$SN_MSG_RE" <<<"$stderr" |
		grep -vE "spank-nccl: (\| |NCCL's log of|junk-preload)" || true
}

@test "warmup: NCCL_DEBUG=INFO and a preload's junk never hide the result, in every mode" {
	local mode job summary n
	sn_require_file "$(sn_fake_dir junk)/libjunk.so" "junk preload not built (make check)"
	sn_fake_env ok
	for mode in check comm bandwidth fabric; do
		run --separate-stderr junk_srun "$mode,verbose"
		sn_assert_status 0
		assert_tasks_ran
		# The summary is the helper's, whole: node, GPUs, NCCL path.
		summary=$(own_msgs)
		[ "$(wc -l <<<"$summary")" -eq 1 ] || sn_fail "$mode: not one summary: $summary"
		grep -qE "warmup ok on n1: 2 GPUs \[.*NCCL [0-9.]+ from $(sn_fake_dir nccl)/libnccl.so.2 .*$mode mode" \
			<<<"$summary" || sn_fail "$mode: summary: $summary"
		! grep -q FAKE-JSON <<<"$summary" || sn_fail "$mode: the preload's JSON won"
		job=$(sn_timeout squeue -h -t all -o %i | sort -n | tail -n1)
		grep -q "job $job step 0 on n1: nccl-warmup passed in [0-9]* ms: {\"version\":1,\"node\":\"n1\",\"mode\":\"$mode\"" \
			"$(sn_slurmd_log n1)" || sn_fail "$mode: slurmd's log lacks the result"
		! grep -q "job $job step 0 on n1: .*(no result)" "$(sn_slurmd_log n1)" ||
			sn_fail "$mode: (no result) in slurmd's log"
		# NCCL's log (not in check mode, which runs no NCCL; fabric mode
		# copies it from its own memfd): its last lines, under a header.
		case $mode in
		comm | bandwidth | fabric)
			n=$(grep -oE "spank-nccl: NCCL's log of the warmup on node n1 \(NCCL_DEBUG=INFO, its stdout\), the last [0-9]+ lines:$" <<<"$stderr" |
			    grep -oE '[0-9]+ lines' | cut -d' ' -f1)
			[ -n "$n" ] && [ "$n" -le 20 ] || sn_fail "$mode: no header"
			[ "$(sn_count_msgs "NCCL's log of")" -eq 1 ] ||
				sn_fail "$mode: not one header"
			[ "$(sn_count_msgs 'spank-nccl: \| ')" -eq "$n" ] ||
				sn_fail "$mode: not $n log lines"
			sn_assert_msg 'spank-nccl: \| .* NCCL INFO ' ;;
		*)
			[ "$(sn_count_msgs "NCCL INFO")" -eq 0 ] ||
				sn_fail "$mode: NCCL's log shown" ;;
		esac
	done
}

@test "warmup: with NCCL_DEBUG=INFO a failure is the helper's own message, then NCCL's last lines" {
	local mode
	sn_require_file "$(sn_fake_dir junk)/libjunk.so" "junk preload not built (make check)"
	sn_fake_env nccl-init-fail
	for mode in comm fabric; do
		run --separate-stderr junk_srun $mode
		sn_assert_failed
		assert_tasks_blocked
		[ "$(sn_count_msgs 'warmup failed on node n1')" -eq 1 ] || sn_fail "$mode: not one failure"
		sn_assert_msg 'warmup failed on node n1 \(GPUs 0,1\): NCCL'
		# Not the helper's stderr summary nested in the plugin's (no result).
		[ "$(own_msgs | grep -cE 'FAILED on n1|FAKE-JSON|exit code 5\)')" -eq 0 ] ||
			sn_fail "$mode: the result was lost"
		[ "$(sn_count_msgs "NCCL's log of the warmup on node n1")" -eq 1 ] ||
			sn_fail "$mode: not one header"
		sn_assert_msg 'spank-nccl: \| .* NCCL INFO '
	done
}

# Fabric mode reads NCCL's log itself and appends the job's lines to its
# file at the end, %h expanded as NCCL does (the node's hostname, n1 in
# its own UTS namespace; the fake NCCL expands none).
@test "warmup: the user's NCCL_DEBUG_FILE gets NCCL's log; none on the terminal" {
	local mode file want f=$SN_CLUSTER_DIR/tmp/nccl-debug-$BATS_TEST_NUMBER
	sn_require_file "$(sn_fake_dir junk)/libjunk.so" "junk preload not built (make check)"
	sn_fake_env ok
	for mode in comm fabric; do
		file=$f-$mode want=$f-$mode
		rm -f "$want"
		[ "$mode" = comm ] || file=$file-%h want=$want-n1
		[ "$mode" = comm ] || echo "the job's own line" >"$want"
		run --separate-stderr junk_srun "$mode,verbose" ",NCCL_DEBUG_FILE=$file"
		sn_assert_status 0
		sn_assert_msg 'warmup ok on n1: 2 GPUs'
		[ "$(sn_count_msgs "NCCL's log|NCCL INFO")" -eq 0 ] || sn_fail "$mode: NCCL's log on the terminal"
		grep -q ' NCCL INFO ' "$want" || sn_fail "$mode: no NCCL log in $want"
	done
	# Appended to (O_APPEND), as the job's other processes may write there.
	[ "$(head -n1 "$want")" = "the job's own line" ] || sn_fail "$want truncated"
}

@test "warmup: verbose on a step without GPUs says it was skipped and why, once" {
	local mode
	sn_fake_env ok
	for mode in comm,verbose check,verbose; do
		run --separate-stderr sn_srun -n2 --nccl-warmup=$mode touch "$MARKER"
		sn_assert_status 0
		assert_tasks_ran
		[ "$(sn_count_msgs .)" -eq 1 ] || sn_fail "$mode: not one line"
		sn_assert_msg 'spank-nccl: warmup skipped on node n1: the step has no GPUs there \(none requested with --gres=gpu:N or --gpus\)$'
	done
	[ "$(sn_fake_loads)" -eq 0 ] || sn_fail "helper ran without GPUs"
}

# docs/user-guide.md, "Reading a verdict later": a batch job's stderr
# file keeps each step's warmup lines, the batch step's and every srun's.
@test "sbatch: each step's warmup verdict is in the job's stderr file" {
	local script err
	sn_fake_env ok
	script=$(sn_batch_script warm-verdicts.sh <<S
#!/bin/bash
#SBATCH --gres=gpu:2
#SBATCH -e $SN_CLUSTER_DIR/tmp/job-%j.err
srun --nccl-warmup=comm,verbose,fresh true
FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0 srun --nccl-warmup=comm,fresh true
exit 0
S
)
	sn_sbatch_run "$script" || sn_fail "sbatch failed"
	err=$(cat "$SN_CLUSTER_DIR/tmp/job-$SN_JOB_ID.err") || sn_fail "no stderr file"
	sn_assert_msg 'warmup ok on n1: 2 GPUs' "$err"
	sn_assert_msg 'warmup failed on node n1 \(GPUs 0,1\): duplicate PCI bus ID' "$err"
	[ "$(sn_count_msgs . "$SN_JOB_OUT")" -eq 0 ] ||
		sn_fail "spank-nccl lines in the -o file: $SN_JOB_OUT"
}

# docs/user-guide.md shows the lines a failed node gives: the plugin's
# three (what, why, what to do), then srun's; no Slurm line per task
# (task_init ends them).
@test "warmup: a failed node prints three lines and srun's, whatever the task count" {
	sn_fake_env duplicate
	run --separate-stderr sn_srun -n4 --gres=gpu:4 --nccl-warmup=comm touch "$MARKER"
	sn_assert_failed
	assert_tasks_blocked
	[ "$(wc -l <<<"$stderr")" -eq 4 ] || sn_fail "not four lines"
	sn_assert_msg 'warmup failed on node n1 \(GPUs 0,1,2,3\): duplicate PCI bus ID'
	grep -qx 'srun: error: n1: tasks 0-3: Exited with exit code 1' <<<"$stderr" ||
		sn_fail "no srun line"
}

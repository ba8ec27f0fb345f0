#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# Warmup reuse on a one-node cluster with four fake GPUs: one warmup per
# node, GPU set, NCCL library and NCCL_* settings per job (docs/design.md,
# "Warmup reuse").  The issue-11 batch script; what warms again (other
# GPUs, other NCCL_*, other library path, a more thorough mode, ',fresh');
# warmup_reuse=no; records as root only, unforgeable by the job user;
# removal at the job's end (batch step) and by the next warmup step
# (jobs without a batch step), which keeps the records of jobs whose
# slurmstepd runs and not of those only a forged process title names.
# Counts come from the fake libcuda's load log (one line per helper run)
# and the plugin's slurmd log lines.

load common

setup_file() { sn_file_setup; }
teardown_file() { sn_file_teardown; }
setup() {
	sn_test_setup
	sn_require_warmup
	REUSE_DIR="$SN_CLUSTER_DIR/run/spank-nccl"
	SYNC="$SN_CLUSTER_DIR/tmp/sync-$BATS_TEST_NUMBER"
	rm -rf "$SYNC"
	mkdir -p "$SYNC"
	chmod 0777 "$SYNC"
}

# "nccl-warmup reused" lines for job $1 on n1.
reuse_lines() {
	grep -cE "job $1 step [0-9]+ on n1: nccl-warmup reused" \
		"$(sn_slurmd_log n1)" || true
}

# Waits (deadline 30 s) until file $1 exists.
wait_file() {
	local t=0
	until [ -e "$1" ]; do
		((t++ < 300)) || return 1
		sleep 0.1
	done
}

# A process titled "slurmstepd: [$1]" (sleep under exec -a) that is not
# slurmstepd, run by "$2" (e.g. sn_as_user) or root; its pid in $SYNC.
forge_title() {
	local pidfile="$SYNC/forged-$1" t=0
	${2:-} bash -c 'echo $$ >"$1"; exec -a "slurmstepd: [$2]" sleep 60' \
		forge "$pidfile" "$1" &
	wait_file "$pidfile" || sn_fail "no forged process for $1"
	until grep -q "^slurmstepd: \[$1\]" "/proc/$(cat "$pidfile")/cmdline" \
		2>/dev/null; do
		((t++ < 100)) || sn_fail "no process titled slurmstepd: [$1]"
		sleep 0.1
	done
}

@test "reuse: the issue's batch script: bare #SBATCH --nccl-warmup, srun, srun =off: one warmup" {
	local script
	sn_fake_env ok
	script=$(sn_batch_script reuse-issue.sh <<'S'
#!/bin/bash
#SBATCH --nccl-warmup
#SBATCH --gres=gpu:2
srun true && echo srun1-ok
srun --nccl-warmup=off true && echo srun2-ok
S
)
	sn_sbatch_run "$script" || sn_fail "sbatch failed"
	[ "$SN_JOB_EXIT" = "0:0" ] || sn_fail "job exit $SN_JOB_EXIT: $SN_JOB_OUT"
	grep -qx srun1-ok <<<"$SN_JOB_OUT" && grep -qx srun2-ok <<<"$SN_JOB_OUT" ||
		sn_fail "an srun failed: $SN_JOB_OUT"
	if grep -q 'spank-nccl\|Invalid argument' <<<"$SN_JOB_OUT"; then
		sn_fail "messages in a quiet job: $SN_JOB_OUT"
	fi
	[ "$(sn_fake_loads)" -eq 1 ] ||
		sn_fail "helper ran $(sn_fake_loads) times, expected 1 (batch step)"
	[ "$(sn_warmup_runs n1 "$SN_JOB_ID")" -eq 1 ] ||
		sn_fail "slurmd log: $(sn_warmup_runs n1 "$SN_JOB_ID") runs"
	[ "$(reuse_lines "$SN_JOB_ID")" -eq 1 ] ||
		sn_fail "slurmd log: $(reuse_lines "$SN_JOB_ID") reuses, expected 1 (srun 1; srun 2 is off)"
	# The batch step's exit removed the job's records.
	[ ! -e "$REUSE_DIR/job-$SN_JOB_ID" ] ||
		sn_fail "records of job $SN_JOB_ID outlived it: $(ls -la "$REUSE_DIR/job-$SN_JOB_ID")"
}

@test "reuse: other GPUs, NCCL_*, library path and a more thorough mode warm again; same ones reuse; fresh; verbose says so" {
	local script
	sn_fake_env ok
	script=$(sn_batch_script reuse-keys.sh <<S
#!/bin/bash
#SBATCH --gres=gpu:4
#SBATCH --nccl-warmup=check
srun --gres=gpu:2 true                                  # run 2: GPUs 0,1
srun --gres=gpu:2 --nccl-warmup=check,verbose true      # reused
srun --nccl-warmup=comm true                            # run 3: comm > check
srun --nccl-warmup=check true                           # reused (comm covers)
NCCL_ALGO=Ring srun --nccl-warmup=comm true             # run 4: NCCL_*
LD_LIBRARY_PATH=$(sn_fake_lib_dir):/nonexistent srun true # run 5: library path
srun --nccl-warmup=check,fresh true                     # run 6: fresh
S
)
	sn_sbatch_run "$script" || sn_fail "sbatch failed"
	[ "$SN_JOB_EXIT" = "0:0" ] || sn_fail "job exit $SN_JOB_EXIT: $SN_JOB_OUT"
	[ "$(sn_fake_loads)" -eq 6 ] ||
		sn_fail "helper ran $(sn_fake_loads) times, expected 6"
	[ "$(reuse_lines "$SN_JOB_ID")" -eq 2 ] ||
		sn_fail "$(reuse_lines "$SN_JOB_ID") reuses, expected 2"
	sn_assert_msg 'warmup ok on n1: reused the check-mode pass of step 0 of this job' \
		"$SN_JOB_OUT"
	[ "$(sn_count_msgs 'reused' "$SN_JOB_OUT")" -eq 1 ] ||
		sn_fail "reuse told to the user without verbose: $SN_JOB_OUT"
}

@test "reuse: warmup_reuse=no runs the helper in every step" {
	local script
	sn_plugstack_set warmup_reuse=no
	sn_fake_env ok
	script=$(sn_batch_script reuse-off.sh <<'S'
#!/bin/bash
#SBATCH --nccl-warmup=comm
#SBATCH --gres=gpu:2
srun true
srun true
S
)
	sn_sbatch_run "$script" || sn_fail "sbatch failed"
	[ "$SN_JOB_EXIT" = "0:0" ] || sn_fail "job exit $SN_JOB_EXIT: $SN_JOB_OUT"
	[ "$(sn_fake_loads)" -eq 3 ] ||
		sn_fail "helper ran $(sn_fake_loads) times, expected 3"
	[ "$(reuse_lines "$SN_JOB_ID")" -eq 0 ] || sn_fail "reused"
	[ ! -e "$REUSE_DIR/job-$SN_JOB_ID" ] || sn_fail "a record was written"
}

@test "reuse: a failed warmup is never reused" {
	local script
	sn_fake_env duplicate
	script=$(sn_batch_script reuse-fail.sh <<'S'
#!/bin/bash
#SBATCH --gres=gpu:2
srun --nccl-warmup=comm true; echo "rc=$?"
srun --nccl-warmup=comm true; echo "rc=$?"
S
)
	sn_sbatch_run "$script" || sn_fail "sbatch failed"
	[ "$(grep -cx 'rc=1' <<<"$SN_JOB_OUT")" -eq 2 ] ||
		sn_fail "both sruns must fail: $SN_JOB_OUT"
	[ "$(sn_fake_loads)" -eq 2 ] ||
		sn_fail "helper ran $(sn_fake_loads) times, expected 2"
	[ "$(reuse_lines "$SN_JOB_ID")" -eq 0 ] || sn_fail "a failure was reused"
}

@test "reuse: as the job user: records are root's 0700, the user cannot write, read or forge one" {
	local script job rec forged
	sn_fake_env ok
	script=$(sn_batch_script reuse-user.sh <<S
#!/bin/bash
#SBATCH --gres=gpu:2
#SBATCH --nccl-warmup=comm
d=$REUSE_DIR/job-\$SLURM_JOB_ID
ls "\$d" >/dev/null 2>&1 && echo user-can-list
touch "\$d/forged" 2>/dev/null && echo user-can-write
touch "$REUSE_DIR/job-999999" 2>/dev/null && echo user-can-write-base
echo "\$SLURM_JOB_ID" > $SYNC/ready
for ((t = 0; t < 300; t++)); do [ -e $SYNC/go ] && break; sleep 0.1; done
srun --nccl-warmup=comm,verbose true && echo srun-ok
S
)
	job=$(sn_as_user env LD_LIBRARY_PATH="$LD_LIBRARY_PATH" \
		FAKE_CUDA_LOG="$FAKE_CUDA_LOG" timeout 30 sbatch --parsable \
		-o "$SN_CLUSTER_DIR/tmp/job-%j.out" "$script") ||
		sn_fail "sbatch as $SN_USER failed"
	job=${job%%;*}
	wait_file "$SYNC/ready" || { touch "$SYNC/go"; sn_fail "job $job never got ready"; }
	# The batch step's pass, written by root, not readable by anyone else.
	rec=$(find "$REUSE_DIR/job-$job" -type f) || true
	[ "$(wc -l <<<"$rec")" -eq 1 ] && [ -n "$rec" ] ||
		{ touch "$SYNC/go"; sn_fail "expected one record: [$rec]"; }
	[ "$(stat -c '%U %a' "$REUSE_DIR")" = "root 700" ] &&
	[ "$(stat -c '%U %a' "$REUSE_DIR/job-$job")" = "root 700" ] &&
	[ "$(stat -c '%U %a %h' "$rec")" = "root 600 1" ] ||
		{ touch "$SYNC/go"; sn_fail "modes: $(stat -c '%n %U %a %h' "$REUSE_DIR" "$REUSE_DIR/job-$job" "$rec")"; }
	grep -q "^uid=$(id -u "$SN_USER")\$" "$rec" ||
		{ touch "$SYNC/go"; sn_fail "record: $(cat "$rec")"; }
	# What a user could only get by a bug elsewhere: the same, valid
	# record but owned by the user.  It must not be believed.
	chown "$SN_USER" "$rec"
	touch "$SYNC/go"
	sn_wait_job "$job" || sn_fail "job $job stuck"
	SN_JOB_OUT=$(cat "$SN_CLUSTER_DIR/tmp/job-$job.out")
	grep -qx srun-ok <<<"$SN_JOB_OUT" || sn_fail "srun failed: $SN_JOB_OUT"
	if grep -q 'user-can' <<<"$SN_JOB_OUT"; then
		sn_fail "the job user reached the records: $SN_JOB_OUT"
	fi
	[ "$(sn_fake_loads)" -eq 2 ] ||
		sn_fail "helper ran $(sn_fake_loads) times: the forged record was used"
	grep -q "job $job step 0 on n1: warmup record not reused: owned by uid $(id -u "$SN_USER"), not root" \
		"$(sn_slurmd_log n1)" || sn_fail "slurmd log does not name the forgery"
	# Both runs passed as the user (the helper drops to the job user).
	grep -q " uid=$(id -u "$SN_USER")/" "$SN_FAKE_LOG" || sn_fail "helper ids"
	[ ! -e "$REUSE_DIR/job-$job" ] || sn_fail "records outlived job $job"
	forged=$(ls "$REUSE_DIR")
	[ -z "$forged" ] || sn_fail "left in $REUSE_DIR: $forged"
}

@test "reuse: an allocation without a batch step: its records go with the next warmup step on the node" {
	local job out
	sn_fake_env ok
	out=$(SN_TIMEOUT=60 sn_salloc --gres=gpu:2 sh -c \
		'srun --nccl-warmup=comm true && srun --nccl-warmup=comm true && echo "job=$SLURM_JOB_ID"' 2>&1) ||
		sn_fail "salloc failed: $out"
	job=$(sed -n 's/^job=//p' <<<"$out")
	[ -n "$job" ] || sn_fail "no job id: $out"
	sn_wait_job "$job" || sn_fail "allocation $job stuck"
	[ "$(sn_fake_loads)" -eq 1 ] ||
		sn_fail "helper ran $(sn_fake_loads) times in the allocation, expected 1"
	[ "$(reuse_lines "$job")" -eq 1 ] || sn_fail "second srun did not reuse"
	# No batch step and no extern step (no PrologFlags=contain here):
	# nothing ran at the allocation's end ...
	[ -d "$REUSE_DIR/job-$job" ] ||
		sn_fail "expected job $job's records until the next warmup step"
	# ... so the next warmup step on the node removes them, even with
	# processes titled as the job's slurmstepd (any user can set a title:
	# only root's slurmstepd executable counts, src/core/fleet/reuse.c).
	forge_title "$job.0" sn_as_user
	forge_title "$job.1"
	run --separate-stderr sn_srun --gres=gpu:1 --nccl-warmup=check true
	kill "$(cat "$SYNC/forged-$job.0")" "$(cat "$SYNC/forged-$job.1")"
	sn_assert_status 0
	[ ! -e "$REUSE_DIR/job-$job" ] || sn_fail "stale records of job $job kept"
	grep -q "removed the records of job $job (no step left on this node)" \
		"$(sn_slurmd_log n1)" || sn_fail "slurmd log lacks the removal"
}

@test "reuse: another job's warmup step keeps the records of a job whose step still runs" {
	local job pid
	sn_fake_env ok
	# The step holds until $SYNC/go: its slurmstepd (root, Slurm's
	# executable, the job's title) is what keeps the records.
	SN_TIMEOUT=60 sn_salloc --gres=gpu:2 srun --nccl-warmup=comm sh -c \
		"echo \$SLURM_JOB_ID >$SYNC/ready; for t in \$(seq 300); do [ -e $SYNC/go ] && exit 0; sleep 0.1; done; exit 1" \
		>"$SYNC/out" 2>&1 &
	pid=$!
	wait_file "$SYNC/ready" ||
		{ touch "$SYNC/go"; sn_fail "the step never started: $(cat "$SYNC/out")"; }
	job=$(cat "$SYNC/ready")
	[ -d "$REUSE_DIR/job-$job" ] ||
		{ touch "$SYNC/go"; sn_fail "no records for job $job"; }
	run --separate-stderr sn_srun --gres=gpu:1 --nccl-warmup=check true
	touch "$SYNC/go"
	sn_assert_status 0
	[ -d "$REUSE_DIR/job-$job" ] ||
		sn_fail "records of job $job removed while its step ran"
	wait "$pid" || sn_fail "salloc failed: $(cat "$SYNC/out")"
	sn_wait_job "$job" || sn_fail "allocation $job stuck"
	# Its slurmstepds gone, the next warmup step removes them.
	run --separate-stderr sn_srun --gres=gpu:1 --nccl-warmup=check true
	sn_assert_status 0
	[ ! -e "$REUSE_DIR/job-$job" ] || sn_fail "stale records of job $job kept"
}

#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# Load: 50 steps at once on one node, each with a profile and a fake-GPU
# warmup (the real nccl-warmup on the fake CUDA/NCCL), beside 5 control
# steps without the plugin's work.  All succeed; while every step is in
# its task phase, each warmup step's slurmstepd holds exactly as many
# descriptors as a control step's (no pipe or /proc handle leaked by the
# warmup), no slurmstepd has a zombie child, and no helper is left; after
# the steps, nothing is left at all.  The steps ask for a fresh warmup
# (they share node, GPU 0 and settings, so they would reuse each other's).
#
# The node advertises 64 CPUs (the hardware is not checked).  The steps
# share one allocation of all four fake GPUs with --overlap, so each gets
# a real CUDA_VISIBLE_DEVICES from Slurm.

SN_CPUS=64
load common
load helpers/faults

N_WARM=50
N_CONTROL=5

setup_file() {
	sn_file_setup
}
teardown_file() { sn_file_teardown; }
setup() {
	sn_test_setup
	sn_require_warmup
	BARRIER=
}
# A failed check must not leave 55 tasks waiting for their deadline.
teardown() {
	[ -z "$BARRIER" ] || touch "$BARRIER"
}

# "PID PPID STATE" of every process, in one pass.
proc_table() {
	awk '{ pid = FILENAME; gsub(/[^0-9]/, "", pid); s = $0
	       sub(/^.*\) /, "", s); split(s, a, " "); print pid, a[2], a[1] }' \
		/proc/[0-9]*/stat 2>/dev/null
}

# slurmstepd pids of job $1's steps (not its batch or extern step), each
# with the command line of its task: "STEPD_PID TASK_CMDLINE".  Only this
# cluster's: another cluster on the machine (another release's suite,
# another checkout's tests) has a job $1 too, and its load test's tasks
# would count here.
step_tasks() {
	local job=$1 table stepd child
	table=$(proc_table)
	for stepd in $(sn_cluster_stepds | sed 's|.*|/proc/&/cmdline|' |
			xargs -r grep -las "^slurmstepd: \[$job\.[0-9]" |
			cut -d/ -f3); do
		for child in $(awk -v pp="$stepd" '$2 == pp { print $1 }' \
				<<<"$table"); do
			echo "$stepd $(tr '\0' ' ' <"/proc/$child/cmdline" 2>/dev/null)"
		done
	done
}

# A task: print the profile's NCCL_DEBUG, then wait for the barrier file
# $1, at most 200 s (exit 3).  It polls without forking: read -t on a FIFO
# it holds open itself (nobody writes to it) is its sleep, so 55 waiting
# tasks do not load the machine.  One line: step_tasks() reads cmdlines.
# $0 tags it as a warmup or a control step.
TASK='echo "NCCL_DEBUG=$NCCL_DEBUG"; exec 9<>"$1.fifo"; for ((t = 0; t < 400; t++)); do [ -e "$1" ] && exit 0; read -r -t 0.5 -u 9 _; done; echo "barrier $1 never released"; exit 3'

fd_count() {
	ls "/proc/$1/fd" 2>/dev/null | wc -l
}

@test "load: $N_WARM concurrent steps with profile and warmup: all pass, no fd leak, no zombie, no helper left" {
	local job i rc failed=0 outdir pids=() t0 lines warm control
	local stepd task warm_fds control_fds zombies barrier
	outdir="$SN_CLUSTER_DIR/tmp/load"
	rm -rf "$outdir"
	mkdir -p "$outdir"
	sn_fake_env ok
	# Long enough that the warmups overlap.
	export FAKE_NCCL_INIT_DELAY_MS=1000
	job=$(sn_sbatch --parsable -n 64 --gres=gpu:4 -o /dev/null \
		--wrap 'sleep 300') || sn_fail "sbatch failed"
	job=${job%%;*}
	t0=$SECONDS
	until [ "$(sn_timeout squeue -h -j "$job" -o %T)" = RUNNING ]; do
		((SECONDS - t0 < 20)) || sn_fail "allocation $job not running"
		sleep 0.2
	done
	# Every task waits for the barrier file, which the test creates once
	# all steps are in their task phase (a fixed sleep would stop
	# overlapping when launching the steps takes longer than it).  The
	# deadline only ends a task whose test died: it then exits 3.
	barrier="$outdir/release"
	BARRIER=$barrier
	mkfifo "$barrier.fifo"
	for ((i = 0; i < N_WARM; i++)); do
		SN_TIMEOUT=240 sn_srun --jobid="$job" --overlap -n1 --gres=gpu:1 \
			--nccl-profile=quiet-logs --nccl-warmup=comm,fresh \
			bash -c "$TASK" sn-load-warm "$barrier" \
			>"$outdir/w$i.out" 2>&1 &
		pids+=($!)
	done
	for ((i = 0; i < N_CONTROL; i++)); do
		SN_TIMEOUT=240 sn_srun --jobid="$job" --overlap -n1 --gres=gpu:1 \
			bash -c "$TASK" sn-load-control "$barrier" \
			>"$outdir/c$i.out" 2>&1 &
		pids+=($!)
	done
	# Every step in its task phase at the same time.
	t0=$SECONDS
	while :; do
		lines=$(step_tasks "$job")
		warm=$(grep -c ' sn-load-warm ' <<<"$lines" || true)
		control=$(grep -c ' sn-load-control ' <<<"$lines" || true)
		[ "$warm" -eq "$N_WARM" ] && [ "$control" -eq "$N_CONTROL" ] &&
			break
		if ((SECONDS - t0 > 180)); then
			touch "$barrier"
			sn_fail "only $warm + $control of $N_WARM + $N_CONTROL steps reached their tasks together"
		fi
		sleep 0.2
	done
	echo "# $((warm + control)) steps running at once after $((SECONDS - t0)) s" >&3
	# Descriptors: the same count in every slurmstepd, warmup or not.
	warm_fds=$(grep ' sn-load-warm ' <<<"$lines" | while read -r stepd task; do
		fd_count "$stepd"; done | sort -u | paste -sd' ' -)
	control_fds=$(grep ' sn-load-control ' <<<"$lines" | while read -r stepd task; do
		fd_count "$stepd"; done | sort -u | paste -sd' ' -)
	[ -n "$control_fds" ] && [ "$warm_fds" = "$control_fds" ] ||
		sn_fail "slurmstepd descriptors: warmup steps [$warm_fds], control steps [$control_fds]"
	# No zombie child of any slurmstepd; no helper outlived user_init.
	zombies=$(proc_table | awk -v list=" $(cut -d' ' -f1 <<<"$lines" | paste -sd' ' -) " \
		'$3 == "Z" && index(list, " " $2 " ") { print $1 }')
	[ -z "$zombies" ] || sn_fail "zombie children of slurmstepd: $zombies"
	SN_FAKE_DIR=/nonexistent SN_FAKE_TAG=none
	[ -z "$(sn_leftovers)" ] ||
		sn_fail "helpers running during the tasks: $(sn_leftovers)"
	touch "$barrier"
	for i in "${!pids[@]}"; do
		rc=0
		wait "${pids[$i]}" || rc=$?
		if [ "$rc" -ne 0 ]; then
			failed=$((failed + 1))
			echo "# step $i: exit $rc" >&3
		fi
	done
	[ "$failed" -eq 0 ] || sn_fail "$failed steps failed: $(cat "$outdir"/*.out)"
	[ "$(cat "$outdir"/w*.out | grep -cx 'NCCL_DEBUG=WARN')" -eq "$N_WARM" ] ||
		sn_fail "the profile did not reach every step: $(cat "$outdir"/w*.out)"
	if grep -l 'spank-nccl' "$outdir"/*.out; then
		sn_fail "messages from quiet successes"
	fi
	[ "$(sn_fake_loads)" -eq "$N_WARM" ] ||
		sn_fail "nccl-warmup ran $(sn_fake_loads) times, expected $N_WARM"
	[ "$(grep -c "job $job step [0-9]* on n1: nccl-warmup passed" \
		"$(sn_slurmd_log n1)")" -eq "$N_WARM" ] ||
		sn_fail "slurmd log: not $N_WARM passes"
	sn_timeout scancel "$job"
	sn_wait_job "$job" || sn_fail "allocation $job stuck"
	sn_assert_no_leftovers 20
}

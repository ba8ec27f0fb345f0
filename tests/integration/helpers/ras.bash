# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# A job stuck in NCCL for spank-nccl-status (ras.bats, multinode.bats):
# tests/fake/nccl-job on the fake NCCL, whose RAS answers from files in
# FAKE_NCCL_RAS_DIR (tests/fake/README.md).

# ras_job_start COMM_HOST TASKS SRUN_ARGS...: runs nccl-job (2 all-reduces)
# in the background with the FAKE_NCCL_RAS_* the test exported, waits
# until every task is ready; sets RAS_JOB (the job id) and RAS_SRUN.
# RAS_NO_NCCL=1: a task that loads no NCCL instead; AS_USER=1: the job
# is the unprivileged user's.
ras_job_start() {
	local host=$1 tasks=$2 name=ras-$BATS_TEST_NUMBER-$RANDOM
	local cmd=("$SN_BUILD_DIR/tests/fake/nccl-job" 2)
	shift 2
	[ "${RAS_NO_NCCL:-0}" = 0 ] || cmd=(sh -c 'echo ready; exec sleep 300')
	RAS_OUT=$SN_CLUSTER_DIR/tmp/$name.out
	export FAKE_NCCL_RAS_DIR=$SN_CLUSTER_DIR/tmp/$name.ras
	mkdir -p "$FAKE_NCCL_RAS_DIR"
	chmod 0777 "$FAKE_NCCL_RAS_DIR"
	# The bootstrap root's port: below the ephemeral ports and above
	# the test cluster's Slurm ports (SN_PORT, 20000-27999), ras_ports=
	# (28100-28999) and fabric_ports= (29400-29499), where a listener would
	# fail the job.
	NCCL_COMM_ID=$host:$((29500 + RANDOM % 3200)) \
		ras_as srun -J "$name" "$@" "${cmd[@]}" \
		>"$RAS_OUT" 2>&1 3>&- &
	RAS_SRUN=$!
	sn__wait_for 300 ras_ready_or_ended "$tasks"
	ras_ready "$tasks" ||
		sn_fail "nccl-job: not $tasks tasks ready ($(ras_srun_state)): $(cat "$RAS_OUT")" ||
		return 1
	RAS_JOB=$(squeue -h -n "$name" -o %i)
	[ -n "$RAS_JOB" ] || sn_fail "no job $name in the queue"
}

ras_ready() {
	[ "$(grep -c '^ready' "$RAS_OUT")" -eq "$1" ]
}

# Ready, or nothing more to wait for: srun has ended.
ras_ready_or_ended() {
	ras_ready "$1" || ! kill -0 "$RAS_SRUN" 2>/dev/null
}

ras_srun_state() {
	if kill -0 "$RAS_SRUN" 2>/dev/null; then
		echo "srun still running after 30 s; queue: $(squeue -h -o '%i %T %r' | tr '\n' ';')"
	else
		echo "srun ended"
	fi
}

# Ends the job ras_job_start started (teardown).
ras_job_stop() {
	[ -n "${RAS_SRUN:-}" ] || return 0
	[ -z "${RAS_JOB:-}" ] || scancel "$RAS_JOB" 2>/dev/null
	kill "$RAS_SRUN" 2>/dev/null
	wait "$RAS_SRUN" 2>/dev/null || true
	RAS_SRUN='' RAS_JOB=''
}

# CMD with a deadline and no stdin, as root unless AS_USER=1.
ras_as() {
	if [ "${AS_USER:-0}" = 1 ]; then
		sn_as_user timeout -k 5 "${SN_TIMEOUT:-30}" "$@" </dev/null
	else
		sn_timeout "$@" </dev/null
	fi
}

ras_status() {
	ras_as "$SN_BUILD_DIR/src/report/spank-nccl-status" "$@"
}

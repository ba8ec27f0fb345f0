#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# Prolog mode: nccl-warmup-prolog as slurm.conf's Prolog= on a one-node
# cluster with four fake GPUs.  A failing check drains the node with a
# Reason naming spank-nccl and the failure and requeues the job; a passing
# check costs the job only the check; jobs without GPUs, and
# nodes without the helper, are not checked; a mistake in its settings
# fails no job (it is logged, and listed by --check).
#
# slurm.conf points Prolog= at a small wrapper in the cluster directory
# (slurmd gives a Prolog no way to pass arguments): it runs the script
# with NCCL_WARMUP_PROLOG_CONF set to a per-test configuration, which
# exports the fake libraries' LD_LIBRARY_PATH and FAKE_* fault, or exits 0
# at once when "prolog.off" exists (the baseline of the timing test).
# SN_INSTALLED=1 tests the packaged script in /usr/libexec.

load common

prolog_wrapper() { echo "$SN_CLUSTER_DIR/etc/prolog"; }
prolog_conf() { echo "$SN_CLUSTER_DIR/etc/nccl-warmup-prolog.conf"; }
prolog_off() { echo "$SN_CLUSTER_DIR/etc/prolog.off"; }
# A file naming another Prolog script to run instead (one test's).
prolog_alt() { echo "$SN_CLUSTER_DIR/etc/prolog.alt"; }

prolog_script() {
	if [ "$SN_INSTALLED" = 1 ]; then
		echo /usr/libexec/nccl-warmup-prolog
	else
		echo "$SN_CLUSTER_DIR/libexec/nccl-warmup-prolog"
	fi
}

setup_file() {
	export SN_SLURM_CONF_EXTRA="Prolog=$SN_CLUSTER_DIR/etc/prolog"
	sn_file_setup || return 1
	if [ "$SN_INSTALLED" != 1 ]; then
		sn__install_file 0755 "$SN_BUILD_DIR/scripts/nccl-warmup-prolog" \
			"$(prolog_script)" || return 1
	fi
	cat >"$(prolog_wrapper)" <<W
#!/bin/sh
[ -e '$(prolog_off)' ] && exit 0
script='$(prolog_script)'
[ -s '$(prolog_alt)' ] && script=\$(cat '$(prolog_alt)')
NCCL_WARMUP_PROLOG_CONF='$(prolog_conf)' exec "\$script"
W
	chmod 0755 "$(prolog_wrapper)"
}

teardown_file() { sn_file_teardown; }

setup() {
	sn_test_setup
	sn_require_warmup
	sn_require_file "$(prolog_script)" "nccl-warmup-prolog not built" ||
		return 1
	rm -f "$(prolog_off)" "$(prolog_alt)"
	SN_FAKE_LOG="$SN_CLUSTER_DIR/tmp/fake-cuda-$BATS_TEST_NUMBER.log"
	rm -f "$SN_FAKE_LOG"
	MARKER="$SN_CLUSTER_DIR/tmp/ran-$BATS_TEST_NUMBER"
	rm -f "$MARKER"
}

# A failed test must not leave the node drained or a job held for the next.
# The order matters: a batch job whose Prolog failed is requeued, and a
# requeued job still in the queue when the node is resumed is scheduled
# on it again (n1 "mixed", its Prolog failing anew).  So every job is
# cancelled and gone from the queue (pending, running and completing
# alike) before the node is resumed, and a job found on the node while
# resuming is cancelled again.
teardown() {
	stuck=0
	sn__wait_for 600 no_jobs_left ||
		sn_fail "teardown: jobs still queued: $(squeue -h -o '%i %T %r')"
	# Resume until idle: on a slow machine a late prolog-failure report
	# from slurmd can drain the node again after a first resume.
	sn__wait_for 600 resume_until_idle && return 0
	{ scontrol show node n1; scontrol show job; tail -n 60 "$(sn_slurmctld_log)"; } >&2
	sn_fail "teardown: node n1 $(node_state): $(node_reason); queue: $(squeue -h -o '%i %T %r')"
}

# Cancels every job in the queue; true once none is left.
no_jobs_left() {
	local ids
	ids=$(sn_timeout squeue -h -o %i) || return 1
	[ -z "$ids" ] && return 0
	# shellcheck disable=SC2086 # one id a word
	sn_timeout scancel $ids
	return 1
}

resume_until_idle() {
	local state
	state=$(sinfo -h -N -o %T -n n1)
	[ "$state" = idle ] && return 0
	case $state in
	*drain* | *down* | *fail*)
		sn_timeout scontrol update nodename=n1 state=resume ;;
	*)
		no_jobs_left || return 1
		# No job left and still not idle: "idle*" (slurmctld marks a
		# resumed node not responding until a ping answers) or "mixed"
		# (a cancelled job's resources still counted).  Normally gone
		# within 6 rounds (30 runs of this file); twice in ~40 runs on
		# 22.05 one stayed 60 s.  A reconfigure rebuilds the counts and
		# has slurmd register again: asked for after 50 rounds.
		if ((++stuck == 50)); then
			echo "# teardown: n1 $state with no job after $stuck rounds: scontrol reconfigure" >&3
			sn_timeout scontrol reconfigure
		fi ;;
	esac
	return 1
}

# Writes the Prolog's configuration: the helper, MODE, and the fake GPUs'
# fault (FAKE_* assignments), e.g. write_conf check FAKE_CUDA_BUSIDS=...
write_conf() {
	local mode=$1 v
	shift
	{
		echo "HELPER=$(sn_helper_path)"
		echo "MODE=$mode"
		echo "TIMEOUT=20"
		echo "export LD_LIBRARY_PATH=$(sn_fake_lib_dir)"
		echo "export FAKE_CUDA_LOG=$SN_FAKE_LOG"
		for v in "$@"; do
			echo "export $v"
		done
	} >"$(prolog_conf)"
	chmod 0644 "$(prolog_conf)"
}

DUPLICATE=FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0,0000:03:00.0,0000:04:00.0

node_reason() {
	sn_timeout scontrol show node n1 | sed -n 's/^ *Reason=//p'
}

node_state() {
	sinfo -h -N -o %T -n n1
}

# Waits until the node is drained (the Prolog's failure reached slurmctld).
wait_drained() {
	sn__wait_for 100 sh -c 'sinfo -h -N -o %T -n n1 | grep -q drain'
}

@test "prolog passes: job runs on its GPUs, checked once, node stays up" {
	write_conf check
	run --separate-stderr sn_srun -n1 --gres=gpu:2 touch "$MARKER"
	sn_assert_status 0
	[ -e "$MARKER" ] || sn_fail "the job did not run"
	[ "$(sn_fake_loads)" -eq 1 ] ||
		sn_fail "the check ran $(sn_fake_loads) times, expected 1"
	[ "$(sn_node_settled n1)" = idle ] || sn_fail "node $(node_state): $(node_reason)"
}

@test "prolog: a job without GPUs is not checked" {
	write_conf check "$DUPLICATE"
	run --separate-stderr sn_srun -n1 touch "$MARKER"
	sn_assert_status 0
	[ -e "$MARKER" ] || sn_fail "the job did not run"
	[ "$(sn_fake_loads)" -eq 0 ] || sn_fail "the check ran without GPUs"
}

@test "prolog: only the job's GPUs are checked (GPU 0 alone is fine)" {
	# GPUs 0 and 1 share a bus ID; a one-GPU job gets GPU 0 only.
	write_conf check "$DUPLICATE"
	run --separate-stderr sn_srun -n1 --gres=gpu:1 touch "$MARKER"
	sn_assert_status 0
	[ -e "$MARKER" ] || sn_fail "the job did not run"
	[ "$(sn_fake_loads)" -eq 1 ] || sn_fail "the check did not run"
	[ "$(sn_node_settled n1)" = idle ] || sn_fail "node $(node_state): $(node_reason)"
}

@test "prolog fails (duplicate bus ID): node drained with the failure, batch job requeued" {
	local out id job reason
	write_conf check "$DUPLICATE"
	out=$(sn_sbatch --parsable --gres=gpu:2 -o /dev/null \
		--wrap "touch $MARKER") || sn_fail "sbatch failed"
	id=${out%%;*}
	wait_drained || sn_fail "node not drained: $(node_state)"
	reason=$(node_reason)
	echo "# Reason=$reason" >&3
	[[ $reason == "spank-nccl: "* ]] || sn_fail "Reason: $reason"
	[[ $reason == *"duplicate PCI bus ID"* ]] || sn_fail "Reason: $reason"
	[[ $reason == *"0000:01:00.0"* ]] || sn_fail "Reason: $reason"
	# Requeued, not run: pending again (held) with a restart counted.
	sn__wait_for 100 sh -c "scontrol show job $id | grep -q 'Restarts=1'" ||
		sn_fail "job $id not requeued: $(scontrol show job "$id")"
	job=$(sn_timeout scontrol show job "$id")
	echo "# $(grep -o 'JobState=[A-Z_]* Reason=[^ ]*' <<<"$job")" >&3
	grep -q 'JobState=PENDING' <<<"$job" || sn_fail "job: $job"
	[ ! -e "$MARKER" ] || sn_fail "the job ran on the bad node"
}

@test "prolog fails (NCCL init, comm mode): srun fails, Reason names NCCL" {
	local reason
	write_conf comm FAKE_NCCL_FAIL=init
	run --separate-stderr sn_srun -n1 --gres=gpu:2 touch "$MARKER"
	sn_assert_failed
	[ ! -e "$MARKER" ] || sn_fail "the job ran on the bad node"
	wait_drained || sn_fail "node not drained: $(node_state)"
	reason=$(node_reason)
	echo "# Reason=$reason" >&3
	# The driver and the NCCL it loaded (version and path) come first.
	[[ $reason == "spank-nccl: [driver CUDA "*", NCCL "*" from $(sn_fake_dir nccl)/libnccl.so.2 (ld_library_path)] "* ]] ||
		sn_fail "Reason lacks the driver/NCCL: $reason"
	[[ $reason == "spank-nccl: "* ]] || sn_fail "Reason: $reason"
	[[ $reason == *NCCL* || $reason == *nccl* ]] || sn_fail "Reason: $reason"
}

# A mistake in the settings is on every node at once: failing jobs for it
# would drain the partition node by node.  The job runs unchecked, the
# Prolog logs FILE:LINE and the fix, and --check lists the problem.
@test "prolog: a bad setting fails no job and drains no node; the log and --check name FILE:LINE" {
	write_conf check
	echo "MODE=fast" >>"$(prolog_conf)"
	run --separate-stderr sn_srun -n1 --gres=gpu:1 touch "$MARKER"
	sn_assert_status 0
	[ -e "$MARKER" ] || sn_fail "the job did not run"
	[ "$(sn_fake_loads)" -eq 0 ] || sn_fail "the check ran"
	[ "$(sn_node_settled n1)" = idle ] || sn_fail "node $(node_state): $(node_reason)"
	run_prolog
	sn_assert_status 0
	[[ $stderr == "spank-nccl: $(prolog_conf):6: MODE=fast: expected check, comm or bandwidth; job not checked (fix it, then: nccl-warmup-prolog --check)" ]] ||
		sn_fail "log: $stderr"
	run --separate-stderr env NCCL_WARMUP_PROLOG_CONF="$(prolog_conf)" \
		"$(prolog_script)" --check
	sn_assert_status 1
	[ "$output" = "$(prolog_conf):6: MODE=fast: expected check, comm or bandwidth" ] ||
		sn_fail "--check: $output"
}

@test "prolog: MODE=fabric is refused, pointing at the plugin's fabric mode" {
	write_conf check
	echo "MODE=fabric" >>"$(prolog_conf)"
	run_prolog
	sn_assert_status 0
	[[ $stderr == "spank-nccl: $(prolog_conf):6: MODE=fabric: the fabric warmup needs a job step's nodes"* ]] ||
		sn_fail "log: $stderr"
	[ "$(sn_fake_loads)" -eq 0 ] || sn_fail "the check ran"
}

@test "prolog: a group-writable configuration is not sourced" {
	write_conf check
	echo "touch $MARKER" >>"$(prolog_conf)"
	chmod 0664 "$(prolog_conf)"
	run_prolog
	sn_assert_status 0
	[[ $stderr == "spank-nccl: $(prolog_conf):1: not sourced: it must be owned by root and not writable by group or others; chown root "*"; chmod go-w "* ]] ||
		sn_fail "log: $stderr"
	[ ! -e "$MARKER" ] || sn_fail "the file was sourced"
}

@test "prolog: --help prints its usage; several problems, each FILE:LINE with --check" {
	run --separate-stderr "$(prolog_script)" --help
	sn_assert_status 0
	[[ $output == "usage: nccl-warmup-prolog [--check | --help]"* ]] ||
		sn_fail "--help: $output"
	run --separate-stderr "$(prolog_script)" --bogus
	[ "$status" -eq 2 ] || sn_fail "--bogus: status $status"
	write_conf check
	printf 'GPUS=some\nDRAIN=maybe\nTIMEOUT=ten\n' >>"$(prolog_conf)"
	run --separate-stderr env NCCL_WARMUP_PROLOG_CONF="$(prolog_conf)" \
		"$(prolog_script)" --check
	sn_assert_status 1
	[ "$output" = "$(prolog_conf):6: GPUS=some: expected job or all
$(prolog_conf):7: DRAIN=maybe: expected yes or no
$(prolog_conf):8: TIMEOUT=ten: expected whole seconds" ] || sn_fail "--check: $output"
	write_conf comm
	run --separate-stderr env NCCL_WARMUP_PROLOG_CONF="$(prolog_conf)" \
		"$(prolog_script)" --check
	sn_assert_status 0
	[ "$output" = "spank-nccl: nccl-warmup-prolog: OK: $(prolog_conf): MODE=comm TIMEOUT=20 GPUS=job DRAIN=yes" ] ||
		sn_fail "--check: $output"
}

# A node without spank-nccl-warmup (no GPUs there): the Prolog finds no
# helper at its default path, and HELPER= is not set.  The Prolog under
# test is a copy whose default is a path that does not exist, so that
# this holds for the installed package too.
@test "prolog: no helper installed: jobs run unchecked, with one log line; a broken setting fails no GPU-less job" {
	local alt="$SN_CLUSTER_DIR/tmp/prolog-no-helper"
	sed 's|^HELPER=.*|HELPER=/nonexistent/nccl-warmup|' "$(prolog_script)" >"$alt"
	chmod 0755 "$alt"
	echo "$alt" >"$(prolog_alt)"
	echo "MODE=check" >"$(prolog_conf)"
	chmod 0644 "$(prolog_conf)"
	run --separate-stderr sn_srun -n1 --gres=gpu:2 touch "$MARKER"
	sn_assert_status 0
	[ -e "$MARKER" ] || sn_fail "the job did not run"
	[ "$(sn_node_settled n1)" = idle ] || sn_fail "node $(node_state): $(node_reason)"
	run --separate-stderr env -i SLURM_JOB_ID=0 CUDA_VISIBLE_DEVICES=0,1 \
		NCCL_WARMUP_PROLOG_CONF="$(prolog_conf)" "$alt"
	sn_assert_status 0
	[ "$stderr" = "spank-nccl: no /nonexistent/nccl-warmup on $(uname -n) (spank-nccl-warmup not installed): job not checked" ] ||
		sn_fail "log: $stderr"
	# A job without GPUs on a node with a broken file: it runs.
	rm -f "$MARKER"
	echo "if" >"$(prolog_conf)"
	run --separate-stderr sn_srun -n1 touch "$MARKER"
	sn_assert_status 0
	[ -e "$MARKER" ] || sn_fail "the job did not run"
	[ "$(sn_node_settled n1)" = idle ] || sn_fail "node $(node_state): $(node_reason)"
}

@test "prolog: a job without GPUs: one log line, exit 0" {
	write_conf check
	run --separate-stderr env -i SLURM_JOB_ID=0 \
		NCCL_WARMUP_PROLOG_CONF="$(prolog_conf)" "$(prolog_script)"
	sn_assert_status 0
	[ "$stderr" = "spank-nccl: job has no GPUs on $(uname -n): not checked" ] ||
		sn_fail "log: $stderr"
}

# A helper for the Prolog run by hand below, set up in its configuration
# (whose exports reach the helper): "--limits" prints LIMITS (KEY=VALUE
# words; "fail": exit 1); a run records timeout(1)'s command line (the
# Prolog's supervision) in $SUPERVISION, then does RUN: "real" (execs the
# real nccl-warmup) or "wedged" (ignores SIGTERM and never finishes, as a
# helper stuck in the driver).
limits_helper() {
	local limits=$1 mode=$2 dir="$SN_CLUSTER_DIR/tmp/limits-$BATS_TEST_NUMBER"
	SUPERVISION="$dir/supervision"
	rm -rf "$dir"
	mkdir -p "$dir"
	# shellcheck disable=SC2086 # one KEY=VALUE a word
	[ "$limits" = fail ] || printf '%s\n' $limits >"$dir/limits"
	cat >"$dir/nccl-warmup" <<'H'
#!/bin/sh
if [ "$1" = --limits ]; then
	[ -f "$SN_LIMITS" ] || exit 1
	exec cat "$SN_LIMITS"
fi
tr '\0' ' ' </proc/$PPID/cmdline >"$SN_SUPERVISION"
[ "$SN_RUN" = real ] && exec "$SN_REAL_HELPER" "$@"
trap '' TERM
exec sleep 600
H
	chmod 0755 "$dir/nccl-warmup"
	{
		echo "HELPER=$dir/nccl-warmup"
		echo "export SN_LIMITS=$dir/limits SN_SUPERVISION=$SUPERVISION"
		echo "export SN_REAL_HELPER=$(sn_helper_path) SN_RUN=$mode"
	} >>"$(prolog_conf)"
}

# The Prolog as slurmd runs it (root, a minimal environment), by hand.
run_prolog() {
	run --separate-stderr env -i SLURM_JOB_ID=0 CUDA_VISIBLE_DEVICES=0,1 \
		NCCL_WARMUP_PROLOG_CONF="$(prolog_conf)" "$(prolog_script)"
}

@test "prolog: TIMEOUT is held to the helper's own limit (nccl-warmup --limits; the job unchecked)" {
	write_conf check
	# The real helper takes 20 s; this one says 15 s is its longest.
	limits_helper "TIMEOUT_MAX_S=15 TIMEOUT_DEFAULT_S=10 SLACK_MS=300 KILL_GRACE_MS=300" real
	run_prolog
	sn_assert_status 0
	[[ $stderr == *"$(prolog_conf):3: TIMEOUT=20: expected 1 to 15 seconds; job not checked"* ]] ||
		sn_fail "TIMEOUT=20 not refused with the helper's limit: $stderr"
	[ ! -e "$SUPERVISION" ] || sn_fail "the check ran"
	echo "TIMEOUT=15" >>"$(prolog_conf)"
	run_prolog
	sn_assert_status 0
	[ "$(sn_fake_loads)" -eq 1 ] || sn_fail "the check did not run"
}

@test "prolog: the helper is bounded by its own slack and kill grace" {
	write_conf check
	limits_helper "TIMEOUT_MAX_S=540 TIMEOUT_DEFAULT_S=60 SLACK_MS=1234 KILL_GRACE_MS=567" real
	run_prolog
	sn_assert_status 0
	echo "# $(cat "$SUPERVISION")" >&3
	[[ $(cat "$SUPERVISION") == "timeout -k 0.567 21.234 $SN_CLUSTER_DIR/tmp/limits-$BATS_TEST_NUMBER/nccl-warmup --mode check --timeout 20 "* ]] ||
		sn_fail "supervision: $(cat "$SUPERVISION")"
}

@test "prolog: a wedged helper is killed after TIMEOUT, the slack and the grace" {
	write_conf check
	echo "TIMEOUT=1" >>"$(prolog_conf)"
	limits_helper "$("$(sn_helper_path)" --limits)" wedged
	run_prolog
	sn_assert_status 1
	[[ $stderr == *"nccl-warmup did not finish within 1 s on "* ]] ||
		sn_fail "no timeout message"
}

@test "prolog: a helper without --limits is refused (the job unchecked), naming HELPER=" {
	write_conf check
	limits_helper fail real
	run_prolog
	sn_assert_status 0
	[[ $stderr == *"nccl-warmup --limits failed; HELPER= must be the nccl-warmup of this spank-nccl; job not checked"* ]] ||
		sn_fail "no message naming --limits: $stderr"
	[ ! -e "$SUPERVISION" ] || sn_fail "the check ran"
}

median_ms() {
	sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}

# Milliseconds of one "srun -n1 --gres=gpu:2 true".
time_srun() {
	local t0 t1
	t0=$(date +%s%N)
	sn_srun -n1 --gres=gpu:2 true >/dev/null 2>&1 || return 1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

# Milliseconds of the Prolog as slurmd runs it, by hand.
time_check() {
	local t0 t1
	t0=$(date +%s%N)
	env -i SLURM_JOB_ID=0 CUDA_VISIBLE_DEVICES=0,1 \
		NCCL_WARMUP_PROLOG_CONF="$(prolog_conf)" "$(prolog_script)" ||
		return 1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

# The three are measured in turn, round after round, so that a change in
# the machine's load (other jobs on a shared CI machine) weighs on each
# alike instead of on whichever ran during it.
@test "prolog: a passing check costs the job only the check itself" {
	local n=11 i base with check delta
	write_conf check
	rm -f "$SN_CLUSTER_DIR"/tmp/{check,base,with}.ms
	touch "$(prolog_off)"
	time_srun >/dev/null || sn_fail "srun failed"
	for ((i = 0; i < n; i++)); do
		time_check >>"$SN_CLUSTER_DIR/tmp/check.ms" ||
			sn_fail "the check failed when run by hand"
		touch "$(prolog_off)"
		time_srun >>"$SN_CLUSTER_DIR/tmp/base.ms" || sn_fail "srun failed"
		rm -f "$(prolog_off)"
		time_srun >>"$SN_CLUSTER_DIR/tmp/with.ms" || sn_fail "srun failed"
	done
	check=$(median_ms <"$SN_CLUSTER_DIR/tmp/check.ms")
	base=$(median_ms <"$SN_CLUSTER_DIR/tmp/base.ms")
	with=$(median_ms <"$SN_CLUSTER_DIR/tmp/with.ms")
	rm -f "$SN_CLUSTER_DIR"/tmp/{check,base,with}.ms
	delta=$((with - base))
	echo "# srun -n1 --gres=gpu:2 true, median of $n: without check ${base} ms, with check ${with} ms, delta ${delta} ms; the check alone ${check} ms" >&3
	# Nothing beyond the check: the delta stays within the check's own time
	# plus scheduling noise (25 ms or 20 %).
	[ "$delta" -le $((check + 25 + check / 5)) ] ||
		sn_fail "delta ${delta} ms exceeds the check's ${check} ms"
}

@test "prolog: a GPU health check (NVML) that fails drains the node with its message; HEALTH=off skips it" {
	write_conf check FAKE_NVML_REMAP_PENDING=1
	run --separate-stderr sn_srun -n1 --gres=gpu:2 touch "$MARKER"
	wait_drained || sn_fail "node not drained: $(node_state)"
	reason=$(node_reason)
	echo "# Reason=$reason" >&3
	[[ $reason == "spank-nccl: "*"GPU 0 row_remap: row remap pending"* ]] ||
		sn_fail "Reason: $reason"
	sn_timeout scontrol update nodename=n1 state=resume
	write_conf check FAKE_NVML_REMAP_PENDING=1 HEALTH=off
	run --separate-stderr sn_srun -n1 --gres=gpu:2 touch "$MARKER"
	sn_assert_status 0
	[ -e "$MARKER" ] || sn_fail "the job did not run"
	[ "$(sn_node_settled n1)" = idle ] || sn_fail "node $(node_state): $(node_reason)"
}

# sinfo -R is everyone's: a GPU held by another user's process drains the
# node with the MiB held, never that user's name or pid, which go to the
# logs (the Prolog's stderr, slurmd's log and syslog) only.
@test "prolog: a busy GPU's Reason names no other user or pid; its log does" {
	local holder reason
	setpriv --reuid "$(id -u "$SN_USER")" --regid "$(id -g "$SN_USER")" \
		--clear-groups sleep 600 &
	holder=$!
	write_conf check "FAKE_NVML_PROCS=0:$holder:70000"
	run --separate-stderr sn_srun -n1 --gres=gpu:2 touch "$MARKER"
	sn_assert_failed
	wait_drained || { kill "$holder"; sn_fail "node not drained: $(node_state)"; }
	reason=$(sinfo -h -R -n n1 -o %E)
	echo "# sinfo -R: $reason" >&3
	[[ $reason == "spank-nccl: "*"GPU 0 busy: held by another process: 70000 MiB (above health_busy_mib="* ]] ||
		{ kill "$holder"; sn_fail "Reason: $reason"; }
	[[ $reason != *"$holder"* && $reason != *"$SN_USER"* ]] ||
		{ kill "$holder"; sn_fail "Reason names the holder: $reason"; }
	run_prolog
	kill "$holder"
	sn_assert_status 1
	[[ $stderr == *"held by another process: pid $holder ($SN_USER) 70000 MiB"* ]] ||
		sn_fail "the log lacks the holder: $stderr"
}

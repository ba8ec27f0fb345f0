#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# Verdicts no job user can forge (issue 30; docs/security.md "Trust"):
# as the job user, a preload that forges nccl-warmup's result, a SIGSEGV
# sent to the user's own helper during init, and a helper that hangs
# until its deadline, leave the node's
# fault count and _info as they were and the record's fault the job's;
# a real node fault (the node's fake GPUs, sn_node_fake: a root-owned
# confirm_env= file the job cannot reach) is the node's every time, even
# with the job's NCCL_* or forgeries; a passing step runs no confirmation;
# forged passes of 400 fake GPUs, health findings and phase timings
# leave the metrics as honest passes.

load common

setup_file() {
	sn_file_setup || return
	FORGE="$SN_CLUSTER_DIR/tmp/libforge.so"
	cc -shared -fPIC -o "$FORGE" \
		"$SN_SRC_DIR/tests/integration/helpers/forge-result.c" ||
		sn__die "cannot build the forging preload (cc)"
	chmod 0755 "$FORGE"
}
teardown_file() { sn_file_teardown; }
setup() {
	sn_test_setup
	sn_require_warmup
	FORGE="$SN_CLUSTER_DIR/tmp/libforge.so"
	D="$SN_CLUSTER_DIR/tmp/trust-$BATS_TEST_NUMBER"
	rm -rf "$D"
	mkdir -p "$D/prom/n1"
	sn_plugstack_set "record_file=$D/records.jsonl" "prom_dir=$D/prom/%n"
	PROM="$D/prom/n1/spank_nccl.prom"
}

# A comm warmup as the job user; extra job environment in "$@" (NAME=VALUE;
# LD_PRELOAD through srun's --export, so that srun itself loads none).
user_step() {
	local v pre=() env=()
	for v in "$@"; do
		case $v in
		LD_PRELOAD=*) pre=("--export=ALL,$v") ;;
		*) env+=("$v") ;;
		esac
	done
	run --separate-stderr sn_as_user env "LD_LIBRARY_PATH=$(sn_fake_lib_dir)" \
		"${env[@]}" timeout 60 srun -n1 --gres=gpu:2 --nccl-warmup=comm \
		"${pre[@]}" true
}

# The value of series $1 in the node's .prom file (0 when absent).
series() {
	local v
	v=$(awk -v s="$1" '$1 == s { print $2 }' "$PROM" 2>/dev/null)
	echo "${v:-0}"
}
node_faults() { series 'spank_nccl_warmup_failures_total{mode="comm",source="plugin",fault="node"}'; }
job_faults() { series 'spank_nccl_warmup_failures_total{mode="comm",source="plugin",fault="job"}'; }

# Field $1 of the last record.
last() {
	tail -n1 "$D/records.jsonl" | python3 -c '
import json, sys
print(json.loads(sys.stdin.read()).get(sys.argv[1]))' "$1"
}

@test "trust: a preload forging the helper's result (fault node, wrong_result, fake _info, busbw, UUIDs) is the job's, twice" {
	local i
	for i in 1 2; do
		user_step "LD_PRELOAD=$FORGE"
		sn_assert_failed
		sn_assert_msg "this node passed a clean check"
		[ "$(last class)" = wrong_result ] || sn_fail "class $(last class)"
		[ "$(last fault)" = job ] || sn_fail "fault $(last fault)"
	done
	[ "$(node_faults)" = 0 ] || sn_fail "node faults: $(cat "$PROM")"
	[ "$(job_faults)" = 2 ] || sn_fail "job faults: $(cat "$PROM")"
	# _info and the per-GPU series are the confirmation's: the node's
	# fake GPUs and NCCL, none of the forged values.
	grep -q '^spank_nccl_warmup_info{.*gpu_model="NVIDIA Fake GPU"' "$PROM" ||
		sn_fail "_info not the node's: $(cat "$PROM")"
	! grep -Eq '666\.66|9\.99\.9|Forged|f0f0f0f0|0000:6[67]:00' "$PROM" ||
		sn_fail "forged values in the metrics: $(cat "$PROM")"
	! grep -q '^spank_nccl_warmup_last_busbw' "$PROM" ||
		sn_fail "busbw from a comm step: $(cat "$PROM")"
}

@test "trust: the user's own helper killed by SIGSEGV during init (pkill -SEGV) is not a node fault" {
	local killer
	sn_plugstack_set "record_file=$D/records.jsonl" "prom_dir=$D/prom/%n" \
		warmup_timeout=30
	# The job's helper hangs in NCCL init until the user's other
	# process kills it; the root confirmation (no FAKE_*) passes.
	(
		sn__wait_for 300 pgrep -u "$SN_USER" -x nccl-warmup &&
			runuser -u "$SN_USER" -- pkill -SEGV -u "$SN_USER" -x nccl-warmup
	) &
	killer=$!
	user_step FAKE_NCCL_HANG=init
	wait "$killer" || sn_fail "no helper of $SN_USER to kill"
	sn_assert_failed
	sn_assert_msg "node n1 .*killed by signal 11"
	[ "$(last class)" = crash ] || sn_fail "class $(last class)"
	[ "$(last fault)" = job ] || sn_fail "fault $(last fault)"
	[ "$(node_faults)" = 0 ] || sn_fail "node faults: $(cat "$PROM")"
}

@test "trust: the user's own helper hanging until its deadline is not a node fault" {
	sn_plugstack_set "record_file=$D/records.jsonl" "prom_dir=$D/prom/%n" \
		warmup_timeout=3
	user_step FAKE_NCCL_HANG=init
	sn_assert_failed
	[ "$(last class)" = timeout ] || sn_fail "class $(last class)"
	[ "$(last fault)" = job ] || sn_fail "fault $(last fault)"
	[ "$(node_faults)" = 0 ] || sn_fail "node faults: $(cat "$PROM")"
	# A node whose NCCL init really hangs: its clean check times out too.
	sn_node_fake FAKE_NCCL_HANG=init
	user_step FAKE_NCCL_HANG=init
	sn_assert_failed
	[ "$(last fault)" = node ] || sn_fail "fault $(last fault)"
}

@test "trust: a real node fault (duplicate bus IDs) is the node's every time, whatever the job's helper says" {
	local dup=0000:01:00.0,0000:01:00.0,0000:03:00.0,0000:04:00.0
	sn_node_fake "FAKE_CUDA_BUSIDS=$dup"
	user_step "FAKE_CUDA_BUSIDS=$dup"
	sn_assert_failed
	[ "$(last class)" = duplicate_busid ] || sn_fail "class $(last class)"
	[ "$(last fault)" = node ] || sn_fail "fault $(last fault)"
	# A forger on that node cannot hide it, nor a job that sees
	# healthy GPUs (its own FAKE_* say so).
	user_step "LD_PRELOAD=$FORGE"
	sn_assert_failed
	[ "$(last fault)" = node ] || sn_fail "fault $(last fault)"
	user_step "FAKE_NCCL_CRASH=init"
	sn_assert_failed
	[ "$(last fault)" = node ] || sn_fail "fault $(last fault)"
	[ "$(node_faults)" = 3 ] || sn_fail "node faults: $(cat "$PROM")"
	# The node's own facts come from the confirmation, not the forger.
	grep -q '^spank_nccl_warmup_info{.*gpu_model="NVIDIA Fake GPU"' "$PROM" ||
		sn_fail "_info: $(cat "$PROM")"
	! grep -Eq '666\.66|Forged|f0f0f0f0' "$PROM" ||
		sn_fail "forged values in the metrics: $(cat "$PROM")"
}

@test "trust: a node-side NCCL init failure with the job's NCCL_* set is the node's (issue 31 part 3)" {
	sn_node_fake FAKE_NCCL_FAIL=init
	user_step FAKE_NCCL_FAIL=init NCCL_SOCKET_IFNAME=lo
	sn_assert_failed
	[ "$(last class)" = nccl_error ] || sn_fail "class $(last class)"
	[ "$(last fault)" = node ] || sn_fail "fault $(last fault)"
	# The same NCCL_* on a healthy node that the job's NCCL fails
	# with: the job's.
	sn_node_fake
	user_step FAKE_NCCL_FAIL=init NCCL_SOCKET_IFNAME=lo
	sn_assert_failed
	[ "$(last fault)" = job ] || sn_fail "fault $(last fault)"
}

@test "trust: a passing step runs no confirmation; a failing one runs it as root" {
	local log="$D/confirm-loads.log"
	sn_node_fake "FAKE_CUDA_LOG=$log"
	user_step
	sn_assert_status 0
	[ ! -e "$log" ] || sn_fail "a passing step ran a confirmation: $(cat "$log")"
	user_step FAKE_NCCL_CRASH=init
	sn_assert_failed
	[ "$(grep -c '^lib=cuda ' "$log")" = 1 ] || sn_fail "confirmations: $(cat "$log")"
	grep -q '^lib=cuda pid=[0-9]* uid=0/0/0 ' "$log" ||
		sn_fail "the confirmation did not run as root: $(cat "$log")"
}

# A forged result of N GPUs, each with its own fake UUID and bus ID, that
# says the warmup passed, fast, with every GPU's ECC failing, into
# $D/forged-N.json (readable by the user).
forge_gpus() {
	python3 - "$1" "$D/forged-$1.json" <<'P'
import json, sys
n = int(sys.argv[1])
gpus = [{"index": i, "busid": "0000:%02x:%02x.0" % (i // 32 + 0x60, i % 32),
         "uuid": "GPU-f0f0f0f0-0000-0000-0000-%012d" % i, "name": "Forged GPU",
         "nccl_mem_mib": 1} for i in range(n)]
json.dump({"version": 1, "node": "n1", "mode": "comm", "status": "ok",
           "exit_code": 0, "fault": None, "message": "", "summary": "forged",
           "nccl_version": "9.99.9", "driver_version": "666.66.66",
           "nccl_source": "system", "gpus": gpus,
           "health_status": "gpu_health",
           "health_findings": "; ".join("GPU %d ecc: forged" % i for i in range(min(n, 40))),
           "timings_ms": {"cuda_init": 1, "comm_init": 1, "teardown": 1}},
          open(sys.argv[2], "w"))
P
	chmod 0755 "$D"
	chmod 0644 "$D/forged-$1.json"
}

# The node's .prom without its comments, timestamps and the root's
# timing of the job's step (values that differ run to run); the phase
# timings and health findings are compared: only trusted runs feed them.
prom_facts() {
	grep -vE '^#|_timestamp_seconds|^spank_nccl_warmup_duration_seconds_' "$PROM"
}

@test "trust: forged passes with 400 fake GPU UUIDs, findings and timings leave the node's metrics as honest passes; a real node fault after them is written and counted" {
	local honest
	user_step
	sn_assert_status 0
	user_step
	sn_assert_status 0
	honest=$(prom_facts)
	rm -f "$PROM"
	# 400 GPUs at once (over the result's 64: no result), then 64 more
	# (the most one result holds).
	forge_gpus 400
	forge_gpus 64
	user_step "LD_PRELOAD=$FORGE" FORGE_FILE="$D/forged-400.json" FORGE_EXIT=0
	sn_assert_status 0
	user_step "LD_PRELOAD=$FORGE" FORGE_FILE="$D/forged-64.json" FORGE_EXIT=0
	sn_assert_status 0
	[ "$(last gpus | grep -o 'GPU-f0f0' | wc -l)" -eq 64 ] ||
		sn_fail "the forged result was not the job's record: $(tail -n1 "$D/records.jsonl" | head -c 300)"
	[ "$(prom_facts)" = "$honest" ] ||
		sn_fail "the metrics differ from honest passes: $(diff <(echo "$honest") <(prom_facts))"
	! grep -q 'f0f0f0f0' "$PROM" || sn_fail "a forged UUID in the metrics"
	# A real node fault on that node: written and counted.
	sn_node_fake FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0,0000:03:00.0,0000:04:00.0
	user_step FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0,0000:03:00.0,0000:04:00.0
	sn_assert_failed
	[ "$(last fault)" = node ] || sn_fail "fault $(last fault)"
	[ "$(node_faults)" = 1 ] || sn_fail "node faults: $(cat "$PROM")"
	! grep -aq 'metrics not written' "$(sn_slurmd_log n1)" ||
		sn_fail "$(grep -a 'metrics not written' "$(sn_slurmd_log n1)")"
}

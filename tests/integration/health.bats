#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# The GPU health checks (issue 24) through the plugin: srun --nccl-warmup
# on a one-node cluster with four fake GPUs, the fake NVML
# (tests/fake/fake_nvml.c, beside the fake driver) scripted per GPU
# through FAKE_NVML_*.  Every check has a failing and a passing case, its
# policy in plugstack.conf (health=, health_busy_mib=) and its message.
# Steps get GPUs 0 and 1 (--gres=gpu:2).

load common

setup_file() { sn_file_setup; }
teardown_file() { sn_file_teardown; }
setup() {
	sn_test_setup
	sn_require_warmup
	MARKER="$SN_CLUSTER_DIR/tmp/ran-$BATS_TEST_NUMBER"
	rm -f "$MARKER"
	sn_fake_env ok
	HOLDER=
}
teardown() {
	if [ -n "$HOLDER" ]; then
		kill "$HOLDER" 2>/dev/null || :
		wait "$HOLDER" 2>/dev/null || :
	fi
}

warm_srun() {
	local mode=${WARM_MODE:-check}
	# The test's FAKE_NVML_* are the node's GPUs: the root confirmation
	# of a failure sees them too.
	sn_node_fake_from_env
	rm -f "$MARKER"
	sn_srun -n2 --gres=gpu:2 --nccl-warmup="$mode" "$@" touch "$MARKER"
}

assert_tasks_ran() {
	[ -e "$MARKER" ] || sn_fail "the tasks did not run"
}
assert_tasks_blocked() {
	[ ! -e "$MARKER" ] || sn_fail "the tasks ran despite the failed health check"
}

# The step fails on node n1, with the plugin's message matching PATTERN.
expect_fail() {
	run --separate-stderr warm_srun
	sn_assert_failed
	assert_tasks_blocked
	sn_assert_msg 'n1'
	sn_assert_msg "$1"
}

# The step runs and the plugin prints nothing (a clean health check).
expect_clean() {
	run --separate-stderr warm_srun
	sn_assert_status 0
	assert_tasks_ran
	sn_assert_no_msgs
}

# The step runs, and the plugin prints a health WARNING matching PATTERN.
expect_warn() {
	run --separate-stderr warm_srun
	sn_assert_status 0
	assert_tasks_ran
	sn_assert_msg "health WARNING: .*$1"
}

# A process of the unprivileged user that "holds" GPU memory: the fake
# NVML lists its pid, the helper names it with its owner.
start_holder() {
	setpriv --reuid "$(id -u "$SN_USER")" --regid "$(id -g "$SN_USER")" \
		--clear-groups sleep 600 &
	HOLDER=$!
}

@test "health: all checks clean on healthy GPUs (the fake NVML's defaults)" {
	expect_clean
	WARM_MODE=comm expect_clean
}

@test "health busy: a GPU held by another process fails (exit 14), naming pid, user and MiB" {
	start_holder
	export FAKE_NVML_PROCS="0:$HOLDER:70000"
	expect_fail "GPU 0 busy: held by another process: pid $HOLDER \\($SN_USER\\) 70000 MiB"
	sn_assert_msg 'held by another process|gpu_busy'
	# The holder on a GPU outside the step (3): not this step's problem.
	export FAKE_NVML_PROCS="3:$HOLDER:70000"
	expect_clean
}

@test "health busy: below health_busy_mib only a note; the threshold is the site's" {
	start_holder
	export FAKE_NVML_PROCS="1:$HOLDER:500"
	expect_clean
	run --separate-stderr warm_srun --nccl-warmup=check,verbose
	sn_assert_status 0
	sn_assert_msg "health note: GPU 1 in use by pid $HOLDER"
	sn_plugstack_set health_busy_mib=100
	expect_fail "GPU 1 busy: .*above health_busy_mib=100"
}

@test "health row_remap: pending remap or remap failure fails (exit 13)" {
	export FAKE_NVML_REMAP_PENDING=0,1
	expect_fail 'GPU 1 row_remap: row remap pending'
	unset FAKE_NVML_REMAP_PENDING
	export FAKE_NVML_REMAP_FAILURE=1
	expect_fail 'GPU 0 row_remap: row remapping failed'
	export FAKE_NVML_REMAP_FAILURE=0
	expect_clean
}

@test "health retired_pages: pending page retirement fails; none passes" {
	export FAKE_NVML_RETIRED_PENDING=1
	expect_fail 'GPU 0 retired_pages: retired pages pending'
	export FAKE_NVML_RETIRED_PENDING=0
	expect_clean
}

@test "health ecc: volatile uncorrectable ECC errors fail; zero passes" {
	export FAKE_NVML_ECC_UNCORR=0,3
	expect_fail 'GPU 1 ecc: 3 volatile uncorrectable ECC errors'
	export FAKE_NVML_ECC_UNCORR=0
	expect_clean
}

@test "health persistence: off warns by default, fails under persistence:fail" {
	export FAKE_NVML_PERSISTENCE=0
	expect_warn 'GPU 0 persistence: persistence mode off'
	sn_plugstack_set health=default,persistence:fail
	expect_fail 'GPU 0 persistence: persistence mode off'
	export FAKE_NVML_PERSISTENCE=1
	expect_clean
}

@test "health compute_mode: exclusive-process with another process fails; alone passes; prohibited fails" {
	export FAKE_NVML_COMPUTE_MODE=3
	expect_clean
	start_holder
	export FAKE_NVML_PROCS="0:$HOLDER:10"
	expect_fail "GPU 0 compute_mode: compute mode Exclusive_Process and another process \\(pid $HOLDER\\)"
	unset FAKE_NVML_PROCS
	export FAKE_NVML_COMPUTE_MODE=2
	expect_fail 'compute mode Prohibited'
}

@test "health pcie: a narrower link warns; gen below max only while not idle" {
	export FAKE_NVML_PCIE_WIDTH=8
	expect_warn 'GPU 0 pcie: PCIe link x8, below its x16'
	unset FAKE_NVML_PCIE_WIDTH
	# Idle (clock reason 0x1, the default): power saving, no warning.
	export FAKE_NVML_PCIE_GEN=1
	expect_clean
	export FAKE_NVML_CLOCK_REASONS=0
	expect_warn 'PCIe link gen 1, below its gen 5 while not idle'
	sn_plugstack_set health=default,pcie:fail
	expect_fail 'GPU 0 pcie: PCIe link gen 1'
}

@test "health nvlink: inactive links fail; a PCIe SKU without NVLink passes" {
	export FAKE_NVML_NVLINKS_ACTIVE=17
	expect_fail 'GPU 0 nvlink: 1 of its 18 NVLink links inactive'
	export FAKE_NVML_NVLINKS=0 FAKE_NVML_NVLINKS_ACTIVE=0
	expect_clean
}

@test "health clocks: HW slowdown / thermal / power brake warn; clocks:fail fails" {
	export FAKE_NVML_CLOCK_REASONS=0x88
	expect_warn 'GPU 0 clocks: clocks slowed down: HW slowdown HW power brake'
	export FAKE_NVML_CLOCK_REASONS=0x40
	sn_plugstack_set health=default,clocks:fail
	expect_fail 'HW thermal'
	export FAKE_NVML_CLOCK_REASONS=0x5
	expect_clean
}

@test "health=off: no check runs, faults pass; warn turns failures into warnings" {
	export FAKE_NVML_ECC_UNCORR=2 FAKE_NVML_REMAP_PENDING=1
	sn_plugstack_set health=off
	expect_clean
	sn_plugstack_set health=warn
	expect_warn 'GPU 0 row_remap: .*GPU 0 ecc: 2 volatile'
}

@test "health: without NVML the warmup runs and says it did not check" {
	export FAKE_NVML_FAIL=init FAKE_NVML_ECC_UNCORR=2
	run --separate-stderr warm_srun --nccl-warmup=check,verbose
	sn_assert_status 0
	assert_tasks_ran
	sn_assert_msg 'GPU health not checked: nvmlInit_v2'
}

@test "health=: a bad policy is refused at submission, naming the argument" {
	sn_plugstack_set health=sometimes
	run --separate-stderr warm_srun
	sn_assert_failed
	sn_assert_msg 'health=sometimes.*"sometimes" is not default, fail, warn or off'
	sn_plugstack_set health_busy_mib=lots
	run --separate-stderr warm_srun
	sn_assert_failed
	sn_assert_msg 'health_busy_mib=lots.*expected whole MiB'
}

@test "one GPU: bare NCCL_ALGO=Tree is refused although one rank never runs it; the multi-rank form passes" {
	run --separate-stderr env NCCL_ALGO=Tree timeout 60 srun -n1 --gres=gpu:1 \
		--nccl-warmup=comm touch "$MARKER"
	sn_assert_failed
	assert_tasks_blocked
	sn_assert_msg "warmup failed on node n1 .*NCCL_ALGO=Tree leaves broadcast no algorithm on NCCL 2\\.[0-9.]+ \\(>= 2\\.24\\): unset NCCL_ALGO$"
	run --separate-stderr env "NCCL_ALGO=ring,tree;allreduce:tree" timeout 60 \
		srun -n1 --gres=gpu:1 --nccl-warmup=comm,verbose touch "$MARKER"
	sn_assert_status 0
	assert_tasks_ran
	sn_assert_msg '1 GPU: a single rank tests no NVLink/PCIe peer or network transport'
}

@test "one GPU: a busbw floor is reported not measurable (not met), and the step runs" {
	sn_plugstack_set warmup_min_busbw=100 warmup_bytes=1M
	run --separate-stderr timeout 60 srun -n1 --gres=gpu:1 \
		--nccl-warmup=bandwidth touch "$MARKER"
	sn_assert_status 0
	assert_tasks_ran
	sn_assert_msg '1 GPU WARNING: bus bandwidth floor of 100 GB/s not measurable with one rank \(not met, not failed\)'
}

@test "health: the fleet record carries the class, health_status and health_findings" {
	local rec="$SN_CLUSTER_DIR/tmp/health-records-$BATS_TEST_NUMBER"
	rm -rf "$rec"
	mkdir -p "$rec"
	sn_plugstack_set "record_file=$rec/%n.jsonl"
	export FAKE_NVML_CLOCK_REASONS=0x8
	expect_warn 'GPU 0 clocks: clocks slowed down: HW slowdown'
	grep -q '"class":"ok".*"health_status":"warn","health_findings":"GPU 0 clocks: clocks slowed down: HW slowdown; GPU 1 clocks' "$rec/n1.jsonl" ||
		sn_fail "record of the warning: $(cat "$rec/n1.jsonl")"
	unset FAKE_NVML_CLOCK_REASONS
	start_holder
	export FAKE_NVML_PROCS="1:$HOLDER:70000"
	expect_fail "GPU 1 busy"
	tail -n 1 "$rec/n1.jsonl" |
		grep -q "\"class\":\"gpu_busy\".*\"health_status\":\"gpu_busy\",\"health_findings\":\"GPU 1 busy: held by another process: pid $HOLDER ($SN_USER) 70000 MiB" ||
		sn_fail "record of the failure: $(tail -n 1 "$rec/n1.jsonl")"
}

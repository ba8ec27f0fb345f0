#!/bin/sh
# SPDX-License-Identifier: MIT
# End-to-end test of the built nccl-warmup against the fake CUDA/NCCL: the
# run itself (GPUs, bus IDs, MIG, failures, deadlines, a crash), check mode,
# loading the driver and finding NCCL, the container's root.  Usage errors:
# test_nccl_warmup_usage.sh; health, one GPU, bandwidth and the job's
# NCCL_*: test_nccl_warmup_health.sh.
# Set-up and checks: lib/nccl_warmup_cases.sh.  Run by "make check" from
# the build directory.
set -u

src=${SN_SRC_DIR:-${srcdir:-.}}
# shellcheck source=tests/unit/lib/nccl_warmup_cases.sh
. "$src/tests/unit/lib/nccl_warmup_cases.sh"

# --- all distinct (default 4 fake GPUs); clean teardown, to time it ------
run distinct -- --json --teardown clean
expect_rc 0; ok_json
expect_err "spank-nccl: warmup ok on testnode: 4 GPUs [0000:01:00.0 0000:02:00.0 0000:03:00.0 0000:04:00.0], driver CUDA 13.0, NCCL 2."
expect_err " from $fake/nccl/libnccl.so.2 (ld_library_path)"
expect_err ", NCCL memory 200/200/200/200 MiB"
expect_err ", collectives "
expect_json '"driver_version":null,"cuda_driver_version":13000'
expect_json "\"nccl_path\":\"$fake/nccl/libnccl.so.2\",\"nccl_source\":\"ld_library_path\""
expect_json '"collectives":{"allreduce":'
for op in broadcast allgather reducescatter sendrecv; do
	expect_json "\"$op\":"
done
expect_no_json '"failed_op"'
expect_json '"mig":false,"nccl_mem_mib":200}'
expect_err ", comm mode, NCCL memory "
expect_err " MiB, cuda "
expect_err ", comm init "
expect_err ", all-reduce "
expect_err ", teardown "
expect_json '"gpus":[{"index":0,"busid":"0000:01:00.0","uuid":"GPU-fa4e0000-0000-0000-0000-000000000000","name":"NVIDIA Fake GPU","mig":false,"nccl_mem_mib":200},'
expect_json '{"index":3,"busid":"0000:04:00.0"'
expect_json '"cuda_visible_devices":null'
expect_json '"busbw_gbps":null'
expect_json "\"ids\":{\"uid\":[$(id -ru),$(id -u),"
expect_json "\"gid\":[$(id -rg),$(id -g),"
for k in cuda_init contexts comm_init allreduce collectives teardown total; do
	case $out in *"\"$k\":null"*) fail "timing $k missing";; esac
	expect_json "\"$k\":"
done
expect_json '"bandwidth":null'

# --- GH200: only the PCI domain differs ---------------------------------
run gh200 FAKE_CUDA_BUSIDS=0009:01:00.0,0019:01:00.0,0029:01:00.0,0039:01:00.0 -- --json
expect_rc 0; ok_json
expect_err "4 GPUs [0009:01:00.0 0019:01:00.0 0029:01:00.0 0039:01:00.0]"

# --- a true duplicate ----------------------------------------------------
run duplicate FAKE_CUDA_BUSIDS=0000:01:00.0,0000:02:00.0,0000:02:00.0 \
	FAKE_CUDA_UUIDS=GPU-11111111-1111-1111-1111-111111111111,GPU-22222222-2222-2222-2222-222222222222,GPU-33333333-3333-3333-3333-333333333333 \
	-- --json
expect_rc 3; expect_shape
expect_json '"status":"duplicate_busid"'
expect_err "spank-nccl: warmup FAILED on testnode: duplicate PCI bus ID: CUDA devices 1 and 2 both report 0000:02:00.0 (UUIDs GPU-22222222-2222-2222-2222-222222222222 and GPU-33333333-3333-3333-3333-333333333333)"
expect_json '"message":"duplicate PCI bus ID: CUDA devices 1 and 2 both report 0000:02:00.0'

# Duplicates are caught in check mode too (no NCCL at all).
run duplicate-check FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0 -- --mode check
expect_rc 3
expect_err "CUDA devices 0 and 1 both report 0000:01:00.0"
[ -z "$out" ] || fail "stdout must be empty without --json"

# --- MIG -------------------------------------------------------------
mig_a=MIG-aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa
mig_b=MIG-bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb
# Two MIG instances of one GPU visible (FAKE_CUDA_MIG=all): not a fault,
# the NCCL phase is skipped with a note.
run mig-two FAKE_CUDA_MIG=all FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0 \
	FAKE_CUDA_UUIDS=$mig_a,$mig_b CUDA_VISIBLE_DEVICES=$mig_a,$mig_b \
	FAKE_NCCL_FAIL=init -- --json
expect_rc 0; ok_json
expect_err "MIG: NCCL communicator check skipped"
expect_json "\"uuid\":\"$mig_a\",\"name\":\"NVIDIA Fake GPU\",\"mig\":true"
expect_json "\"uuid\":\"$mig_b\",\"name\":\"NVIDIA Fake GPU\",\"mig\":true"
expect_json '"comm_init":null'
# Real CUDA enumerates one MIG instance per process: a 1-rank communicator.
run mig-one FAKE_CUDA_MIG=1 FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0 \
	FAKE_CUDA_UUIDS=$mig_a,$mig_b CUDA_VISIBLE_DEVICES=$mig_a,$mig_b -- --json
expect_rc 0; ok_json
expect_err "1 GPU [0000:01:00.0]"
expect_json "\"uuid\":\"$mig_a\",\"name\":\"NVIDIA Fake GPU\",\"mig\":true"
expect_no_json "\"uuid\":\"$mig_b\""

# --- CUDA_VISIBLE_DEVICES ------------------------------------------------
run cvd-empty CUDA_VISIBLE_DEVICES= -- --json
expect_rc 2; expect_shape
expect_json '"status":"no_gpus"'
expect_json '"cuda_visible_devices":""'
expect_err 'no visible CUDA device (CUDA_VISIBLE_DEVICES="")'
run cvd-subset CUDA_VISIBLE_DEVICES=2,0 -- --json
expect_rc 0; ok_json
expect_err "2 GPUs [0000:03:00.0 0000:01:00.0]"
expect_json '"cuda_visible_devices":"2,0"'

# --- failures ------------------------------------------------------------
run cuda-init FAKE_CUDA_FAIL=init -- --json
expect_rc 4; expect_shape
expect_json '"status":"cuda_error"'
expect_err "cuInit failed: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803): system has unsupported display driver / cuda driver combination"

run cuda-context FAKE_CUDA_FAIL=context -- --json
expect_rc 4; expect_shape
expect_err "cuDevicePrimaryCtxRetain on device 3 failed: CUDA_ERROR_DEVICE_UNAVAILABLE (46)"

run nccl-init FAKE_NCCL_FAIL=init -- --json
expect_rc 5; expect_shape
expect_json '"status":"nccl_error"'
expect_err "NCCL communicator init (rank 0) failed: unhandled system error"
expect_err "fake: injected init failure"

run nccl-uniqueid FAKE_NCCL_FAIL=uniqueid -- --json
expect_rc 5
expect_err "ncclGetUniqueId failed"

run nccl-allreduce FAKE_NCCL_FAIL=allreduce -- --json
expect_rc 5
expect_err "NCCL allreduce failed: unhandled cuda error"; expect_err "; detail: async; NCCL_* in effect: none"
expect_json '"failed_op":"allreduce"'

run wrong-result FAKE_NCCL_WRONG_RESULT=1 -- --json
expect_rc 6; expect_shape
expect_json '"status":"wrong_result"'
expect_err "allreduce returned 11 on device 3 (0000:04:00.0), expected 10"
expect_json '"failed_op":"allreduce"'

# --- deadlines -----------------------------------------------------------
run nccl-hang FAKE_NCCL_HANG=init -- --json --timeout 1
expect_rc 8; expect_shape
expect_json '"status":"timeout"'
expect_err "NCCL communicator init did not finish within the 1 s deadline"
[ "$elapsed_ms" -lt 15000 ] || fail "took ${elapsed_ms} ms for --timeout 1 (a hang that the deadline did not end)"

# A call that never returns: only the watchdog can end it.
run cuda-hang FAKE_CUDA_HANG=init -- --json --timeout 1
expect_rc 8; expect_shape
expect_err "timed out after 1 s, blocked in cuInit"
[ "$elapsed_ms" -lt 15000 ] || fail "took ${elapsed_ms} ms for --timeout 1 (a hang that the deadline did not end)"
# A wedged NVML is ended by the same deadline, naming the call.
run nvml-hang FAKE_NVML_HANG=init -- --json --mode check --timeout 1
expect_rc 8; expect_shape
expect_err "timed out after 1 s, blocked in nvmlInit_v2"
[ "$elapsed_ms" -lt 15000 ] || fail "took ${elapsed_ms} ms for --timeout 1 (NVML hang not ended)"

# 6 s, not 1: under ASan on a loaded 2-core machine the fake's
# communicator init alone took 2.9 s (CI: "blocked in ncclGroupEnd
# (communicator init)"), and the hang must be reached first.  The hang
# never ends by itself: the bound proves the deadline ended it.
run allreduce-hang FAKE_NCCL_HANG=allreduce -- --json --timeout 6
expect_rc 8
expect_err "allreduce did not finish within the 6 s deadline"
[ "$elapsed_ms" -lt 20000 ] || fail "took ${elapsed_ms} ms for --timeout 6"

run teardown-hang FAKE_NCCL_HANG=teardown -- --json --timeout 6 --teardown clean
expect_rc 8
expect_err "ncclCommFinalize did not finish within the 6 s deadline"

# --teardown exit never finalizes: the same fault cannot bite.  Cases
# that must pass get a deadline a loaded machine cannot reach (30 s): a
# finalize that hung would still end in it, and fail the case.
run teardown-exit FAKE_NCCL_HANG=teardown -- --json --timeout 30 --teardown exit
expect_rc 0; ok_json
expect_json '"teardown":null'

# The default is the plugin's (warmup_teardown=exit): helper_protocol.h.
run teardown-default FAKE_NCCL_HANG=teardown -- --json --timeout 30
expect_rc 0; ok_json
expect_json '"teardown":null'

run teardown-bad -- --teardown fast
expect_rc 1
expect_err "invalid --teardown 'fast': give clean or exit"

run slow-init FAKE_NCCL_INIT_DELAY_MS=600 -- --json --timeout 30
expect_rc 0; ok_json
ms=$(printf '%s' "$out" | sed -n 's/.*"comm_init":\([0-9]*\).*/\1/p')
if [ -z "$ms" ] || [ "$ms" -lt 600 ]; then
	fail "comm_init $ms ms, expected >= 600"
fi

# --- crash: the helper dies by SIGSEGV (the plugin must cope) ------------
run crash FAKE_NCCL_CRASH=init -- --json
[ "$rc" -eq 139 ] || fail "expected death by SIGSEGV (status 139)"
[ -z "$out" ] || fail "a crashed helper cannot have printed a result"

# --- check mode makes no NCCL calls (but names the NCCL) -----------------
run check-mode FAKE_NCCL_FAIL=init,uniqueid FAKE_NCCL_CRASH=init -- --json --mode check
expect_rc 0; ok_json
expect_json '"nccl_source":"ld_library_path"'
expect_json '"mode":"check"'
expect_json '"comm_init":null'

# --- FAKE_*_LOG: one line per process that loaded the library ------------
run log FAKE_CUDA_LOG="$tmp/cuda.log" FAKE_NCCL_LOG="$tmp/nccl.log" -- --mode check
run log FAKE_CUDA_LOG="$tmp/cuda.log" FAKE_NCCL_LOG="$tmp/nccl.log" -- --mode comm
[ "$(grep -c "^lib=cuda pid=[0-9]* uid=$(id -ru)/$(id -u)/" "$tmp/cuda.log")" -eq 2 ] ||
	fail "expected 2 cuda log lines: $(cat "$tmp/cuda.log")"
# Check mode loads NCCL too (to name it), but runs nothing of it.
[ "$(grep -c '^lib=nccl pid=' "$tmp/nccl.log")" -eq 2 ] ||
	fail "expected 2 nccl log lines"

# --- the driver and NCCL are loaded at run time --------------------------
# Nothing of CUDA or NCCL is linked: a node with only the driver runs it.
if command -v ldd >/dev/null 2>&1; then
	name=ldd
	out=$(ldd "$helper" 2>&1); rc=0; err=
	case $out in *libcuda*|*libnccl*)	# libcuda also matches libcudart
		fail "nccl-warmup links CUDA or NCCL";; esac
fi

run no-driver LD_LIBRARY_PATH="$fake/nccl" -- --json
expect_rc 4; expect_shape
expect_err "no NVIDIA driver: cannot load libcuda.so.1"
expect_json '"driver_version":null,"cuda_driver_version":null'

run driver-version FAKE_CUDA_DRIVER_VERSION=12040 -- --json
expect_rc 0
expect_err "driver CUDA 12.4"
expect_json '"cuda_driver_version":12040'

# --- which NCCL: preload > --nccl > LD_LIBRARY_PATH > --nccl-default > system
run order-ldpath LD_LIBRARY_PATH="$fake/cuda:$fake/nccl-alt:$fake/nccl" -- --json
expect_rc 0
expect_err "NCCL 2.23.4 from $fake/nccl-alt/libnccl.so.2 (ld_library_path)"
run order-user -- --json --nccl "$fake/nccl-alt"
expect_rc 0
expect_json "\"nccl_version\":\"2.23.4\""
expect_json "\"nccl_path\":\"$fake/nccl-alt/libnccl.so.2\",\"nccl_source\":\"user\""
run order-user-file -- --json --nccl "$fake/nccl-alt/libnccl.so.2" --nccl-default "$fake/nccl"
expect_rc 0
expect_json '"nccl_source":"user"'
# Two NCCLs on one node: the preloaded one is what the job runs.
# Under --enable-sanitizers ASan wants to be first in the link order; a
# preloaded library is the point of this case.
run order-preload LD_PRELOAD="$fake/nccl-alt/libnccl.so.2" \
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	-- --json --nccl "$fake/nccl"
expect_rc 0
expect_err "NCCL 2.23.4 from $fake/nccl-alt/libnccl.so.2 (preload)"
run order-admin LD_LIBRARY_PATH="$fake/cuda" -- --json --nccl-default "$fake/nccl-alt"
expect_rc 0
expect_json "\"nccl_path\":\"$fake/nccl-alt/libnccl.so.2\",\"nccl_source\":\"admin\""
# LD_LIBRARY_PATH comes before the admin's default.
run order-ldpath-admin -- --json --nccl-default "$fake/nccl-alt"
expect_rc 0
expect_json '"nccl_source":"ld_library_path"'
run named-missing -- --json --nccl /nonexistent/nccl
expect_rc 5; expect_shape
# Said once, as the user typed it (issue 31).
expect_err "--nccl-warmup=...,nccl=/nonexistent/nccl: file or directory does not exist"
expect_no_err "cannot load"
run named-relative -- --nccl lib/libnccl.so.2
expect_rc 1
expect_err "invalid --nccl 'lib/libnccl.so.2': give the absolute path"

run missing-symbol -- --json --nccl "$fake/nccl-old"
expect_rc 5; expect_shape
expect_err "NCCL 2.12.12 (user) lacks ncclCommInitRankConfig: NCCL 2.14 or newer is needed"
expect_err "; detail: the NCCL at $fake/nccl-old/libnccl.so.2"
expect_json '"nccl_version":"2.12.12"'

# No NCCL anywhere: the system's search must come up empty too, which a
# mount namespace with an empty ld.so.cache guarantees.
no_nccl() {	# no_nccl HELPER-ARGS...
	run no-nccl LD_LIBRARY_PATH="$fake/cuda" -- --json "$@"
}
no_nccl_hidden() {	# as no_nccl, the system's NCCL hidden; 1 if it cannot be
	if ! /sbin/ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2 '; then
		no_nccl "$@"
	elif [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null &&
	     unshare -m true 2>/dev/null; then
		name=no-nccl
		env LD_LIBRARY_PATH="$fake/cuda" unshare -m sh -c \
			'mount --bind /dev/null /etc/ld.so.cache && exec "$@"' sh \
			"$helper" --node testnode --json "$@" >"$tmp/out" 2>"$tmp/err"
		rc=$?; out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
	else
		echo "SKIP [no-nccl]: this machine has a system libnccl.so.2 and no root to hide it" >&2
		return 1
	fi
}
if no_nccl_hidden; then
	expect_rc 5
	expect_err "no NCCL found: looked in LD_PRELOAD (unset), the step's nccl= (not given), LD_LIBRARY_PATH ($fake/cuda)"
	expect_err "--nccl-warmup=...,nccl=/path/to/libnccl.so.2"
	expect_json '"nccl_source":null'
fi
# Check mode needs no NCCL: it passes and says there is none.
if no_nccl_hidden --mode check; then
	expect_rc 0
	expect_err "check mode, no NCCL on the node"
	expect_json '"note":"no NCCL on the node"'
	expect_json '"nccl_path":null'
fi

# --- --container-root-fd: the container's root as an inherited descriptor
# (spank_nccl.so's root agent opens the task's /proc/PID/root); the image's
# NCCL is found under it and named by its path inside the container.
mkdir -p "$tmp/croot/usr/lib"
cp "$fake/nccl/libnccl.so.2" "$tmp/croot/usr/lib/libnccl.so.2"
name=container-root-fd
"$helper" --node testnode --json --container-pid $$ --container-image img:1 \
	--container-root-fd 7 7<"$tmp/croot" >"$tmp/out" 2>"$tmp/err"
rc=$?; out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
expect_rc 0
expect_err "from /usr/lib/libnccl.so.2 (container image img:1)"
case $out$err in *"/proc/"*) fail "a /proc path leaked into the output";; esac
# The helper changes its environment only while no thread but the watchdog
# runs (NVML's threads call getenv(); tests/fake/env_guard.c aborts it
# otherwise): a container's NCCL_* set from its task's environ (--container-pid
# by hand: /proc/PID/environ, here a task's with NCCL_ALGO=Ring, no fabric
# ring needed: one node), and comm mode's unset NCCL_COMM_ID.  Fabric
# mode: test_fabric_helper.sh.  ENV_GUARD_THREADS=0 shows each path
# changes the environment at all.
env NCCL_ALGO=Ring sleep 300 &
task=$!
# Until sleep is executed, /proc/PID/environ is still the shell's (a race
# that failed this case once on a loaded machine): wait for the exec.
for _ in $(seq 500); do
	tr '\0' '\n' <"/proc/$task/environ" 2>/dev/null |
		grep -qx NCCL_ALGO=Ring && break
	sleep 0.01
done
for max in 0 2; do
	name=env-guard-container-$max
	# shellcheck disable=SC2086
	env ENV_GUARD_THREADS=$max $guard_env "$helper" --node testnode \
		--json --container-pid $task --container-image img:1 \
		>"$tmp/out" 2>"$tmp/err"
	rc=$?; out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
	if [ $max = 0 ]; then
		expect_err "env_guard: setenv(NCCL_ALGO)"
	else
		expect_rc 0
		expect_err "(container image img:1)"
		expect_no_err "env_guard"
	fi
done
kill $task
# shellcheck disable=SC2086
run env-guard-comm-0 ENV_GUARD_THREADS=0 $guard_env NCCL_COMM_ID=127.0.0.1:1 -- --json
expect_err "env_guard: unsetenv(NCCL_COMM_ID)"
# shellcheck disable=SC2086
run env-guard-comm $guard_env NCCL_COMM_ID=127.0.0.1:1 -- --json
expect_rc 0
expect_no_err "env_guard"
# CUDA_DEVICE_MAX_CONNECTIONS=1 unless the job set it, while the main
# thread is the only one (before the watchdog): the first change, done
# with one thread; check mode makes no context and sets nothing.
noguard=$(printf '%s' "$guard_env" | sed 's/CUDA_DEVICE_MAX_CONNECTIONS=8 //')
# shellcheck disable=SC2086
run env-guard-connections-0 ENV_GUARD_THREADS=0 $noguard -- --json
expect_err "env_guard: setenv(CUDA_DEVICE_MAX_CONNECTIONS)"
# shellcheck disable=SC2086
run env-guard-connections-1 ENV_GUARD_THREADS=1 $noguard -- --json
expect_err "env_guard: unsetenv(NCCL_COMM_ID)"
# shellcheck disable=SC2086
run env-guard-connections-check ENV_GUARD_THREADS=0 $noguard -- --json --mode check
expect_rc 0
expect_no_err "env_guard"
# A descriptor that is not an open directory: the container cannot be read.
name=container-root-fd-closed
"$helper" --node testnode --json --container-pid $$ --container-image img:1 \
	--container-root-fd 9 9<"$tmp/croot/usr/lib/libnccl.so.2" \
	>"$tmp/out" 2>"$tmp/err"
rc=$?; out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
expect_rc 5
expect_err "cannot read the container of process $$ (container image img:1)"
run container-root-fd-bad -- --container-pid 1 --container-root-fd 2
expect_rc 1
expect_err "invalid --container-root-fd '2': give an open descriptor number from 3 to 65535"
run container-root-fd-word -- --container-pid 1 --container-root-fd x7
expect_rc 1
expect_err "invalid --container-root-fd 'x7'"
# Digits only: strtol() once took a sign and leading spaces.
run container-root-fd-plus -- --container-pid 1 --container-root-fd +7
expect_rc 1
expect_err "invalid --container-root-fd '+7'"
run container-pid-space -- --container-pid ' 1' --container-root-fd 7
expect_rc 1
expect_err "invalid --container-pid ' 1': give the process ID"
run container-pid-huge -- --container-pid 18446744073709551617
expect_rc 1
expect_err "invalid --container-pid '18446744073709551617'"
run container-root-fd-alone -- --container-root-fd 7
expect_rc 1
expect_err "--container-root-fd is the root of --container-pid: give both"

# Comm mode's throwaway communicator has 2 channels (config.maxCTAs),
# unless the job sets a channel count; bandwidth mode keeps NCCL's.
run channels-comm NCCL_DEBUG=INFO -- --mode comm
expect_rc 0
expect_json 'NCCL INFO 2 coll channels'
run channels-job NCCL_DEBUG=INFO NCCL_MAX_CTAS=8 -- --mode comm
expect_rc 0
expect_json 'NCCL INFO 24 coll channels'
run channels-bandwidth NCCL_DEBUG=INFO -- --mode bandwidth --bytes 1M
expect_rc 0
expect_json 'NCCL INFO 24 coll channels'

# --- --result-fd: the result on its own descriptor.  NCCL_DEBUG=INFO
# without NCCL_DEBUG_FILE puts NCCL's log on stdout (as the fake NCCL
# does, like the real one), and a preload prints a fake JSON and junk on
# stdout and stderr (tests/fake/junk_preload.c): in every mode the real
# result is the one line on descriptor 3, NCCL's log and the junk on
# stdout.  (spank_nccl.so reads it there: test_plugin_warmup,
# warmup.bats.)
junk_env="LD_PRELOAD=$fake/junk/libjunk.so ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
for mode in check comm bandwidth fabric container; do
	name=result-fd-$mode
	case $mode in
	fabric) set -- --mode fabric --job-id 3 --step-id 1 --node-index 0 \
		--nodes 1 --nodelist testnode ;;
	container) set -- --container-pid $$ --container-image img:1 \
		--container-root-fd 7 ;;
	*) set -- --mode "$mode" ;;
	esac
	# shellcheck disable=SC2086
	env $junk_env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALL "$helper" \
		--node testnode --json --result-fd 3 "$@" 3>"$tmp/res" \
		7<"$tmp/croot" >"$tmp/out" 2>"$tmp/err"
	rc=$?; out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
	res=$(cat "$tmp/res")
	expect_rc 0
	[ "$(wc -l <"$tmp/res")" -eq 1 ] || fail "descriptor 3 is not one line: $res"
	case $res in '{"version":1,"node":"testnode"'*'"status":"ok"'*'}') ;;
	*) fail "descriptor 3 is not the result: $res" ;; esac
	case $res in *FAKE*) fail "the preload's JSON on descriptor 3" ;; esac
	expect_json 'FAKE-JSON from LD_PRELOAD'
	expect_json 'junk-preload: unterminated'
	expect_err 'FAKE-JSON from LD_PRELOAD'
	case $out in *'"node":"testnode"'*) fail "the result on stdout" ;; esac
	# NCCL's log reached stdout (fabric mode: copied from its own memfd
	# at the end), except in check mode, which runs no NCCL.
	case $mode in
	check) expect_no_json ' NCCL INFO ' ;;
	*) expect_json ' NCCL INFO ' ;;
	esac
done
# Fabric mode shows the lines of the job's level only (WARN: none of the
# fake's INFO lines), and none when the job named NCCL_DEBUG_FILE: they
# go there, %h and %p expanded as NCCL does, appended.
echo "the job's own line" >"$tmp/nccl.$(hostname | cut -d. -f1).log"
for v in NCCL_DEBUG=WARN "NCCL_DEBUG=INFO NCCL_DEBUG_FILE=$tmp/nccl.%h.log"; do
	name="fabric-log-$v"
	# shellcheck disable=SC2086
	env $v "$helper" --node testnode --json --result-fd 3 --mode fabric \
		--job-id 3 --step-id 1 --node-index 0 --nodes 1 \
		--nodelist testnode 3>"$tmp/res" >"$tmp/out" 2>"$tmp/err"
	rc=$?; out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
	expect_rc 0
	expect_no_json ' NCCL INFO '
done
log=$tmp/nccl.$(hostname | cut -d. -f1).log
name=fabric-log-file
[ "$(head -n1 "$log")" = "the job's own line" ] || fail "$log not appended to"
grep -q ' NCCL INFO ' "$log" || fail "no NCCL INFO line in $log"
# Without --result-fd, the JSON stays on stdout (by hand, and scripts).
run result-fd-none -- --json --mode check
expect_rc 0; ok_json
run result-fd-closed -- --json --result-fd 9
expect_rc 1
expect_err "invalid --result-fd '9': give an open descriptor number from 3 to 65535"
name=result-fd-without-json
"$helper" --node testnode --result-fd 3 3>"$tmp/res" >"$tmp/out" 2>"$tmp/err"
rc=$?; out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
expect_rc 1
expect_err "--result-fd is where --json writes: give both"
# A usage error's JSON goes where the result would, too.
name=result-fd-usage
"$helper" --node testnode --json --result-fd=3 --mode fast 3>"$tmp/res" \
	>"$tmp/out" 2>"$tmp/err"
rc=$?; out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
expect_rc 1
[ -z "$out" ] || fail "stdout must be empty"
grep -q '"status":"usage".*invalid --mode' "$tmp/res" ||
	fail "no usage JSON on descriptor 3: $(cat "$tmp/res")"

cases_done ""

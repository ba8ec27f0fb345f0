# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# The GPU tests' phase 4, sourced by tests/gpu/run-gpu-tests.sh: the checks
# on the one-node cluster, each a t_* function counted by run_test
# (lib/srun.sh has what they are made of).

t_no_warmup() {
	local mark
	mark=$(log_mark)
	run_srun 30 "$(gres)" true
	want "srun exits 0" srun_ok
	want "no warmup without --nccl-warmup" \
		lacks "nccl-warmup" <(log_since "$mark")
}

t_ddp_profiles() {
	local mark shm_before
	mark=$(log_mark)
	shm_before=$(ls /dev/shm 2>/dev/null | sort)
	PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:256 \
	SN_GPU_BASELINE=$gpu_baseline \
		run_srun 180 "$(gres)" --nccl-warmup \
		--nccl-profile=nccl-cumem-off,expandable-segments \
		python3 "$src/tests/gpu/ddp_check.py" --gpus "$gpu_count" \
		--user-key max_split_size_mb:256
	want "srun exits 0 (ddp_check.py: GPUs idle, profile env, all_reduce)" srun_ok
	want "ddp_check.py reports ok" out_has "ddp_check: ok: $gpu_count ranks"
	# warmup_teardown=exit (the default) must leave nothing behind either.
	want "nothing new left in /dev/shm" \
		test "$(ls /dev/shm 2>/dev/null | sort)" = "$shm_before"
	want "one passed comm warmup over $gpu_count GPUs in the log" \
		warmup_records "$mark" --count 1 --status passed --mode comm \
		--gpus "$gpu_count" --busids "$gpu_busids" --uid 0
}

t_one_warmup_per_node() {
	local mark
	mark=$(log_mark)
	run_srun 60 -n "$gpu_count" "$(gres)" --nccl-warmup \
		printenv SLURM_PROCID
	want "srun exits 0" srun_ok
	want "$gpu_count tasks ran" \
		test "$(sort -u "$srun_out" | grep -c '^[0-9]')" -eq "$gpu_count"
	want "exactly one warmup for the $gpu_count-task step" \
		warmup_records "$mark" --count 1 --status passed
}

# Summary line of a verbose warmup: "spank-nccl: warmup ok on NODE: 4 GPUs
# [busids], NCCL x.y.z, MODE mode, ..." on srun's stderr.  NODE is the
# Slurm node name or, where the plugin cannot learn it in user_init, the
# host name (they differ here: slurmd -N n1).
check_summary() {
	local mode=$1 id
	want "verbose summary says ok on n1 or $(hostname)" \
		err_has "spank-nccl: warmup ok on (n1|$(hostname)):"
	want "summary names $gpu_count GPUs" err_has "[^0-9]$gpu_count GPUs? \\["
	for id in ${gpu_busids//,/ }; do
		want "summary names bus ID $id" err_has_i "$id"
	done
	if [ -n "$nccl_lib_version" ]; then
		want "summary names NCCL $nccl_lib_version" err_has "NCCL $nccl_lib_version"
	else
		want "summary names an NCCL version" err_has "NCCL [0-9]+\\.[0-9]+\\.[0-9]+"
	fi
	want "summary says $mode mode" err_has "$mode mode"
}

t_mode() {
	local mode=$1 mark
	mark=$(log_mark)
	SN_GPU_BASELINE=$gpu_baseline run_srun 60 "$(gres)" \
		--nccl-warmup="$mode,verbose" \
		python3 "$src/tests/gpu/gpu_state.py" check-idle
	want "srun exits 0 (task found the GPUs idle)" srun_ok
	check_summary "$mode"
	want "one passed $mode warmup in the log" \
		warmup_records "$mark" --count 1 --status passed --mode "$mode" \
		--gpus "$gpu_count"
	if [ "$mode" = bandwidth ] && [ "$gpu_count" -eq 1 ]; then
		# One rank moves no data between GPUs: said, not a number.
		want "summary says busbw is not measurable on one GPU" \
			err_has "1 GPU: bus bandwidth not measurable with one rank"
	elif [ "$mode" = bandwidth ]; then
		want "summary gives busbw" err_has "busbw [0-9.]+ GB/s"
	fi
}
t_mode_check() { t_mode check; }
t_mode_comm() { t_mode comm; }
t_mode_bandwidth() { t_mode bandwidth; }

t_busbw_floor_met() {
	plugstack warmup_min_busbw=10
	run_srun 60 "$(gres)" --nccl-warmup=bandwidth,verbose echo TASK-RAN
	want "srun exits 0 at a 10 GB/s floor" srun_ok
	want "the task ran" out_has TASK-RAN
	sn_plugstack_reset
}

t_busbw_floor_missed() {
	if [ "$gpu_count" -eq 1 ]; then
		# One rank measures no bus bandwidth: reported, never "met".
		plugstack warmup_min_busbw=100000
		run_srun 60 "$(gres)" --nccl-warmup=bandwidth echo TASK-RAN
		want "srun exits 0 (a floor is not measurable on one GPU)" srun_ok
		want "the task ran" out_has TASK-RAN
		want "stderr says the floor is not measurable, not met" \
			err_has "1 GPU WARNING: bus bandwidth floor of 100000 GB/s not measurable"
		sn_plugstack_reset
		return
	fi
	plugstack warmup_min_busbw=100000
	run_srun 60 "$(gres)" --nccl-warmup=bandwidth echo TASK-RAN
	want "srun fails at a 100000 GB/s floor" srun_failed
	want "the task did not run" lacks TASK-RAN "$srun_out"
	want "stderr has spank-nccl: ... bandwidth" err_has "spank-nccl:.*bandwidth"
	want "stderr names the floor" err_has "100000"
	sn_plugstack_reset
}

# fault NAME EXPECT_RE LIMIT_S [HELPER_MS]: a fault from tests/gpu/interpose.c.
# LIMIT_S bounds the whole srun; HELPER_MS the job's helper alone (its
# record's "in N ms"): killed at warmup_timeout + 0.3 s slack + 0.3 s
# grace.  The srun also waits for the root confirmation, which has its own
# full deadline (step_confirm.c), so a hang's srun bound is twice that.
fault() {
	local name=$1 expect=$2 limit=$3 helper_ms=${4:-} mark
	mark=$(log_mark)
	rm -f "$SN_CLUSTER_DIR/tmp/fault.log"
	run_srun 60 "$(gres)" --nccl-warmup=comm \
		--export="ALL,LD_PRELOAD=$SN_CLUSTER_DIR/lib/interpose.so,SN_FAULT=$name,SN_FAULT_LOG=$SN_CLUSTER_DIR/tmp/fault.log" \
		echo TASK-RAN
	want "srun fails" srun_failed
	want "the task did not run" lacks TASK-RAN "$srun_out"
	want "stderr has spank-nccl: and /$expect/" err_has "spank-nccl:.*($expect)"
	want "srun ended within $limit s (took $srun_s s)" within "$limit"
	want "the log records a failed warmup${helper_ms:+ of at most $helper_ms ms}" \
		warmup_records "$mark" --count 1 --status failed ${helper_ms:+--max-ms "$helper_ms"}
	want "the fault was injected (not a real failure)" \
		grep -q "injecting fault $name" "$SN_CLUSTER_DIR/tmp/fault.log"
	want "no nccl-warmup process left" no_helper_left
	want "GPUs idle again" gpus_idle_now
}

t_fault_dup_busid() {
	needs_gpus 2 || return 0
	fault dup_busid "duplicate PCI bus ID" 20
}

timeout_re="timed out|did not finish"
# warmup_timeout=5: the helper 5 s + 0.6 s (+ 0.3 s to log it), the srun
# the helper's and the confirmation's deadlines + 2 s to start and end.
hang_helper_ms=5900
hang_srun_s=13.2
t_fault_init_hang() {
	plugstack warmup_timeout=5
	fault init_hang "$timeout_re" "$hang_srun_s" "$hang_helper_ms"
	sn_plugstack_reset
}
t_fault_async_hang() {
	plugstack warmup_timeout=5
	fault async_hang "$timeout_re" "$hang_srun_s" "$hang_helper_ms"
	sn_plugstack_reset
}
t_fault_wedged() {
	plugstack warmup_timeout=5
	fault wedged "did not finish within 5 s and was killed" "$hang_srun_s" "$hang_helper_ms"
	sn_plugstack_reset
}

# The NCCL of PyTorch's nvidia-nccl-cu* wheel in the venv, and its version.
venv_nccl=
venv_nccl_version=
find_venv_nccl() {
	venv_nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
	venv_nccl_version=$(python3 -c 'import torch; print(".".join(map(str, torch.cuda.nccl.version())))' 2>/dev/null)
	[ -f "$venv_nccl/libnccl.so.2" ]
}

t_driver_only() {
	want "nccl-warmup links no CUDA or NCCL library" \
		sh -c "! ldd '$(sn_helper_path)' | grep -E 'libcuda|libnccl'"
	want "no libcudart in the loader path" \
		sh -c "! ldconfig -p | grep -q libcudart"
	run_srun 60 "$(gres)" --nccl-warmup=comm,verbose echo TASK-RAN
	want "srun exits 0" srun_ok
	want "the task ran" out_has TASK-RAN
	want "summary names the driver" err_has "driver [^,]*[0-9]+\\.[0-9]+"
	if [ -n "$sys_nccl" ]; then
		want "summary names the system NCCL $nccl_lib_version at $sys_nccl" \
			err_has_f "NCCL ${nccl_lib_version:-} from $sys_nccl (system)"
	fi
	want "summary gives the NCCL memory per GPU" err_has "NCCL memory [0-9/]+ MiB"
	say "  $(grep -o 'driver [^,]*, NCCL [^,]*, comm mode, NCCL memory [^,]*' "$srun_err")"
}

t_venv_nccl() {
	if ! find_venv_nccl; then
		t_problems+=("no nvidia-nccl wheel in python3's environment")
		return
	fi
	run_srun 60 "$(gres)" --nccl-warmup="comm,verbose,nccl=$venv_nccl" echo TASK-RAN
	want "srun exits 0 (nccl=venv)" srun_ok
	want "summary names the venv's NCCL $venv_nccl_version at $venv_nccl (user)" \
		err_has_f "NCCL $venv_nccl_version from $venv_nccl/libnccl.so.2 (user)"
	say "  $(grep -o 'NCCL [0-9.]* from [^,]*, comm mode, NCCL memory [^,]*' "$srun_err")"
	run_srun 60 "$(gres)" --export="ALL,LD_PRELOAD=$venv_nccl/libnccl.so.2" \
		--nccl-warmup=comm,verbose echo TASK-RAN
	want "srun exits 0 (LD_PRELOAD)" srun_ok
	want "the preloaded venv NCCL is warmed (preload)" \
		err_has_f "NCCL $venv_nccl_version from $venv_nccl/libnccl.so.2 (preload)"
	run_srun 60 "$(gres)" --export="ALL,LD_LIBRARY_PATH=$venv_nccl" \
		--nccl-warmup=comm,verbose echo TASK-RAN
	want "srun exits 0 (LD_LIBRARY_PATH)" srun_ok
	want "the venv NCCL in LD_LIBRARY_PATH is warmed (ld_library_path)" \
		err_has_f "NCCL $venv_nccl_version from $venv_nccl/libnccl.so.2 (ld_library_path)"
	run_srun 60 "$(gres)" --export="ALL,NCCL_CUMEM_ENABLE=0" \
		--nccl-warmup="comm,verbose,nccl=$venv_nccl" echo TASK-RAN
	want "srun exits 0 (NCCL_CUMEM_ENABLE=0)" srun_ok
	say "  NCCL_CUMEM_ENABLE=0: $(grep -o 'NCCL memory [^,]*' "$srun_err")"
}

t_algo_tree() {
	local mark nccl_word=
	find_venv_nccl && nccl_word=",nccl=$venv_nccl"
	mark=$(log_mark)
	run_srun 60 "$(gres)" --export="ALL,NCCL_ALGO=Tree" \
		--nccl-warmup="comm$nccl_word" echo TASK-RAN
	want "srun fails" srun_failed
	want "the task did not run" lacks TASK-RAN "$srun_out"
	if [ "$gpu_count" -eq 1 ]; then
		# A single rank never runs Tree: refused from NCCL's version.
		want "the refusal names broadcast and NCCL's version" \
			err_has "leaves broadcast no algorithm on NCCL 2\\."
	else
		want "the failure names broadcast" err_has "NCCL broadcast failed"
	fi
	want "the failure names NCCL_ALGO=Tree" err_has "NCCL_ALGO=Tree"
	# The fix is the setting, never a profile the user may have asked for.
	want "the failure says to unset NCCL_ALGO" err_has "unset NCCL_ALGO"
	want "the log records failed_op broadcast" \
		grep -q '"failed_op":"broadcast"' <(log_since "$mark")
	say "  $(grep -oE '(NCCL broadcast failed|NCCL_ALGO=Tree leaves)[^;]*' "$srun_err" | head -n 1)"
}

# The helper's declarations of NVML (src/warmup/nvml_api.h) against
# NVIDIA's own nvml.h, where the node has one (CUDA toolkit).
t_nvml_abi() {
	local h
	h=$(find "$cuda/include" "$cuda"/targets/*/include /usr/include \
		-maxdepth 1 -name nvml.h 2>/dev/null | head -n 1)
	if [ -z "$h" ]; then
		t_na="not applicable: no nvml.h on this node"
		return 0
	fi
	want "tests/gpu/nvml_abi.c builds against $h (-Werror)" \
		gcc -std=gnu11 -Wall -Wextra -Werror -I"$(dirname "$h")" \
		-I"$src/src/warmup" -I"$src/src/core" -o "$work/nvml_abi" \
		"$src/tests/gpu/nvml_abi.c" -Wl,--unresolved-symbols=ignore-all
	want "nvml_abi runs" "$work/nvml_abi"
	say "  $("$work/nvml_abi" 2>&1)"
}

# Every NVML check reads a real value on this node's GPUs.
t_health_real() {
	local j="$work/health.json"
	"$(sn_helper_path)" --mode check --json --quiet --health-detail >"$j" 2>"$work/health.err"
	want "nccl-warmup --mode check passes" test $? -eq 0
	want "NVML answered" grep -q '"health":{"checked":true' "$j"
	for k in mem_used_mib persistence_mode compute_mode pcie_gen pcie_gen_max \
		 pcie_width pcie_width_max nvlinks clock_event_reasons \
		 ecc_volatile_uncorrected remap_pending; do
		want "GPU 0 $k read" sh -c "! grep -q '\"$k\":null' '$j'"
	done
	say "  $(python3 -c 'import json,sys; h=json.load(open(sys.argv[1]))["health"]; print("health %.1f ms, status %s; GPU 0: %s" % (h["ms"], h["status"], {k: v for k, v in h["gpus"][0].items() if k not in ("index", "read", "processes")}))' "$j")"
}

# A GPU held by another process (made here): the warmup names the holder
# (pid, user, MiB) instead of failing in cuDevicePrimaryCtxRetain.
t_health_busy() {
	local holder ready="$work/holder.ready"
	if [ "$dryrun" = 1 ]; then
		t_na="not applicable: a dry run has no GPU to hold (health.bats covers it)"
		return 0
	fi
	rm -f "$ready"
	python3 -c '
import sys, time, torch
free, total = torch.cuda.mem_get_info(0)
x = torch.empty(free - (300 << 20), dtype=torch.uint8, device="cuda:0")
open(sys.argv[1], "w").close()
time.sleep(120)' "$ready" &
	holder=$!
	sn__wait_for 600 test -e "$ready" || t_problems+=("the holder did not start")
	run_srun 60 "$(gres)" --nccl-warmup=comm echo TASK-RAN
	want "srun fails" srun_failed
	want "the task did not run" lacks TASK-RAN "$srun_out"
	want "the failure names the holder (pid $holder, root)" \
		err_has "GPU 0 busy: held by another process: pid $holder \\(root\\) [0-9]+ MiB"
	say "  $(grep -o 'GPU 0 busy: [^;.]*' "$srun_err" | head -n 1)"
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
	want "GPUs idle again" gpus_idle_now
}

t_unprivileged() {
	local mark uid gid extra
	uid=$(id -u "$SN_USER")
	gid=$(id -g "$SN_USER")
	extra=$(getent group "$SN_USER_GROUP2" | cut -d: -f3)
	mark=$(log_mark)
	run_srun_as_user 60 "$(gres)" --nccl-warmup=comm id
	want "srun as $SN_USER exits 0" srun_ok
	want "the task ran as $SN_USER" out_has "uid=$uid\\("
	want "the helper ran as uid $uid, gid $gid, with group $extra" \
		warmup_records "$mark" --count 1 --status passed --uid "$uid" \
		--gid "$gid" --group "$extra"
}

run_checks() {
	phase "checks ($gpu_count GPUs)"
	run_test no-warmup-without-option t_no_warmup 40
	run_test driver-only-system-nccl t_driver_only 70
	run_test venv-nccl-named t_venv_nccl 200
	run_test nccl-algo-tree-refused t_algo_tree 70
	run_test ddp-profiles-merge t_ddp_profiles 190
	run_test one-warmup-per-node t_one_warmup_per_node 70
	run_test mode-check t_mode_check 70
	run_test mode-comm t_mode_comm 70
	run_test mode-bandwidth t_mode_bandwidth 70
	run_test busbw-floor-met t_busbw_floor_met 70
	run_test busbw-floor-missed t_busbw_floor_missed 70
	run_test fault-duplicate-busid t_fault_dup_busid 70
	run_test nvml-abi t_nvml_abi 30
	run_test health-real-values t_health_real 30
	run_test health-busy-names-holder t_health_busy 90
	run_test fault-init-hang t_fault_init_hang 70
	run_test fault-async-hang t_fault_async_hang 70
	run_test fault-wedged t_fault_wedged 70
	run_test unprivileged-user t_unprivileged 70
}

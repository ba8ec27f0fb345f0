# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# What the GPU tests' checks (lib/cases.sh, fabric-*.sh) are made of,
# sourced by tests/gpu/run-gpu-tests.sh: one srun under a deadline, slurmd's
# log since a mark, and the predicates that want calls.

srun_rc=0
srun_s=0
srun_out=
srun_err=
srun_as=()

# run_srun LIMIT ARGS...: srun under a deadline; sets srun_rc, srun_s,
# srun_out, srun_err (file names) and logs all of it.
run_srun() {
	srun_as=()
	srun_timed "$@"
}

# run_srun_as_user LIMIT ARGS...: the same as the job user ($SN_USER,
# from the cluster's tmp directory), with this script's PATH, SLURM_CONF,
# NVLink multicast off and the dry run's fake libraries.
run_srun_as_user() {
	srun_as=(runuser -u "$SN_USER" -- env PATH="$PATH"
		SLURM_CONF="$SLURM_CONF" NCCL_NVLS_ENABLE=0
		TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
		${LD_LIBRARY_PATH:+LD_LIBRARY_PATH="$LD_LIBRARY_PATH"})
	(cd "$SN_CLUSTER_DIR/tmp" && srun_timed "$@")
	srun_rc=$(cat "$work/srun.rc")
	srun_s=$(cat "$work/srun.s")
}

srun_timed() {
	local limit=$1 t0
	shift
	srun_out=$work/srun.out
	srun_err=$work/srun.err
	echo "+ ${srun_as:+(as ${srun_as[2]}) }srun $*"
	t0=$EPOCHREALTIME
	timeout -k 5 "$limit" "${srun_as[@]}" srun --immediate=30 -N1 "$@" \
		>"$srun_out" 2>"$srun_err"
	srun_rc=$?
	srun_s=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
	echo "$srun_rc" >"$work/srun.rc"
	echo "$srun_s" >"$work/srun.s"
	echo "  rc=$srun_rc in $srun_s s"
	sed 's/^/  out| /' "$srun_out" | head -n 60
	sed 's/^/  err| /' "$srun_err" | head -n 60
}

log_mark() {
	wc -l <"$(sn_slurmd_log n1)"
}

log_since() {
	tail -n +"$(($1 + 1))" "$(sn_slurmd_log n1)"
}

# warmup_records MARK ARGS...: warmup_log.py over the log since MARK.
warmup_records() {
	local mark=$1
	shift
	log_since "$mark" | python3 "$src/tests/gpu/warmup_log.py" --print "$@"
}

gpus_idle_now() {
	local tries=20
	while ((tries-- > 0)); do
		SN_GPU_BASELINE=$gpu_baseline python3 "$src/tests/gpu/gpu_state.py" \
			check-idle >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	SN_GPU_BASELINE=$gpu_baseline python3 "$src/tests/gpu/gpu_state.py" check-idle
	return 1
}

# Helpers of this cluster only (other test clusters on a rehearsal
# machine run their own nccl-warmup).
no_helper_left() {
	local p left="" helper
	helper=$(sn_helper_path)
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = nccl-warmup ] || continue
		[ "$(readlink "$p/exe" 2>/dev/null)" = "$helper" ] ||
			[ "$(awk '{ print $3 }' "$p/stat" 2>/dev/null)" = Z ] ||
			continue
		left="$left $(basename "$p")"
	done
	[ -z "$left" ] || { echo "nccl-warmup still running:$left"; return 1; }
}

srun_ok() { [ "$srun_rc" -eq 0 ]; }
lacks() { ! grep -q -- "$1" "$2"; }
srun_failed() { [ "$srun_rc" -ne 0 ] && [ "$srun_rc" -ne 124 ] && [ "$srun_rc" -ne 137 ]; }
err_has() { grep -Eq -- "$1" "$srun_err"; }
err_has_i() { grep -Eqi -- "$1" "$srun_err"; }
err_has_f() { grep -qF -- "$1" "$srun_err"; }
out_has() { grep -Eq -- "$1" "$srun_out"; }
within() { awk -v s="$srun_s" -v l="$1" 'BEGIN { exit !(s <= l) }'; }

plugstack() {
	# shellcheck disable=SC2086
	sn_plugstack_set "$@"
	echo "  plugstack: $(cat "$SN_CLUSTER_DIR/etc/plugstack.conf")"
}

gres() { echo "--gres=gpu:$gpu_count"; }

# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# The GPU tests' phase 5, sourced by tests/gpu/run-gpu-tests.sh:
# bench/warmup-bench.sh, then bench/warmup-reuse.sh, on the one-node cluster.

run_bench() {
	[ "${SN_GPU_BENCH:-1}" = 1 ] || return 0
	phase "bench"
	if [ "$(seconds_left)" -lt 170 ]; then
		record FAIL bench "not run: only $(seconds_left) s left"
		return
	fi
	if [ -n "$before_helper" ]; then
		install -m 0755 "$before_helper" "$SN_CLUSTER_DIR/libexec/nccl-warmup-before"
		export SN_HELPER_BEFORE=$SN_CLUSTER_DIR/libexec/nccl-warmup-before
		export SN_BENCH_PLUGSTACK=$SN_CLUSTER_DIR/etc/plugstack.conf
	fi
	if SN_HELPER=$(sn_helper_path) SN_BENCH_GPUS=$gpu_count \
	   timeout -k 5 "$(($(seconds_left) - 15))" \
	   bash "$src/bench/warmup-bench.sh" >"$out/bench.txt" 2>&1; then
		cat "$out/bench.txt" >&3
		record PASS bench
	else
		cat "$out/bench.txt" >&3
		record FAIL bench "bench/warmup-bench.sh failed (bench.txt)"
	fi
	# What the NVML health checks add (target <= 50 ms).
	if SN_HELPER=$(sn_helper_path) timeout -k 5 60 \
	   bash "$src/bench/health-cost.sh" 10 >"$out/bench-health.txt" 2>&1; then
		cat "$out/bench-health.txt" >&3
		record PASS bench-health
	else
		cat "$out/bench-health.txt" >&3
		record FAIL bench-health "bench/health-cost.sh failed (bench-health.txt)"
	fi
	# Warmup reuse: batch jobs with 1, 4, 10 sruns, reuse off and on.
	if [ "$(seconds_left)" -lt 150 ]; then
		record FAIL bench-reuse "not run: only $(seconds_left) s left"
	elif SN_BENCH_RUNS=${SN_REUSE_BENCH_RUNS:-1} \
	   timeout -k 5 "$(($(seconds_left) - 15))" \
	   bash "$src/bench/warmup-reuse.sh" >"$out/bench-reuse.txt" 2>&1; then
		cat "$out/bench-reuse.txt" >&3
		record PASS bench-reuse
	else
		cat "$out/bench-reuse.txt" >&3
		record FAIL bench-reuse "bench/warmup-reuse.sh failed (bench-reuse.txt)"
	fi
}

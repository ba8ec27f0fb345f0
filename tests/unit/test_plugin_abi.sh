#!/bin/sh
# SPDX-License-Identifier: MIT
# spank_nccl.so's ABI: it exports only what Slurm looks up (slurm_spank_*
# hooks, plugin_name/type/version) and needs only libc: no CUDA, no NCCL,
# no libslurm (srun/sbatch/slurmstepd provide the SPANK symbols), so it
# loads on GPU-less login nodes.
set -u
so=${SN_PLUGIN_SO:-src/plugin/.libs/spank_nccl.so}
fail=0
if [ ! -f "$so" ]; then
	echo "test_plugin_abi: $so not built" >&2
	exit 1
fi
exports=$(nm -D --defined-only "$so" | awk '{print $3}' | sort)
echo "exported: $(echo "$exports" | tr '\n' ' ')"
for want in slurm_spank_init slurm_spank_init_post_opt slurm_spank_user_init \
	    slurm_spank_task_init slurm_spank_exit plugin_name plugin_type \
	    plugin_version; do
	echo "$exports" | grep -qx "$want" || {
		echo "FAIL: $want is not exported" >&2
		fail=1
	}
done
extra=$(echo "$exports" | grep -vE '^(slurm_spank_[a-z_]+|plugin_(name|type|version))$' || true)
if [ -n "$extra" ]; then
	echo "FAIL: unexpected exports: $extra" >&2
	fail=1
fi
# A job_prolog/job_epilog hook would cost every job ~22 ms (measured).
if echo "$exports" | grep -qE '^slurm_spank_job_(prolog|epilog)$'; then
	echo "FAIL: the main plugin must not define job_prolog/job_epilog" >&2
	fail=1
fi
# What only nccl-warmup uses (src/core/libcore_helper.la: bus IDs, UUIDs,
# host lists, fabric messages) and what only the admin tools use
# (libcore_report.la: reading records back) must not be carried by the
# plugin.  (The JSON writer is shared: slurmstepd writes fleet records.)
helper_only=$(nm "$so" | awk '{print $NF}' |
	grep -E '^(sn_busid_|sn_uuid_|sn_hostlist_|sn_fabric_|sn_port_range_|sn_json_parse|sn_record_read)' || true)
if [ -n "$helper_only" ]; then
	echo "FAIL: helper-only code linked into spank_nccl.so: $helper_only" >&2
	fail=1
fi
needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "needed: $(echo "$needed" | tr '\n' ' ')"
allowed='libc\.so\.6|ld-linux.*'
# --enable-sanitizers builds (testing only) also pull in their runtimes.
[ -z "${SN_SAN_CFLAGS:-}" ] || allowed="$allowed|libasan\.so.*|libubsan\.so.*|libstdc\+\+\.so.*|libm\.so.*|libgcc_s\.so.*"
bad=$(echo "$needed" | grep -vE "^($allowed)\$" || true)
if [ -n "$bad" ]; then
	echo "FAIL: spank_nccl.so must need only libc, also needs: $bad" >&2
	fail=1
fi
exit $fail

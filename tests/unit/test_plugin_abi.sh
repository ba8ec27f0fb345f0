#!/bin/sh
# SPDX-License-Identifier: MIT
# spank_nccl.so's ABI: it exports only what Slurm looks up (slurm_spank_*
# hooks, plugin_name/type/version) and needs only libc: no CUDA, no NCCL,
# no libslurm (srun/sbatch/slurmstepd provide the SPANK symbols), no
# libcrypto (step_key.c uses slurmstepd's, if mapped), so it
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
for want in slurm_spank_init slurm_spank_init_post_opt slurm_spank_local_user_init \
	    slurm_spank_user_init \
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
# What only nccl-warmup uses (src/core/libsn_core_helper.la: bus IDs, UUIDs,
# host lists, fabric addresses and messages) and what only the admin tools
# use (libsn_core_report.la: reading records back) must not be carried by the
# plugin.  (The JSON writer is shared: slurmstepd writes fleet records.
# sn_port_range_parse is shared too, deliberately: the plugin checks
# plugstack.conf's fabric_ports= at load, helper_protocol.c.)
helper_only=$(nm "$so" | awk '{print $NF}' |
	grep -E '^(sn_busid_|sn_uuid_|sn_hostlist_|sn_fabric_|sn_json_parse|sn_record_read)' || true)
if [ -n "$helper_only" ]; then
	echo "FAIL: helper-only code linked into spank_nccl.so: $helper_only" >&2
	fail=1
fi
# The value of a 4-byte little-endian exported variable of the plugin.
so_u32() {
	local addr hex
	addr=$(nm -D --defined-only "$so" | awk -v s="$1" '$3 == s { print $1 }')
	[ -n "$addr" ] || return 1
	hex=$(objdump -s -j .rodata -j .data -j .data.rel.ro \
		--start-address="0x$addr" --stop-address=$((0x$addr + 4)) "$so" |
		awk 'NF >= 2 && $1 ~ /^[0-9a-f]+$/ && length($2) == 8 { print $2; exit }')
	[ -n "$hex" ] || return 1
	echo $((0x$(echo "$hex" | sed 's/\(..\)\(..\)\(..\)\(..\)/\4\3\2\1/')))
}
# Slurm 25.05+ reads slurm_spank_init_failure_mode (dlsym) and drains the
# node when a plugin's remote init fails, unless it says
# ESPANK_JOB_FAILURE; earlier releases have no such symbol.  The guard in
# spank_nccl.c follows the headers the plugin was built with, which
# plugin_version records.
version=$(so_u32 plugin_version) || {
	echo "FAIL: cannot read plugin_version" >&2
	exit 1
}
printf 'built for Slurm %d.%02d.%d\n' $((version >> 16)) \
	$(((version >> 8) & 255)) $((version & 255))
mode=$(so_u32 slurm_spank_init_failure_mode)
if [ "$version" -ge $(((25 << 16) + (5 << 8))) ]; then
	# ESPANK_JOB_FAILURE is an enum constant of slurm_errno.h (3012 in
	# 26.05): ask the compiler, with the headers the plugin was built with.
	tmp=$(mktemp -d)
	printf '#include <stdio.h>\n#include <slurm/spank.h>\nint main(void) { printf("%%d\\n", (int)ESPANK_JOB_FAILURE); return 0; }\n' >"$tmp/v.c"
	# shellcheck disable=SC2086
	${SN_CC:-cc} ${SN_SLURM_CPPFLAGS:-} -o "$tmp/v" "$tmp/v.c" &&
		want=$("$tmp/v")
	rm -rf "$tmp"
	if [ -z "${want:-}" ]; then
		echo "FAIL: cannot read ESPANK_JOB_FAILURE from slurm/spank.h" >&2
		fail=1
	elif [ "${mode:-}" != "$want" ]; then
		echo "FAIL: Slurm >= 25.05 but slurm_spank_init_failure_mode is '${mode:-absent}', not ESPANK_JOB_FAILURE ($want)" >&2
		fail=1
	fi
elif [ -n "$mode" ]; then
	echo "FAIL: slurm_spank_init_failure_mode exported for a Slurm before 25.05" >&2
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
# The step key's libcrypto (step_key.c) is slurmstepd's, found with
# dlopen(RTLD_NOLOAD) and dlsym: no DT_NEEDED above, no symbol bound to it.
ossl=$(nm -D --undefined-only "$so" | awk '{print $NF}' |
	grep -E '^(EVP_|OSSL_|OPENSSL_|CRYPTO_|HMAC)' || true)
if [ -n "$ossl" ]; then
	echo "FAIL: spank_nccl.so binds libcrypto's symbols: $ossl" >&2
	fail=1
fi
exit $fail

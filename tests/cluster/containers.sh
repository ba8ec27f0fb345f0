# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Container sites, sourced by cluster.sh: nodes without a host NCCL
# (SN_HIDE_HOST_NCCL=1), and real pyxis + enroot (SN_PYXIS=1).

# The dynamic loader's trusted directories: a libnccl there cannot be
# hidden by the cache alone.
SN__TRUSTED_LIB_DIRS="/lib /usr/lib /lib64 /usr/lib64 /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu"

# Writes $SN_CLUSTER_DIR/etc/ld.so.cache.nonccl: the system's library
# directories less those holding libnccl.so* (SN_HIDE_HOST_NCCL=1).
sn__nonccl_cache() {
	local d=$SN_CLUSTER_DIR/etc conf cache dir
	conf=$d/ld.so.conf.nonccl
	cache=$d/ld.so.cache.nonccl
	for dir in $SN__TRUSTED_LIB_DIRS; do
		if compgen -G "$dir/libnccl.so*" >/dev/null; then
			sn__die "SN_HIDE_HOST_NCCL=1: $dir holds libnccl, which the loader always searches"
			return 1
		fi
	done
	: >"$conf"
	# Every directory /etc/ld.so.conf names (one level of include).
	for dir in $(cat /etc/ld.so.conf /etc/ld.so.conf.d/*.conf 2>/dev/null |
		     grep -v -e '^[[:space:]]*#' -e '^include'); do
		[ -d "$dir" ] || continue
		compgen -G "$dir/libnccl.so*" >/dev/null && continue
		echo "$dir" >>"$conf"
	done
	ldconfig -f "$conf" -C "$cache" || return 1
	if ldconfig -p -C "$cache" | grep -q libnccl; then
		sn__die "SN_HIDE_HOST_NCCL=1: libnccl still in $cache"
		return 1
	fi
	chmod 0644 "$cache"
}

# The shell commands that start a node's slurmd in its mount namespace.
sn__hide_nccl_cmd() {
	[ "$SN_HIDE_HOST_NCCL" = 1 ] || return 0
	echo "mount --bind '$SN_CLUSTER_DIR/etc/ld.so.cache.nonccl' /etc/ld.so.cache && "
}


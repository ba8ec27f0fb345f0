# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# The network of a multi-node test cluster (sourced by cluster.sh): a
# private bridge in the root namespace, one network namespace per node
# with a veth on it (no default route anywhere: nothing leaves the
# machine), the nodes' hosts file, and the cluster directory as a shared
# mount so that mounts a test makes there reach the nodes.

sn__setup_netns() {
	local i ns
	if ! ip link show "$SN_BRIDGE" >/dev/null 2>&1; then
		ip link add "$SN_BRIDGE" type bridge || return 1
	fi
	ip addr replace "$SN_NET_PREFIX.1/24" dev "$SN_BRIDGE" || return 1
	ip link set "$SN_BRIDGE" up || return 1
	for ((i = 1; i <= SN_NODES; i++)); do
		ns=$(sn__netns_name "$i")
		ip netns add "$ns" 2>/dev/null ||
			[ -e "/run/netns/$ns" ] || return 1
		if ! ip link show "snv$SN_NET_ID-$i" >/dev/null 2>&1; then
			ip link add "snv$SN_NET_ID-$i" type veth \
				peer name eth0 netns "$ns" || return 1
		fi
		ip link set "snv$SN_NET_ID-$i" master "$SN_BRIDGE" up ||
			return 1
		ip -n "$ns" addr replace "$(sn__node_addr "$i")/24" \
			dev eth0 || return 1
		ip -n "$ns" link set lo up || return 1
		ip -n "$ns" link set eth0 up || return 1
	done
}

# The nodes' hosts file: the host's entries, then every node's address
# (a name's first match wins, so the nodes' lines go first).
sn__write_hosts() {
	local i
	{
		for ((i = 1; i <= SN_NODES; i++)); do
			echo "$(sn__node_addr "$i") n$i"
		done
		grep -v -E '(^|[[:space:]])n[0-9]+([[:space:]]|$)' /etc/hosts 2>/dev/null
	} >"$SN_CLUSTER_DIR/etc/hosts"
	chmod 0644 "$SN_CLUSTER_DIR/etc/hosts"
}

# The cluster directory as a shared mount point (on hosts where / is
# private, as in many containers, nothing else would propagate).
sn__share_dir() {
	local d=$SN_CLUSTER_DIR
	mountpoint -q "$d" || mount --bind "$d" "$d" || return 1
	mount --make-shared "$d"
}

sn__teardown_netns() {
	local i ns
	for ((i = 1; i <= 64; i++)); do
		ns=$(sn__netns_name "$i")
		[ -e "/run/netns/$ns" ] || continue
		# What outlived the node's daemons (NHC 1.4.3's watchdogs, up
		# to its -t) would keep the namespace and its veth: the next
		# cluster's setup would find the veth and no eth0 behind it.
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	if ip link show "$SN_BRIDGE" >/dev/null 2>&1; then
		ip link del "$SN_BRIDGE" 2>/dev/null
	fi
	# Deleting a namespace deletes its veth end and so the pair.
	return 0
}

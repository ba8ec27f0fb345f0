#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A throwaway Slurm cluster for the integration tests: munged on its
# own socket, slurmctld, and either one slurmd on loopback or N slurmd
# "nodes", each in its own network namespace behind a private bridge (no
# default route anywhere: nothing leaves the machine), with the cluster's
# etc/hosts over /etc/hosts so the nodes resolve each other's names
# (n1 -> 10.X.0.11 ...).  Every node has four
# fake GPUs (gres File= symlinks to /dev/null), so `--gres=gpu:N` yields a
# real CUDA_VISIBLE_DEVICES.
#
# Use as a library (source it, call sn_cluster_start / sn_cluster_stop) or
# as a command:  cluster.sh start|stop|status|env
#
# Environment:
#   SN_CLUSTER_DIR      cluster directory (default /tmp/spank-nccl-cluster)
#   SN_NODES            number of nodes; 1 = loopback (default), >1 = netns
#   SN_NETNS=1          use network namespaces even for one node
#   SN_BUILD_DIR        build tree holding the plugin, the helper and the
#                       fake CUDA/NCCL libraries (default: ../../_build)
#   SN_SRC_DIR          source tree (default: two levels above this file)
#   SN_PROFILES_SRC     profile file to install (default etc/nccl-profiles.conf)
#   SN_PLUGIN=0         start with an empty plugstack.conf (no plugin)
#   SN_PLUGSTACK_ARGS   extra plugstack.conf arguments for spank_nccl.so
#   SN_CPUS             CPUs each node advertises (default 32)
#   SN_USER             unprivileged job user created when root (sncuser)
#   SN_SLURM_CONF_EXTRA lines appended to slurm.conf (e.g. Prolog=...)
#   SN_AUTH            munge (default) or slurm: AuthType=auth/slurm with
#                      a slurm.key, no munged (Slurm 23.11+; not 22.05)
#   SN_START_WAIT       seconds the nodes have to come up idle (default 10;
#                       a HealthCheckProgram delays their registration)
#   SN_SLURM_RELEASE    Slurm release: 22.05 (the host's), 24.11 or 26.05
#                       (each from its Debian suite in a chroot that
#                       tests/cluster/release.sh creates and caches); the
#                       commands below then run inside that chroot
#   SN_SLURMD_PARAMETERS extra SlurmdParameters (e.g. contain_spank, 24.05+)
#   SN_HIDE_HOST_NCCL=1, SN_PYXIS=1  see containers.sh
#   SN_INSTALLED=1      use the installed package (spank_nccl.so in Slurm's
#                       plugin dir, LIBEXECDIR/nccl-warmup, the profile file
#                       in /etc/slurm) instead of copies from SN_BUILD_DIR;
#                       the fake libraries still come from SN_BUILD_DIR
#
# Facts relied on (docs: /work/shared/notes/slurm-test-cluster.md):
# plugstack.conf is re-read by srun and slurmstepd at every launch, so the
# plugstack helpers need no daemon restart; `ip netns exec` remounts /sys
# and breaks slurmd's cgroup plugin, so slurmd is entered with nsenter.

SN_CLUSTER_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=release.sh
source "$SN_CLUSTER_LIB_DIR/release.sh"
: "${SN_SRC_DIR:=$(cd "$SN_CLUSTER_LIB_DIR/../.." && pwd)}"
: "${SN_CLUSTER_DIR:=/tmp/spank-nccl-cluster}"
: "${SN_BUILD_DIR:=$SN_SRC_DIR/_build}"
: "${SN_NODES:=1}"
: "${SN_NETNS:=0}"
: "${SN_PLUGIN:=1}"
: "${SN_PLUGSTACK_ARGS:=}"
: "${SN_CPUS:=32}"
: "${SN_USER:=sncuser}"
: "${SN_USER_GROUP2:=sncextra}"
: "${SN_SLURM_CONF_EXTRA:=}"
: "${SN_START_WAIT:=10}"
: "${SN_SLURMD_PARAMETERS:=}"
: "${SN_AUTH:=munge}"
: "${SN_INSTALLED:=0}"
: "${SN_INSTALLED_PLUGIN:=/usr/lib/x86_64-linux-gnu/slurm-wlm/spank_nccl.so}"
: "${SN_INSTALLED_HELPER:=/usr/libexec/nccl-warmup}"
: "${SN_INSTALLED_PROFILES:=/etc/slurm/nccl-profiles.conf}"
: "${SN_PROFILES_SRC:=$SN_SRC_DIR/etc/nccl-profiles.conf}"

# Ports and network derive from the cluster directory, so two clusters in
# different directories (two people testing at once) do not collide.
sn__dir_hash() {
	printf '%s' "$SN_CLUSTER_DIR" | cksum | cut -d' ' -f1
}
SN_NET_ID=${SN_NET_ID:-$((200 + $(sn__dir_hash) % 50))}
SN_PORT=${SN_PORT:-$((20000 + ($(sn__dir_hash) % 4000) * 2))}
SN_BRIDGE="snbr$SN_NET_ID"
SN_NET_PREFIX="10.$SN_NET_ID.0"

export SLURM_CONF="$SN_CLUSTER_DIR/etc/slurm.conf"

sn__log() {
	echo "cluster.sh: $*" >&2
}

sn__die() {
	sn__log "error: $*"
	return 1
}

# True when the cluster runs its nodes in network namespaces.
sn_cluster_uses_netns() {
	[ "$SN_NODES" -gt 1 ] || [ "$SN_NETNS" = 1 ]
}

# Names of the nodes, one per line.
sn_node_names() {
	local i
	for ((i = 1; i <= SN_NODES; i++)); do
		echo "n$i"
	done
}

sn__node_addr() {
	local i=$1
	if sn_cluster_uses_netns; then
		echo "$SN_NET_PREFIX.$((10 + i))"
	else
		echo 127.0.0.1
	fi
}

sn__netns_name() {
	echo "sn$SN_NET_ID-n$1"
}

# Locations of what the harness copies into the cluster directory.
# With SN_INSTALLED=1 the plugin, helper and profile file are used where
# the package installed them.
sn_plugin_path() {
	if [ "$SN_INSTALLED" = 1 ]; then
		echo "$SN_INSTALLED_PLUGIN"
	else
		echo "$SN_CLUSTER_DIR/lib/spank_nccl.so"
	fi
}
sn_helper_path() {
	if [ "$SN_INSTALLED" = 1 ]; then
		echo "$SN_INSTALLED_HELPER"
	else
		echo "$SN_CLUSTER_DIR/libexec/nccl-warmup"
	fi
}
sn_profiles_path() {
	if [ "$SN_INSTALLED" = 1 ]; then
		echo "$SN_INSTALLED_PROFILES"
	else
		echo "$SN_CLUSTER_DIR/etc/nccl-profiles.conf"
	fi
}
# The fake driver and NCCL, each in its own directory (tests/fake): a
# LD_LIBRARY_PATH value; sn_fake_dir NAME gives one of them (cuda, nccl,
# nccl-alt, nccl-old).
sn_fake_dir() { echo "$SN_CLUSTER_DIR/fake/$1"; }
sn_fake_lib_dir() { echo "$(sn_fake_dir cuda):$(sn_fake_dir nccl)"; }
sn_slurmd_log() { echo "$SN_CLUSTER_DIR/log/slurmd-${1:-n1}.log"; }
sn_slurmctld_log() { echo "$SN_CLUSTER_DIR/log/slurmctld.log"; }

# The build products, found in SN_BUILD_DIR.
sn__built_plugin() {
	echo "$SN_BUILD_DIR/src/plugin/.libs/spank_nccl.so"
}
sn__built_helper() {
	local p
	for p in "$SN_BUILD_DIR/src/warmup/nccl-warmup" \
		 "$SN_BUILD_DIR/src/warmup/.libs/nccl-warmup"; do
		# Should libtool ever wrap the program, the wrapper is a
		# script and the real binary sits in .libs.
		if [ -f "$p" ] && head -c 4 "$p" | grep -q ELF; then
			echo "$p"
			return 0
		fi
	done
	return 1
}
# Directory holding the fake cuda/libcuda.so.1 and nccl*/libnccl.so.2
# that `make check` builds (tests/fake/Makefile.inc).
sn__built_fake_dir() {
	local d="$SN_BUILD_DIR/tests/fake"
	if [ -f "$d/cuda/libcuda.so.1" ] && [ -f "$d/nccl/libnccl.so.2" ]; then
		echo "$d"
		return 0
	fi
	return 1
}

sn__install_file() {
	local mode=$1 src=$2 dst=$3
	mkdir -p "$(dirname "$dst")"
	chmod 0755 "$(dirname "$dst")"
	cp -L "$src" "$dst.tmp.$$"
	chmod "$mode" "$dst.tmp.$$"
	mv -f "$dst.tmp.$$" "$dst"
}

# Copies the plugin, the helper, the fake libraries and the profile file
# into the cluster directory.  Missing optional pieces are reported, not
# fatal: the tests that need them fail with a clear message.
sn_cluster_install_artifacts() {
	local d=$SN_CLUSTER_DIR p fake
	if [ "$SN_INSTALLED" = 1 ]; then
		for p in "$SN_INSTALLED_PLUGIN" "$SN_INSTALLED_HELPER" \
			 "$SN_INSTALLED_PROFILES"; do
			[ -f "$p" ] || {
				sn__die "SN_INSTALLED=1 but $p is not installed"
				return 1
			}
		done
	elif [ "$SN_PLUGIN" = 1 ]; then
		p=$(sn__built_plugin)
		[ -f "$p" ] || {
			sn__die "plugin not built: $p (set SN_BUILD_DIR, run make)"
			return 1
		}
		sn__install_file 0755 "$p" "$(sn_plugin_path)"
	fi
	if [ "$SN_INSTALLED" = 1 ]; then
		:
	elif p=$(sn__built_helper); then
		sn__install_file 0755 "$p" "$(sn_helper_path)"
	else
		sn__log "note: nccl-warmup not built in $SN_BUILD_DIR/src/warmup"
	fi
	if fake=$(sn__built_fake_dir); then
		mkdir -p "$d/fake"
		chmod 0755 "$d/fake"
		for p in "$fake"/*/libcuda.so.1 "$fake"/*/libnvidia-ml.so.1 \
			 "$fake"/*/libnccl.so.2 "$fake"/junk/libjunk.so; do
			[ -e "$p" ] || continue
			sn__install_file 0755 "$p" \
				"$d/fake/$(basename "$(dirname "$p")")/$(basename "$p")"
		done
	else
		sn__log "note: fake CUDA/NCCL libraries not built (make check)"
	fi
	if [ "$SN_INSTALLED" = 1 ]; then
		:
	elif [ -f "$SN_PROFILES_SRC" ]; then
		sn__install_file 0644 "$SN_PROFILES_SRC" "$(sn_profiles_path)"
	else
		sn__log "note: profile file $SN_PROFILES_SRC missing"
	fi
}

# Writes plugstack.conf loading spank_nccl.so with ARGS (each word one
# argument).  profiles=, warmup_helper=, warmup_reuse_dir= and
# fabric_munge_socket= point into the cluster unless ARGS names them.  Takes effect at the next srun/sbatch/salloc.
sn_plugstack_set() {
	local args="$*" conf="$SN_CLUSTER_DIR/etc/plugstack.conf"
	case " $args " in
	*" profiles="*) ;;
	*) args="profiles=$(sn_profiles_path) $args" ;;
	esac
	case " $args " in
	*" warmup_helper="*) ;;
	*) args="warmup_helper=$(sn_helper_path) $args" ;;
	esac
	# Warmup records per cluster, not in the host's /run/spank-nccl.
	case " $args " in
	*" warmup_reuse_dir="*) ;;
	*) mkdir -p "$SN_CLUSTER_DIR/run"
	   args="warmup_reuse_dir=$SN_CLUSTER_DIR/run/spank-nccl $args" ;;
	esac
	# The node's fake hardware, as the root confirmation of a failed
	# warmup sees it (sn_node_fake): the job's FAKE_* never reach it.
	case " $args " in
	*" confirm_env="*) ;;
	*) [ -f "$(sn_node_fake_file)" ] || sn_node_fake
	   args="confirm_env=$(sn_node_fake_file) $args" ;;
	esac
	# The cluster's own munged, as slurm.conf's AuthInfo=socket= names it:
	# the fabric warmup authenticates its nodes through it.
	case " $args " in
	*" fabric_munge_socket="*) ;;
	*) args="fabric_munge_socket=$SN_CLUSTER_DIR/munge/munge.socket $args" ;;
	esac
	{
		# pyxis before spank-nccl (SN_PYXIS=1), or after on purpose.
		[ "$SN_PYXIS_ORDER" = after ] || sn_pyxis_plugstack_line
		printf 'required %s %s\n' "$(sn_plugin_path)" "$args"
		[ "$SN_PYXIS_ORDER" != after ] || sn_pyxis_plugstack_line
	} >"$conf.tmp"
	chmod 0644 "$conf.tmp"
	mv -f "$conf.tmp" "$conf"
}

# Writes an empty plugstack.conf (no plugin at all).
sn_plugstack_empty() {
	local conf="$SN_CLUSTER_DIR/etc/plugstack.conf"
	printf '# no SPANK plugins\n' >"$conf.tmp"
	chmod 0644 "$conf.tmp"
	mv -f "$conf.tmp" "$conf"
}

# The node-level fake hardware: the confirm_env= file (root's, 0644) of
# the root confirmation that decides a node fault (src/plugin/
# step_confirm.c): the fake libraries and the FAKE_* assignments given,
# e.g. sn_node_fake FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0.  Without
# arguments: healthy GPUs.  A job's own FAKE_* (its environment) reach
# only its own helper, as a user's preload would.
sn_node_fake_file() { echo "$SN_CLUSTER_DIR/etc/confirm.env"; }
sn_node_fake() {
	local f
	f=$(sn_node_fake_file)
	mkdir -p "$(dirname "$f")"
	{
		echo "# the nodes' fake GPUs (sn_node_fake)"
		echo "LD_LIBRARY_PATH=$(sn_fake_lib_dir)"
		[ $# -eq 0 ] || printf '%s\n' "$@"
	} >"$f.tmp"
	chmod 0644 "$f.tmp"
	mv -f "$f.tmp" "$f"
}

# Back to what the cluster started with.
sn_plugstack_reset() {
	if [ "$SN_PLUGIN" = 1 ]; then
		# shellcheck disable=SC2086
		sn_plugstack_set $SN_PLUGSTACK_ARGS
	else
		sn_plugstack_empty
	fi
}

# slurm.conf, gres.conf, cgroup.conf and job_container.conf.
# shellcheck source=conf.sh
source "$SN_CLUSTER_LIB_DIR/conf.sh"

# The unprivileged job user (and a supplementary group), when root.
sn_cluster_ensure_user() {
	[ "$(id -u)" -eq 0 ] || return 0
	getent group "$SN_USER_GROUP2" >/dev/null ||
		groupadd -r "$SN_USER_GROUP2" || return 1
	if ! getent passwd "$SN_USER" >/dev/null; then
		useradd -m -s /bin/bash -G "$SN_USER_GROUP2" "$SN_USER" ||
			return 1
	fi
}

sn__pid_alive() {
	local pid=$1 comm=$2 state
	[ -n "$pid" ] && [ -r "/proc/$pid/comm" ] || return 1
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$comm" ] || return 1
	# A zombie is not alive.
	state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
	[ "$state" != Z ]
}

sn__wait_for() {
	# sn__wait_for TENTHS CMD...: retry CMD every 0.1 s.
	local tries=$1
	shift
	while ((tries-- > 0)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# auth/slurm's key (SN_AUTH=slurm) where Slurm looks: beside slurm.conf.
sn__write_slurm_key() {
	local k=$SN_CLUSTER_DIR/etc/slurm.key
	dd if=/dev/urandom of="$k" bs=1024 count=1 status=none
	chmod 0600 "$k"
}

sn__start_munge() {
	local m=$SN_CLUSTER_DIR/munge
	if [ "$SN_AUTH" = slurm ]; then
		sn__write_slurm_key
		return
	fi
	mkdir -p "$m"
	chmod 0755 "$m"
	if [ ! -f "$m/munge.key" ]; then
		mungekey -c -k "$m/munge.key" >/dev/null 2>&1 ||
			dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 \
				status=none
	fi
	chmod 0600 "$m/munge.key"
	munged -S "$m/munge.socket" --key-file="$m/munge.key" \
		--log-file="$m/munged.log" --pid-file="$m/munged.pid" \
		--seed-file="$m/munged.seed" --force 2>>"$m/munged.log" || {
		tail -n 20 "$m/munged.log" >&2
		sn__die "munged failed to start"
		return 1
	}
	sn__wait_for 50 sh -c "munge -n -S '$m/munge.socket' |
		unmunge -S '$m/munge.socket'" || {
		tail -n 20 "$m/munged.log" >&2
		sn__die "munged not answering on $m/munge.socket"
		return 1
	}
}

# The bridge, the nodes' network namespaces, their hosts file.
# shellcheck source=netns.sh
source "$SN_CLUSTER_LIB_DIR/netns.sh"


# SN_HIDE_HOST_NCCL, pyxis and enroot.
# shellcheck source=containers.sh
source "$SN_CLUSTER_LIB_DIR/containers.sh"

sn__start_slurmd() {
	local i=$1 d=$SN_CLUSTER_DIR node="n$1" ns hide
	hide=$(sn__hide_nccl_cmd)
	[ "$SN_HIDE_HOST_NCCL" != 1 ] || sn__nonccl_cache || return 1
	if sn_cluster_uses_netns; then
		ns=$(sn__netns_name "$i")
		# The node gets its own network and hostname; everything else
		# (filesystem, /sys, cgroups) is the host's.
		# and its own mount namespace in which the cluster's hosts
		# file covers /etc/hosts, so node names resolve to the nodes'
		# netns addresses in slurmd, slurmstepd and the job (the fabric
		# warmup resolves the step's first node).  Inside a release
		# chroot /etc/hosts is the chroot's, covered the same way.
		# The cluster directory is a shared mount (sn__share_dir) and
		# the namespace its slave: what a test mounts under it later
		# (fleet.bats' read-only sink) reaches the nodes.
		# lowns.sh: that namespace older than the job containers
		# slurmd creates in it (contain_spank).
		nsenter --net="/run/netns/$ns" \
			bash "$SN_CLUSTER_LIB_DIR/lowns.sh" --uts --mount \
			--propagation slave -- \
			sh -c "${hide}mount --bind '$d/etc/hosts' /etc/hosts && hostname $node && exec slurmd -f '$SLURM_CONF' -N $node" \
			>>"$d/log/slurmd-$node.out" 2>&1
	else
		# Own hostname even on loopback: on real clusters the host
		# name is the node name, and slurmstepd (and so the plugin's
		# gethostname()) inherits it.
		# SN_HIDE_HOST_NCCL=1: also a mount namespace (the loader's
		# cache without NCCL), a slave of the host's.
		set --
		[ -z "$hide" ] || set -- --mount --propagation slave
		unshare --uts "$@" \
			sh -c "${hide}hostname $node && exec slurmd -f '$SLURM_CONF' -N $node" \
			>>"$d/log/slurmd-$node.out" 2>&1
	fi
}

sn__dump_logs() {
	local d=$SN_CLUSTER_DIR f
	for f in "$d"/log/slurmctld.log "$d"/log/slurmd-*.log "$d"/log/*.out; do
		[ -s "$f" ] || continue
		echo "---- tail of $f" >&2
		tail -n 25 "$f" >&2
	done
}

# Waits until every node is idle; fails fast on drain/invalid/down.
sn__wait_nodes_idle() {
	local tries=$((SN_START_WAIT * 10)) states bad
	while ((tries-- > 0)); do
		states=$(sinfo -h -N -o '%N %T' 2>/dev/null)
		bad=$(echo "$states" | grep -E 'drain|inval|fail' || true)
		if [ -n "$bad" ]; then
			sn__dump_logs
			sn__die "node not usable: $bad"
			return 1
		fi
		if [ -n "$states" ] &&
		   [ "$(echo "$states" | grep -c ' idle$')" -eq "$SN_NODES" ]; then
			return 0
		fi
		sleep 0.1
	done
	echo "$states" >&2
	sn__dump_logs
	sn__die "nodes not idle after $SN_START_WAIT s"
	return 1
}

sn__cluster_start() {
	local d=$SN_CLUSTER_DIR i
	if [ "$(id -u)" -ne 0 ]; then
		sn__die "must run as root (daemons, namespaces, job user)"
		return 1
	fi
	sn__check_release || return 1
	if [ "$SN_AUTH" = slurm ] && ! sn_release_has_auth_slurm; then
		sn__die "SN_AUTH=slurm: Slurm $(sn_release_local) has no auth/slurm (23.11+)"
		return 1
	fi
	for i in munged slurmctld slurmd srun nsenter unshare ip; do
		command -v "$i" >/dev/null || {
			sn__die "$i not found (bash tests/install-deps.sh)"
			return 1
		}
	done
	sn__cluster_stop >/dev/null 2>&1
	rm -rf "$d"
	mkdir -p "$d"/{etc,state,spool,run,log,lib,libexec,dev,tmp}
	chmod 0755 "$d" "$d"/{etc,spool,run,log,lib,libexec,dev}
	chmod 1777 "$d/tmp"
	sn_cluster_ensure_user || { sn__die "cannot create $SN_USER"; return 1; }
	sn_cluster_install_artifacts || return 1
	sn_pyxis_setup || return 1
	sn__write_slurm_conf
	sn_plugstack_reset
	sn__start_munge || return 1
	if sn_cluster_uses_netns; then
		sn__setup_netns || {
			sn__die "network namespace setup failed"
			return 1
		}
		sn__write_hosts
		sn__share_dir || {
			sn__die "cannot make $d a shared mount"
			return 1
		}
	fi
	slurmctld -f "$SLURM_CONF" >>"$d/log/slurmctld.out" 2>&1 || {
		sn__dump_logs
		sn__die "slurmctld failed to start"
		return 1
	}
	sn__wait_for 100 sh -c 'scontrol ping | grep -q "is UP"' || {
		sn__dump_logs
		sn__die "slurmctld not answering"
		return 1
	}
	for ((i = 1; i <= SN_NODES; i++)); do
		sn__start_slurmd "$i" || {
			sn__dump_logs
			sn__die "slurmd n$i failed to start"
			return 1
		}
	done
	sn__wait_nodes_idle || return 1
	sn__log "up: $SN_NODES node(s) in $d (SLURM_CONF=$SLURM_CONF)"
}

sn__kill_pidfile() {
	local pidfile=$1 comm=$2 pid tries
	[ -f "$pidfile" ] || return 0
	pid=$(tr -dc '0-9' <"$pidfile")
	if sn__pid_alive "$pid" "$comm"; then
		kill -TERM "$pid" 2>/dev/null
		tries=50
		while ((tries-- > 0)) && sn__pid_alive "$pid" "$comm"; do
			sleep 0.1
		done
		if sn__pid_alive "$pid" "$comm"; then
			kill -KILL "$pid" 2>/dev/null
		fi
	fi
	rm -f "$pidfile"
}

# Every slurmctld and slurmd still running with CONF.  Since 23.11,
# `scontrol reconfigure` has each daemon start a new copy of itself in a
# new process, which writes its pid file later: one stopped by its pid file
# meanwhile left the copy running (26.05, prolog.bats's teardown).
sn__kill_conf_daemons() {
	local pattern="slurm(ctld|d) -f $1( |\$)" tries=50
	pkill -KILL -f "$pattern" 2>/dev/null
	while ((tries-- > 0)) && pgrep -f "$pattern" >/dev/null; do
		sleep 0.1
	done
}

# slurmstepd processes of this cluster (not of another cluster on the
# same machine, whose job ids are the same small numbers): they keep the
# node's log file under the cluster directory open.  Two processes
# whatever the number of steps: load.bats polls this.
sn_cluster_stepds() {
	# shellcheck disable=SC2016
	grep -lx slurmstepd /proc/[0-9]*/comm 2>/dev/null |
		sed 's|/comm$|/fd|' |
		xargs -r sh -c 'find "$@" -maxdepth 1 -lname "$0/*" 2>/dev/null' \
			"$SN_CLUSTER_DIR" | cut -d/ -f3 | sort -un
}

sn__cluster_stop() {
	local d=$SN_CLUSTER_DIR f pid jobs
	[ -d "$d" ] || { sn__teardown_netns; return 0; }
	if [ -f "$d/run/slurmctld.pid" ]; then
		jobs=$(timeout 5 squeue -h -o %i 2>/dev/null)
		if [ -n "$jobs" ]; then
			# shellcheck disable=SC2086
			timeout 5 scancel --full --quiet $jobs >/dev/null 2>&1
		fi
	fi
	for f in "$d"/run/slurmd-*.pid; do
		[ -e "$f" ] || continue
		sn__kill_pidfile "$f" slurmd
	done
	for pid in $(sn_cluster_stepds); do
		kill -KILL "$pid" 2>/dev/null
	done
	sn__kill_pidfile "$d/run/slurmctld.pid" slurmctld
	sn__kill_conf_daemons "$d/etc/slurm.conf"
	sn__kill_pidfile "$d/munge/munged.pid" munged
	! mountpoint -q "$d" || umount -l "$d"
	sn__teardown_netns
	sn__log "stopped ($d)"
}

# The release the caller asked for (SN_SLURM_RELEASE) must be the one
# whose daemons and clients are on PATH here: a chroot release's cluster
# is started from inside its root (cluster.sh and the test scripts
# re-enter it themselves).
# auth/slurm and cred/slurm (no munged) came with Slurm 23.11: not 22.05.
sn_release_has_auth_slurm() {
	local v
	v=$(sn_release_local) || return 1
	[ "${v%%.*}" -gt 23 ] || [ "$v" = 23.11 ]
}

sn__check_release() {
	sn_release_is_local && return 0
	sn__die "SN_SLURM_RELEASE=$(sn_release_wanted) but Slurm $(sn_release_local) is installed here: use 'tests/cluster/cluster.sh exec' or tests/run-all.sh, which enter that release's root"
}

# The public entry points run their bodies in a `||` list: callers under
# `set -e` (bats) must not abort half-way through a start or a stop; the
# bodies check every step themselves.
sn_cluster_start() {
	sn__cluster_start || return
}

sn_cluster_stop() {
	sn__cluster_stop || return
}

sn_cluster_status() {
	local d=$SN_CLUSTER_DIR f pid comm rc=0
	for f in "$d"/munge/munged.pid "$d"/run/slurmctld.pid "$d"/run/slurmd-*.pid; do
		[ -e "$f" ] || continue
		pid=$(tr -dc '0-9' <"$f")
		comm=$(basename "$f" .pid)
		comm=${comm%%-*}
		if sn__pid_alive "$pid" "$comm"; then
			echo "$comm ($f): running, pid $pid"
		else
			echo "$comm ($f): not running"
			rc=1
		fi
	done
	timeout 5 sinfo -N 2>/dev/null || rc=1
	return $rc
}

# Helpers for tests: sn_timeout, sn_as_user, sn_sbatch_wait ...
# shellcheck source=testing.sh
source "$SN_CLUSTER_LIB_DIR/testing.sh"


if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -uo pipefail
	# On a chroot release everything below runs inside its root.
	case "${1:-}" in
	start | stop | status | env | exec) sn_release_reexec "$0" "$@" ;;
	esac
	case "${1:-}" in
	start) sn_cluster_start ;;
	stop) sn_cluster_stop ;;
	status) sn_cluster_status ;;
	env) echo "export SLURM_CONF=$SLURM_CONF" ;;
	exec)
		shift
		[ $# -gt 0 ] || set -- bash -i
		exec "$@"
		;;
	*)
		echo "usage: $0 start|stop|status|env|exec [COMMAND...]" >&2
		echo "  SN_NODES=N for N nodes in network namespaces;" >&2
		echo "  SN_SLURM_RELEASE=22.05|24.11|26.05 picks the Slurm release;" >&2
		echo "  exec runs COMMAND (default: a shell) where that release's" >&2
		echo "  clients are, with SLURM_CONF set" >&2
		exit 2
		;;
	esac
fi

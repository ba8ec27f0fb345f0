# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Which Slurm release the tests run against.  The host (Debian 12) has
# Slurm 22.05; the newer releases GPU sites run come from Debian's own
# archive, each in a chroot this file creates and caches:
#
#   SN_SLURM_RELEASE   22.05 (default: the host's Slurm), 24.11 (Debian 13
#                      "trixie", Slurm 24.11.5) or 26.05 (Debian "sid",
#                      Slurm 26.05.5)
#   SN_CHROOT_CACHE    where the chroots live (default
#                      /var/cache/spank-nccl/chroots; one per suite, reused
#                      and updated in place when the package list below
#                      changes)
#   SN_DEBIAN_MIRROR   Debian mirror for debootstrap and apt (default: the
#                      first Debian URI in the host's apt sources)
#
# A script that should run on the chosen release calls
#   sn_release_reexec SCRIPT ARGS...
# near its top: on the host's release it returns; otherwise it creates the
# chroot if needed and runs SCRIPT ARGS inside it (same paths: the source
# tree, /tmp and /usr/local/cuda are bind-mounted), with the chroot's own
# compiler, headers, Slurm daemons and clients, and exits with its status.
#
# Facts relied on (docs: /work/shared/notes/slurm-test-cluster.md, "Newer
# Slurm releases"): debootstrap --variant=minbase plus the Slurm packages
# is enough; sid's Release file on the mirror can be stale, so apt must
# not check Valid-Until there; a chroot has no /etc/hosts of its own.

SN_RELEASE_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${SN_CHROOT_CACHE:=/var/cache/spank-nccl/chroots}"

# The releases the project is tested on, oldest first.
SN_RELEASES="22.05 24.11 26.05"

# Debian packages every release root gets (the host gets its own list in
# tests/install-deps.sh).  Changing this list rebuilds the roots.  jq:
# docs_examples.bats checks the JSON of the docs' nccl-warmup --json
# examples; nhc.bats builds LBNL NHC with autoconf/automake/make;
# python3-jsonschema: make check validates records against
# docs/record.schema.json (test_record_json_schema.sh); squashfs-tools,
# parallel, gawk, libmd-dev, libcap2-bin, curl: enroot, built and run by
# containers*.bats (tests/cluster/containers.sh).
SN_RELEASE_PACKAGES="slurmctld slurmd slurm-client libslurm-dev munge libmunge-dev libssl-dev
build-essential autoconf automake libtool pkgconf libcmocka-dev bats
iproute2 util-linux passwd procps ca-certificates xz-utils
dpkg-dev debhelper fakeroot man-db groff-base jq python3-jsonschema
squashfs-tools parallel gawk libmd-dev libcap2-bin curl"

# The Debian suite that ships RELEASE.
sn_release_suite() {
	case $1 in
	22.05) echo bookworm ;;
	24.11) echo trixie ;;
	26.05) echo sid ;;
	*) return 1 ;;
	esac
}

# The Slurm release (major.minor) installed here, e.g. 22.05; with
# "full", major.minor.micro (22.05.8).  From the headers the build uses.
sn_release_local() {
	local v
	v=$(sed -n 's/^#define SLURM_VERSION_NUMBER 0x\([0-9a-f]*\)$/\1/p' \
		/usr/include/slurm/slurm_version.h 2>/dev/null)
	[ -n "$v" ] || return 1
	printf '%d.%02d' $((0x$v >> 16)) $(((0x$v >> 8) & 255))
	[ "${1:-}" != full ] || printf '.%d' $((0x$v & 255))
	echo
}

# True when the Slurm release here is MAJOR.MINOR or later (e.g. 23.11).
sn_slurm_at_least() {
	local have want=$1
	have=$(sn_release_local) || return 1
	[ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -n1)" = "$want" ]
}

# The release asked for: SN_SLURM_RELEASE, else the one installed here.
sn_release_wanted() {
	if [ -n "${SN_SLURM_RELEASE:-}" ]; then
		echo "$SN_SLURM_RELEASE"
	else
		sn_release_local || echo 22.05
	fi
}

# True when the wanted release is the one installed here (the host, or
# already inside its chroot).
sn_release_is_local() {
	[ -z "${SN_SLURM_RELEASE:-}" ] ||
		[ "$SN_SLURM_RELEASE" = "$(sn_release_local 2>/dev/null)" ]
}

# The build tree for the wanted release under source tree SRC: _build for
# the host's, _build-RELEASE for the others (each has its own spank.h).
sn_release_build_dir() {
	local rel
	rel=$(sn_release_wanted)
	if [ "$rel" = "$(sn_release_host)" ]; then
		echo "$1/_build"
	else
		echo "$1/_build-$rel"
	fi
}

# The host's release: the one installed outside any release root.
sn_release_host() {
	if [ -f /.spank-nccl-root ]; then
		echo 22.05
	else
		sn_release_local
	fi
}

sn_release_root() {
	echo "$SN_CHROOT_CACHE/$(sn_release_suite "$1")"
}

# Third-party sources the tests build (LBNL NHC for nhc.bats):
# ../shared/third_party beside the checkout, or SN_THIRD_PARTY_DIR; its
# physical path, or nothing (status 1) when there is none.  A release
# root gets it bind-mounted at that path.
sn_third_party_dir() {
	local d=${SN_THIRD_PARTY_DIR:-$SN_RELEASE_LIB_DIR/../../../shared/third_party}
	[ -d "$d" ] && (cd "$d" && pwd -P)
}

# The Debian mirror the host's apt uses (deb822 or one-line sources).
sn_release_mirror() {
	local m
	if [ -n "${SN_DEBIAN_MIRROR:-}" ]; then
		echo "$SN_DEBIAN_MIRROR"
		return 0
	fi
	m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk '/^URIs:/ { u = $2 } /^Suites:/ && / bookworm( |$)/ { print u; exit }')
	[ -n "$m" ] || m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		2>/dev/null | awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }')
	[ -n "$m" ] || return 1
	echo "$m"
}

sn__release_log() {
	echo "release.sh: $*" >&2
}

# Creates (or checks) the chroot for RELEASE.  A stamp file records the
# package list the root was built with; a root without the current stamp
# gets the missing packages (or a new root, if it has no base system).
# Serialised by a lock next to the root.
sn_release_setup() {
	local rel=$1 suite root mirror stamp want
	suite=$(sn_release_suite "$rel") || {
		sn__release_log "error: unknown Slurm release '$rel' (SN_SLURM_RELEASE): use one of $SN_RELEASES"
		return 1
	}
	[ "$suite" != bookworm ] || return 0
	root=$(sn_release_root "$rel")
	stamp="$root/.spank-nccl-root"
	want="$suite $(echo $SN_RELEASE_PACKAGES | cksum | cut -d' ' -f1)"
	mkdir -p "$SN_CHROOT_CACHE" || return 1
	(
		flock 9
		if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
			exit 0
		fi
		sn__release_create "$rel" "$suite" "$root" "$want"
	) 9>"$SN_CHROOT_CACHE/$suite.lock"
}

sn__release_create() {
	local rel=$1 suite=$2 root=$3 want=$4 mirror tmp t0 apt_opts=
	t0=$(date +%s)
	command -v debootstrap >/dev/null || {
		sn__release_log "error: debootstrap not installed (bash tests/install-deps.sh)"
		return 1
	}
	mirror=$(sn_release_mirror) || {
		sn__release_log "error: no Debian mirror in /etc/apt/sources.list*: set SN_DEBIAN_MIRROR"
		return 1
	}
	sn__release_log "creating the Slurm $rel root ($suite) in $root"
	tmp="$root.new"
	# A root made from an older package list keeps its base system: apt
	# below adds what is new.
	if [ -f "$root/.spank-nccl-base" ] && [ ! -e "$tmp" ]; then
		mv "$root" "$tmp" || return 1
	fi
	rm -rf "$root"
	# A base system from an interrupted setup is reused (apt below is
	# idempotent); a half-made one is not.
	if [ ! -f "$tmp/.spank-nccl-base" ]; then
		rm -rf "$tmp"
		debootstrap --variant=minbase "$suite" "$tmp" "$mirror" \
			>"$SN_CHROOT_CACHE/$suite.debootstrap.log" 2>&1 || {
			tail -n 20 "$SN_CHROOT_CACHE/$suite.debootstrap.log" >&2
			sn__release_log "error: debootstrap $suite failed (log: $SN_CHROOT_CACHE/$suite.debootstrap.log)"
			return 1
		}
		touch "$tmp/.spank-nccl-base"
	fi
	# sid's Release file on a mirror snapshot can be past its
	# Valid-Until date; apt refuses it unless told not to check.
	if [ "$suite" = sid ]; then
		echo 'Acquire::Check-Valid-Until "false";' \
			>"$tmp/etc/apt/apt.conf.d/99spank-nccl"
	fi
	# Keep the packages' postinst scripts from starting daemons.
	printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
	chmod 0755 "$tmp/usr/sbin/policy-rc.d"
	cp /etc/hosts "$tmp/etc/hosts"
	cp -L /etc/resolv.conf "$tmp/etc/resolv.conf" 2>/dev/null
	# shellcheck disable=SC2086
	if ! sn__release_chroot "$tmp" sh -c "export DEBIAN_FRONTEND=noninteractive &&
		apt-get -q update && apt-get install -y -q --no-install-recommends $(echo $SN_RELEASE_PACKAGES)" \
		>"$SN_CHROOT_CACHE/$suite.apt.log" 2>&1; then
		tail -n 20 "$SN_CHROOT_CACHE/$suite.apt.log" >&2
		sn__release_log "error: installing Slurm $rel in the $suite root failed (log: $SN_CHROOT_CACHE/$suite.apt.log)"
		return 1
	fi
	sn__release_chroot "$tmp" apt-get clean >/dev/null 2>&1
	echo "$want" >"$tmp/.spank-nccl-root"
	mv "$tmp" "$root" || return 1
	sn__release_log "Slurm $rel root ready in $(($(date +%s) - t0)) s"
}

# Runs COMMAND with ROOT as its root, in a private mount namespace (made
# by lowns.sh, see there): the mounts it
# needs vanish with the last process using them (daemons a test cluster
# started keep theirs while they run).  /proc and /sys are the host's
# (slurmd reads /proc, /sys/fs/cgroup); /dev is a private tmpfs with the
# usual nodes (the fake GPUs are links to /dev/null);
# /tmp is shared, so a cluster directory looks the same from both sides;
# the source tree, /usr/local/cuda and the third-party sources
# (sn_third_party_dir) keep their paths.
sn__release_chroot() {
	local root=$1 binds="" p
	shift
	for p in "$(cd "$SN_RELEASE_LIB_DIR/../.." && pwd)" "${SN_SRC_DIR:-}" \
		 "${SN_BUILD_DIR:-}" /usr/local/cuda "$(sn_third_party_dir)"; do
		[ -n "$p" ] && [ -d "$p" ] || continue
		binds="$binds $p"
	done
	# lowns.sh: a mount namespace older than the job containers that
	# slurmd, started in it, creates (contain_spank).
	# shellcheck disable=SC2016
	bash "$SN_RELEASE_LIB_DIR/lowns.sh" --mount --propagation private -- sh -c '
		root=$1; binds=$2; shift 2
		# The root must be a mount point: ip netns add remounts /
		# (make-rslave), which fails on a plain directory.
		mount --bind "$root" "$root" &&
		mount --rbind /proc "$root/proc" &&
		mount --rbind /sys "$root/sys" &&
		mount --rbind /tmp "$root/tmp" || exit 125
		# A /dev of its own, never the host'"'"'s: nothing run in the root
		# (package scripts, a job container'"'"'s cleanup) can remove or
		# replace a host device node.
		mount -t tmpfs -o mode=0755,nosuid tmpfs "$root/dev" || exit 125
		for n in null:3 zero:5 full:7 random:8 urandom:9; do
			mknod -m 0666 "$root/dev/${n%:*}" c 1 "${n#*:}" || exit 125
		done
		mknod -m 0666 "$root/dev/tty" c 5 0
		mkdir -p "$root/dev/pts" "$root/dev/shm"
		mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" &&
		ln -s pts/ptmx "$root/dev/ptmx" &&
		mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm" || exit 125
		ln -s /proc/self/fd "$root/dev/fd"
		ln -s /proc/self/fd/0 "$root/dev/stdin"
		ln -s /proc/self/fd/1 "$root/dev/stdout"
		ln -s /proc/self/fd/2 "$root/dev/stderr"
		mkdir -p "$root/run/netns"
		mount -t tmpfs -o mode=0755 tmpfs "$root/run/netns" || exit 125
		for p in $binds; do
			mkdir -p "$root$p" && mount --rbind "$p" "$root$p" || exit 125
		done
		# Same working directory inside when it exists there.
		cwd=$(pwd)
		[ -d "$root$cwd" ] || cwd=/
		# pivot_root, not chroot: a process that joins a mount
		# namespace made from this one (setns, as slurmstepd does for
		# the job container with contain_spank) gets that namespace'"'"'s
		# root, which a chroot would not be.
		mkdir -p "$root/.oldroot" && cd "$root" &&
		pivot_root . .oldroot && cd / && umount -l /.oldroot || exit 125
		exec env -C "$cwd" "$@"' sh "$root" "$binds" "$@"
}

# Runs COMMAND on RELEASE: here when it is the host's, else in its root.
sn_release_exec() {
	local rel=$1
	shift
	if [ "$rel" = "$(sn_release_local 2>/dev/null)" ]; then
		"$@"
		return
	fi
	sn_release_setup "$rel" || return 1
	sn__release_chroot "$(sn_release_root "$rel")" \
		env SN_SLURM_RELEASE="$rel" "$@"
}

# Re-runs SCRIPT ARGS... inside the root of the wanted release unless it
# is the one installed here; exits with the script's status.
sn_release_reexec() {
	local rel
	rel=$(sn_release_wanted)
	sn_release_is_local && return 0
	[ "$(id -u)" -eq 0 ] || {
		sn__release_log "error: Slurm $rel runs in a chroot: run as root"
		exit 1
	}
	local script
	script="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
	shift
	sn_release_exec "$rel" bash "$script" "$@"
	exit
}

# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Container sites, sourced by cluster.sh: nodes without a host NCCL, and
# real pyxis + enroot (SN_PYXIS=1, below).
#   SN_HIDE_HOST_NCCL=1 the nodes (slurmd, its steps, Prolog) see no host
#                       NCCL, as at a site whose jobs bring theirs in a
#                       container image: each slurmd runs in its own mount
#                       namespace over an ld.so.cache without the
#                       directories holding libnccl.so*
: "${SN_HIDE_HOST_NCCL:=0}"

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


# ---------------------------------------------------------------------
# pyxis 0.24.0 and enroot 4.1.2, built from their sources in
# ../shared/third_party (sn_third_party_dir, release.sh; never copied into
# this repository; bound into the release roots) once per Slurm
# release and cached: enroot installed under /usr/local (pyxis runs it
# from the job's PATH), spank_pyxis.so in SN_PYXIS_CACHE/RELEASE/.
#   SN_PYXIS=1          plugstack.conf lists pyxis before spank-nccl
#   SN_PYXIS_ORDER=after  ... after it instead (the wrong order)
#   SN_PYXIS_CACHE      the build cache (default /var/cache/spank-nccl/pyxis)
: "${SN_PYXIS:=0}"
: "${SN_PYXIS_ORDER:=before}"
: "${SN_PYXIS_CACHE:=/var/cache/spank-nccl/pyxis}"
SN_PYXIS_VERSION=0.24.0
SN_ENROOT_VERSION=4.1.2

sn_pyxis_so() { echo "$SN_PYXIS_CACHE/$(sn_release_local)/spank_pyxis.so"; }

# Builds and installs enroot and pyxis unless the cache has them;
# serialised by a lock beside the cache (clusters started at once by
# parallel test runs would unpack into one tree and break each other).
sn_pyxis_build() {
	local dir
	dir=$SN_PYXIS_CACHE/$(sn_release_local)
	mkdir -p "$dir" || return 1
	(
		flock 9
		sn__pyxis_build "$dir"
	) 9>"$dir.lock"
}

sn__pyxis_build() {
	local dir=$1 src tp have_enroot=0
	tp=$(sn_third_party_dir) || {
		sn__die "../shared/third_party not found (set SN_THIRD_PARTY_DIR)"
		return 1
	}
	# An installed enroot of this version is used as it is (the GPU
	# node's, unpacked from the carry: tests/gpu/lib/enroot.sh).
	command -v enroot >/dev/null &&
		[ "$(enroot version)" = "$SN_ENROOT_VERSION" ] && have_enroot=1
	[ -f "$dir/spank_pyxis.so" ] && [ "$have_enroot" = 1 ] && return 0
	for src in "enroot-$SN_ENROOT_VERSION-with-submodules" \
		   "pyxis-$SN_PYXIS_VERSION"; do
		[ "$have_enroot" = 0 ] || [ "${src#enroot}" = "$src" ] || continue
		[ -f "$tp/$src.tar.xz" ] || {
			sn__die "$tp/$src.tar.xz missing (set SN_THIRD_PARTY_DIR)"
			return 1
		}
	done
	sn__log "building pyxis $SN_PYXIS_VERSION$([ "$have_enroot" = 1 ] || echo " and enroot $SN_ENROOT_VERSION") into $dir (once)"
	rm -rf "$dir/src"
	mkdir -p "$dir/src"
	: >"$dir/build.log"
	if [ "$have_enroot" = 0 ]; then
		tar xf "$tp/enroot-$SN_ENROOT_VERSION-with-submodules.tar.xz" -C "$dir/src" &&
		make -C "$dir/src/enroot" -j2 >>"$dir/build.log" 2>&1 &&
		make -C "$dir/src/enroot" install >>"$dir/build.log" 2>&1
	fi &&
	tar xf "$tp/pyxis-$SN_PYXIS_VERSION.tar.xz" -C "$dir/src" &&
	make -C "$dir/src/pyxis" >>"$dir/build.log" 2>&1 || {
		tail -n 20 "$dir/build.log" >&2
		sn__die "building enroot/pyxis failed (log: $dir/build.log)"
		return 1
	}
	cp "$dir/src/pyxis/spank_pyxis.so" "$dir/spank_pyxis.so.tmp" &&
	chmod 0755 "$dir" "$dir/spank_pyxis.so.tmp" &&
	mv -f "$dir/spank_pyxis.so.tmp" "$dir/spank_pyxis.so"
}

# enroot's per-user paths: its defaults (/run/enroot) are root's only;
# per node too, as the nodes of the 3-node cluster share /tmp.
sn__enroot_conf() {
	local conf=/usr/local/etc/enroot/enroot.conf.d/spank-nccl-tests.conf
	mkdir -p "$(dirname "$conf")"
	cat >"$conf" <<'C'
# spank-nccl test cluster (tests/cluster/containers.sh)
ENROOT_RUNTIME_PATH /tmp/enroot-sn/run/$(hostname)-$(id -u)
ENROOT_DATA_PATH /tmp/enroot-sn/data/$(hostname)-$(id -u)
ENROOT_CACHE_PATH /tmp/enroot-sn/cache/$(hostname)-$(id -u)
C
	mkdir -p /tmp/enroot-sn/run /tmp/enroot-sn/data /tmp/enroot-sn/cache
	chmod 1777 /tmp/enroot-sn/run /tmp/enroot-sn/data /tmp/enroot-sn/cache
}

# The plugstack.conf line loading pyxis (SN_PYXIS=1), "" otherwise.
sn_pyxis_plugstack_line() {
	[ "$SN_PYXIS" = 1 ] || return 0
	mkdir -p "$SN_CLUSTER_DIR/run/pyxis"
	chmod 0755 "$SN_CLUSTER_DIR/run/pyxis"
	echo "required $(sn_pyxis_so) runtime_path=$SN_CLUSTER_DIR/run/pyxis"
}

# Setup for SN_PYXIS=1 at cluster start.
sn_pyxis_setup() {
	[ "$SN_PYXIS" = 1 ] || return 0
	sn_pyxis_build && sn__enroot_conf
}

# ---------------------------------------------------------------------
# Offline test images: a squashfs of a small root made of this machine's
# own sh, coreutils and libc (so the fake libraries built here run in
# it), with the fake NCCL inside as KIND says:
#   ok      fake libnccl.so.2 in /usr/lib/x86_64-linux-gnu (ld.so.cache)
#   broken  a libnccl.so.2 that is not a library
#   none    no NCCL
#   tree    as ok, and NCCL_ALGO=Tree in the image's environment
#           (/etc/environment), which the fake NCCL's broadcast refuses
# sn_container_image KIND OUT.sqsh
sn_container_image() {
	local kind=$1 out=$2 root f lib
	root=$(mktemp -d "$SN_CLUSTER_DIR/tmp/imgroot.XXXXXX") || return 1
	mkdir -p "$root"/{bin,etc,tmp,proc,sys,dev,run,root,home,usr/lib/x86_64-linux-gnu,lib64}
	chmod 1777 "$root/tmp"
	for f in sh bash env touch cat ls id true grep; do
		cp -L "$(type -P "$f")" "$root/bin/" || return 1
		for lib in $(ldd "$(type -P "$f")" | grep -o '/[^ ]*'); do
			mkdir -p "$root$(dirname "$lib")"
			cp -nL "$lib" "$root$lib"
		done
	done
	echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
	echo 'root:x:0:' >"$root/etc/group"
	echo "$kind" >"$root/etc/sn-image"
	case $kind in
	tree) echo 'NCCL_ALGO=Tree' >"$root/etc/environment" ;;&
	ok | tree) cp -L "$(sn_fake_dir nccl)/libnccl.so.2" \
		"$root/usr/lib/x86_64-linux-gnu/libnccl.so.2" ;;
	broken) echo 'not a library' \
		>"$root/usr/lib/x86_64-linux-gnu/libnccl.so.2" ;;
	none) ;;
	*) sn__die "sn_container_image: unknown kind $kind"; return 1 ;;
	esac
	ldconfig -r "$root" 2>/dev/null
	mksquashfs "$root" "$out" -comp gzip -Xcompression-level 1 \
		-noappend -quiet >/dev/null || return 1
	chmod 0644 "$out"
	rm -rf "$root"
}

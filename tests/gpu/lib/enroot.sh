# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# enroot on the GPU node, which has neither enroot nor squashfs-tools nor
# a network: what is carried, how it is installed there, the driver bound
# into containers through enroot's mounts.d (no libnvidia-container
# there), and test images made of the node's own programs holding an
# NCCL at the place of PyTorch's nvidia-nccl-cu* wheel.  Sourced by
# tests/gpu/container-nccl.sh (enroot by hand, issue 21), by the pyxis
# phase of run-gpu-tests.sh (tests/gpu/pyxis-gpu.sh) and, on this side,
# by container-carry.sh and fetch-debs.sh (gpu_enroot_carry).

# gpu_enroot_carry DIR: here (Debian 12, root, enroot installed by a
# containers.bats run): DIR/enroot.tar (enroot 4.1.2 as installed in
# /usr/local), DIR/*.deb (squashfs-tools and its liblzo2-2) and DIR's
# pyxis tarball from ../shared/third_party (THIRD_PARTY_DIR).
gpu_enroot_carry() {
	local dir=$1 tp=${2:-}
	mkdir -p "$dir"
	command -v enroot >/dev/null || {
		echo "enroot not installed here (run tests/integration/containers.bats once)" >&2
		return 1
	}
	tar -C / --exclude=usr/local/etc/enroot/enroot.conf.d/spank-nccl-tests.conf \
		-cf "$dir/enroot.tar" usr/local/bin/enroot usr/local/bin/enroot-aufs2ovlfs \
		usr/local/bin/enroot-mksquashovlfs usr/local/bin/enroot-mount \
		usr/local/bin/enroot-switchroot usr/local/bin/enroot-nsenter \
		usr/local/bin/enroot-makeself usr/local/lib/enroot usr/local/etc/enroot \
		usr/local/share/enroot || return 1
	(cd "$dir" && rm -f ./*.deb &&
	 apt-get download -o APT::Sandbox::User=root squashfs-tools liblzo2-2 >/dev/null) ||
		return 1
	[ -z "$tp" ] || cp "$tp"/pyxis-*.tar.xz "$dir/"
}

# gpu_enroot_install DIR PREFIX: on the node, enroot from DIR/enroot.tar
# into /usr/local, DIR's squashfs-tools debs unpacked into PREFIX with
# mksquashfs/unsquashfs wrappers in /usr/local/bin (their liblzo2 from
# PREFIX).
gpu_enroot_install() {
	local dir=$1 sq=$2 d t
	tar -xf "$dir/enroot.tar" -C / || return 1
	mkdir -p "$sq"
	for d in "$dir"/*.deb; do dpkg -x "$d" "$sq" || return 1; done
	for t in mksquashfs unsquashfs; do
		printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib/x86_64-linux-gnu:%s/usr/lib/x86_64-linux-gnu exec %s/usr/bin/%s "$@"\n' \
			"$sq" "$sq" "$sq" "$t" >/usr/local/bin/$t
		chmod 0755 /usr/local/bin/$t
	done
	mksquashfs -version >/dev/null 2>&1 || { echo "mksquashfs does not run"; return 1; }
	echo "enroot $(enroot version), $(mksquashfs -version 2>&1 | head -n1)"
}

# gpu_enroot_configure BASE [ETC]: enroot's per-user paths under BASE
# (the node's /tmp is closed to other users) and the driver's libraries
# bound into every container (ETC/mounts.d; ETC defaults to enroot's
# /usr/local/etc/enroot).  enroot reads its conf.d files in order, the
# first setting wins.
gpu_enroot_configure() {
	local base=$1 etc=${2:-/usr/local/etc/enroot} fstab l p
	fstab=$etc/mounts.d/90-sn-nvidia-driver.fstab
	mkdir -p "$etc/mounts.d" "$etc/enroot.conf.d"
	: >"$fstab"
	for l in libcuda.so.1 libnvidia-ml.so.1 libnvidia-ptxjitcompiler.so.1 libnvidia-nvvm.so.4; do
		p=$(ldconfig -p | awk -v l="$l" '$1 == l && /x86-64/ { print $NF; exit }')
		[ -n "$p" ] || continue
		echo "$(readlink -f "$p") /usr/lib/x86_64-linux-gnu/$l none x-create=file,bind,ro,nosuid,nodev,private" >>"$fstab"
	done
	# /dev/nvidia* come with enroot's own /dev rbind (10-system.fstab).
	echo "mounts.d: $(wc -l <"$fstab") driver libraries: $(awk '{ print $2 }' "$fstab" | paste -sd' ' -)"
	cat >"$etc/enroot.conf.d/00-sn-gpu.conf" <<C
ENROOT_RUNTIME_PATH $base/run/\$(id -u)
ENROOT_DATA_PATH $base/data/\$(id -u)
ENROOT_CACHE_PATH $base/cache/\$(id -u)
ENROOT_TEMP_PATH $base/tmp
C
	mkdir -p "$base"/{run,data,cache,tmp} && chmod 0755 "$base" &&
		chmod 1777 "$base"/{run,data,cache,tmp}
}

# NVIDIA_VISIBLE_DEVICES (set on the GPU node) makes enroot's
# hooks.d/98-nvidia.sh call nvidia-container-cli, which the node lacks:
# the driver comes from mounts.d instead.  Unsets it in the caller's
# shell (pyxis passes the job's environment on to enroot).
gpu_enroot_no_nvidia_hook() {
	unset NVIDIA_VISIBLE_DEVICES NVIDIA_DRIVER_CAPABILITIES
}

# gpu_image_root ROOT FILE...: a small root of this node's sh and
# coreutils, with the libraries they, FILE... (e.g. the wheel's NCCL) and
# the driver (bound in by mounts.d) need.
gpu_image_root() {
	local root=$1 f p l
	shift
	# shellcheck disable=SC2046 # one path a line
	set -- "$@" $(ldconfig -p | awk '/libcuda\.so\.1 |libnvidia-ml\.so\.1 / && /x86-64/ { print $NF }')
	rm -rf "$root"
	mkdir -p "$root"/{bin,etc,tmp,proc,sys,dev,run,root,home,share,usr/local/bin,usr/lib/x86_64-linux-gnu}
	chmod 1777 "$root/tmp"
	for f in sh bash cat sleep ls env id touch true echo; do
		p=$(type -P "$f") || continue
		cp -L "$p" "$root/bin/"
		set -- "$@" "$p"
	done
	for f in "$@"; do
		for l in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*'); do
			mkdir -p "$root$(dirname "$l")"
			[ -e "$root$l" ] || cp -L "$l" "$root$l"
		done
	done
	echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
	echo 'root:x:0:' >"$root/etc/group"
	echo 'NCCL_NVLS_ENABLE=0' >"$root/etc/environment"
}

# The directory of the wheel's NCCL inside the images, for PYVER
# (python3.12): where an image's venv would hold it.
gpu_image_wheel_dir() {
	echo "/opt/venv/lib/$1/site-packages/nvidia/nccl/lib"
}

# gpu_image_squash ROOT IMG: IMG (world-readable) from ROOT.
gpu_image_squash() {
	mksquashfs "$1" "$2" -comp gzip -Xcompression-level 1 -noappend -quiet >/dev/null &&
		chmod 0644 "$2"
}

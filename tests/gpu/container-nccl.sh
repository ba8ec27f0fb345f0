#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# On the GPU node (issue 21, item 4): a real enroot 4.1.2 container whose
# image holds the venv's NCCL (PyTorch's nvidia-nccl-cu* wheel), the
# NVIDIA driver bound in through enroot's own mount configuration
# (mounts.d: no libnvidia-container there), and that NCCL warmed on the
# real GPU: inside the container (nccl-warmup run there, naming it) and
# from the host through the running container (nccl-warmup
# --container-pid, as the job user).  No Slurm/pyxis here: enroot as pyxis
# runs it.  Carry made by tests/gpu/container-carry.sh.
# Usage: container-nccl.sh CARRY [OUT]   (root; writes OUT/container.txt)
set -uo pipefail
# shellcheck source=tests/gpu/lib/enroot.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/enroot.sh" || exit 1
carry=$(cd "${1:?usage: container-nccl.sh CARRY [OUT]}" && pwd)
out=${2:-${OUT:-/tmp/sn-container-out}}
mkdir -p "$out"
exec > >(tee "$out/container.txt") 2>&1
say() { echo "container-nccl: $*"; }
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f ms", (b - a) * 1000 }'; }
user=sncgpu
venv_py=${SN_VENV_PYTHON:-/opt/torch/.venv/bin/python}

# Everything outside /tmp: the GPU node's /tmp is not open to other
# users (measured: an unprivileged mkdir there is refused).
base=/opt/sn-enroot
rm -rf "$base"
mkdir -p "$base"
chmod 0755 "$base"

# 1. enroot, mksquashfs/unsquashfs (wrappers: their liblzo2 is carried)
gpu_enroot_install "$carry/enroot" /opt/sn-squashfs | sed 's/^/container-nccl: /'
[ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
id "$user" >/dev/null 2>&1 || useradd -m "$user" || exit 1

# 2. the image: this node's sh/coreutils/libc, the helper, the venv's NCCL
ncclsrc=$("$venv_py" -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))') ||
	{ say "no nvidia-nccl wheel in $venv_py"; exit 1; }
pyver=$("$venv_py" -c 'import sys; print("python%d.%d" % sys.version_info[:2])')
root=$base/img-root
# What the helper and the wheel's NCCL need.
gpu_image_root "$root" "$carry/nccl-warmup" "$ncclsrc/libnccl.so.2"
cp "$carry/nccl-warmup" "$root/usr/local/bin/"
cp "$carry/libmunge.so.2" "$root/usr/lib/x86_64-linux-gnu/"
wheel=$(gpu_image_wheel_dir "$pyver")
mkdir -p "$root$wheel"
cp -L "$ncclsrc/libnccl.so.2" "$root$wheel/"
img=$base/sn-venv-nccl.sqsh
t0=$EPOCHREALTIME
gpu_image_squash "$root" "$img" || { say "mksquashfs failed"; exit 1; }
say "image $img ($(du -h "$img" | cut -f1), NCCL from the wheel $ncclsrc) in $(ms "$t0" "$EPOCHREALTIME")"

# 3. the driver inside the container (enroot's mounts.d), enroot's paths
gpu_enroot_configure "$base" | sed 's/^/container-nccl: /'
share=$base/share
rm -rf "$share"; mkdir -p "$share"; chmod 0777 "$share"

gpu_enroot_no_nvidia_hook
as_user() { runuser -u "$user" -- env -u LD_LIBRARY_PATH HOME="/home/$user" "$@"; }
if ! as_user true; then user=root; as_user() { env -u LD_LIBRARY_PATH "$@"; }; fi

# 4. create and start, as the job user (root if its user namespace is refused)
t0=$EPOCHREALTIME
if ! as_user enroot create --force --name sn-venv-nccl "$img"; then
	say "enroot create as $user failed; as root"
	user=root; as_user() { env -u LD_LIBRARY_PATH "$@"; }
	as_user enroot create --force --name sn-venv-nccl "$img" || exit 1
fi
say "enroot create as $user: $(ms "$t0" "$EPOCHREALTIME")"
start() {
	as_user enroot start --mount "$share:/share" sn-venv-nccl sh -c \
		"/usr/local/bin/nccl-warmup --mode comm --nccl $wheel --timeout 60 > /share/inside.txt 2>&1; echo \$\$ >/share/pid; while [ ! -e /share/go ]; do sleep 0.05; done" \
		>"$out/start.log" 2>&1 &
	start_pid=$!
	for _ in $(seq 1200); do
		[ -s "$share/pid" ] && return 0
		kill -0 "$start_pid" 2>/dev/null || break
		sleep 0.05
	done
	say "enroot start as $user failed: $(tail -n 5 "$out/start.log")"
	return 1
}
t0=$EPOCHREALTIME
if ! start; then
	[ "$user" != root ] || exit 1
	user=root; as_user() { env -u LD_LIBRARY_PATH "$@"; }
	as_user enroot create --force --name sn-venv-nccl "$img" >/dev/null || exit 1
	t0=$EPOCHREALTIME
	start || exit 1
fi
say "enroot start + warmup inside: $(ms "$t0" "$EPOCHREALTIME")"
say "inside the container: $(cat "$share/inside.txt")"
pid=$(cat "$share/pid")

# 5. from the host, through the running container, as its user (the
# helper and libmunge copied where that user may read them)
hdir=$base/helper
rm -rf "$hdir"; mkdir -p "$hdir"
cp "$carry/nccl-warmup" "$carry/libmunge.so.2" "$hdir/"
chmod 0755 "$hdir" "$hdir"/*
t0=$EPOCHREALTIME
as_user env NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH="$hdir" "$hdir/nccl-warmup" --container-pid "$pid" \
	--container-image "$img" --mode comm --json >"$out/host.json" 2>"$out/host.err"
rc=$?
say "host-side warmup of the container's NCCL: exit $rc in $(ms "$t0" "$EPOCHREALTIME")"
say "host side: $(cat "$out/host.err")"
touch "$share/go"
wait "$start_pid"
as_user enroot remove --force sn-venv-nccl >/dev/null 2>&1
exit "$rc"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Prepares .carry/ for the GPU test run (tests/gpu/run-gpu-tests.sh), on a
# Debian 12 machine with network access to Debian's mirror, as root:
#
#   .carry/debs/*.deb           Debian's Slurm 22.05 + munge, unpacked (not
#                               installed) on the GPU node, which has no
#                               package registry
#   .carry/spank-nccl-*.tar.xz  `make dist` of the working tree: the GPU node
#                               has no autoconf, the tarball has ./configure
#   .carry/nccl.h               fallback NCCL header (the node's own libnccl
#                               ships none); taken from $SN_CUDA/include
#   .carry/enroot/              enroot 4.1.2 as installed here (one
#                               tests/integration/containers.bats run
#                               installs it), squashfs-tools and pyxis's
#                               source, for the pyxis phase
#                               (tests/gpu/pyxis-gpu.sh; SN_GPU_PYXIS=0
#                               leaves them out)
#   .carry/MANIFEST             what is in there, with checksums
#
# Then prints the device call.  .carry/ is git-ignored (.gitignore: /.carry/)
# and travels only because the call names it in `carry`.
#
# Environment: SN_CUDA (default /usr/local/cuda), SN_CARRY (default
# <repo>/.carry), SN_JOBS (make -j, default 2).
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
carry=${SN_CARRY:-$src/.carry}
cuda=${SN_CUDA:-/usr/local/cuda}
jobs=${SN_JOBS:-2}

# The packages the Slurm test cluster needs on a machine without Slurm
# (docs: shared notes "The 4xH200 GPU node"); libslurm-dev gives spank.h and
# slurm_version.h for ./configure --with-slurm, libmunge-dev munge.h and
# libmunge.so for nccl-warmup's fabric mode (--with-munge), libssl-dev
# openssl/kdf.h for its step key.  Ubuntu 24.04 already has
# everything else these binaries link (run-gpu-tests.sh checks with ldd).
# iproute2 and its libraries: `ip` for the fabric phase's network
# namespaces (tests/gpu/fabric-gpu.sh); the device has no ip.
debs=(
	slurmctld slurmd slurm-client slurm-wlm-basic-plugins libslurm38
	libslurm-dev munge libmunge2 libmunge-dev libssl-dev libhwloc15 liblua5.1-0
	libdbus-1-3
	iproute2 libbpf1 libelf1 libmnl0 libcap2 libbsd0 libmd0
)

die() {
	echo "fetch-debs.sh: error: $*" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "run as root (apt-get download writes as _apt or root)"
command -v apt-get >/dev/null || die "apt-get not found: run this on Debian 12"
# shellcheck disable=SC1091
. /etc/os-release
[ "${VERSION_CODENAME:-}" = bookworm ] ||
	die "this is ${PRETTY_NAME:-an unknown system}; the debs must come from Debian 12 (bookworm): Slurm 22.05.8"
for tool in autoreconf make xz git; do
	command -v "$tool" >/dev/null ||
		die "$tool not found (bash tests/install-deps.sh)"
done
[ -f "$cuda/include/nccl.h" ] ||
	die "$cuda/include/nccl.h not found: set SN_CUDA to a CUDA prefix with NCCL's header"

mkdir -p "$carry/debs"
rm -f "$carry"/debs/*.deb "$carry"/spank-nccl-*.tar.xz "$carry/nccl.h"
rm -rf "$carry/enroot"

echo "fetch-debs.sh: downloading ${#debs[@]} packages into $carry/debs"
# _apt cannot write into root's directories: download as root, quietly.
(cd "$carry/debs" &&
 apt-get download -o APT::Sandbox::User=root "${debs[@]}") ||
	die "apt-get download failed (run apt-get update first?)"
for p in "${debs[@]}"; do
	ls "$carry/debs/${p}_"*.deb >/dev/null 2>&1 ||
		die "package $p was not downloaded"
done

if [ "${SN_GPU_PYXIS:-1}" = 1 ]; then
	echo "fetch-debs.sh: enroot, squashfs-tools and pyxis into $carry/enroot"
	# shellcheck source=tests/gpu/lib/enroot.sh
	source "$src/tests/gpu/lib/enroot.sh"
	gpu_enroot_carry "$carry/enroot" "${SN_THIRD_PARTY_DIR:-$src/../shared/third_party}" ||
		die "cannot fill $carry/enroot (SN_GPU_PYXIS=0 leaves the pyxis phase out)"
fi

echo "fetch-debs.sh: make dist from a copy of $src"
build=$(mktemp -d /tmp/sn-gpu-dist.XXXXXX)
trap 'rm -rf "$build"' EXIT
# A copy of the working tree (tracked and untracked-not-ignored files, what
# the device call itself would carry): autoreconf never touches $src.
copy="$build/spank-nccl-snapshot"
mkdir -p "$copy"
list_files() {
	local f
	git ls-files -co --exclude-standard -z |
	while IFS= read -r -d '' f; do
		# Deleted but still tracked files are not part of the tree.
		[ -f "$f" ] && printf '%s\0' "$f"
	done
}
(cd "$src" && list_files | tar --null -cf - -T -) | tar -xf - -C "$copy"
(cd "$copy" && autoreconf -fi >"$build/autoreconf.log" 2>&1) || {
	cat "$build/autoreconf.log" >&2
	die "autoreconf failed on the working tree (see above)"
}
mkdir -p "$build/b"
(cd "$build/b" && "$copy/configure" -q --with-cuda="$cuda" \
	>"$build/configure.log" 2>&1) || {
	tail -n 30 "$build/configure.log" >&2
	die "configure failed in $build/b"
}
dist_kind="make dist"
if ! (cd "$build/b" && make -j"$jobs" dist >"$build/dist.log" 2>&1); then
	tail -n 30 "$build/dist.log" >&2
	[ "${SN_DIST_STRICT:-0}" != 1 ] ||
		die "make dist failed (a file named in EXTRA_DIST or _SOURCES is missing?)"
	# The GPU run tests the code, not the release tarball: fall back to
	# the autoreconf'd copy of the working tree, and say so.
	dist_kind="SNAPSHOT (make dist FAILED: fix it before a release)"
	echo "fetch-debs.sh: WARNING: make dist failed; carrying a snapshot of the working tree instead" >&2
	rm -rf "$copy/autom4te.cache"
	tar -C "$build" -cJf "$build/b/spank-nccl-snapshot.tar.xz" \
		spank-nccl-snapshot
fi
tarball=$(ls "$build"/b/spank-nccl-*.tar.xz)
cp "$tarball" "$carry/"
cp "$cuda/include/nccl.h" "$carry/nccl.h"
chmod 0644 "$carry"/*.tar.xz "$carry/nccl.h" "$carry"/debs/*.deb

{
	echo "# written by tests/gpu/fetch-debs.sh on $(date -u +%FT%TZ)"
	echo "# tarball: $dist_kind"
	echo "# source tree: $src ($(cd "$src" && git describe --always --dirty 2>/dev/null || echo 'no git'))"
	echo "# nccl.h: NCCL $(awk '/#define NCCL_MAJOR|#define NCCL_MINOR|#define NCCL_PATCH/{printf "%s%s", sep, $3; sep="."}' "$carry/nccl.h")"
	(cd "$carry" && sha256sum debs/*.deb ./*.tar.xz nccl.h &&
	 { [ ! -d enroot ] || sha256sum enroot/*; })
} >"$carry/MANIFEST"

size=$(du -sk "$carry" | cut -f1)
echo "fetch-debs.sh: $carry holds $((size / 1024)).$(((size % 1024) * 10 / 1024)) MiB:"
sed 's/^/  /' "$carry/MANIFEST"
[ "$size" -lt $((48 * 1024)) ] ||
	die "$carry is over 48 MiB: the device call carries 64 MiB at most, the working tree included"

cat <<'EOF'

Device call (one run, on the 4-GPU kind):
  kind:      nvidia-h200-x4
  carry:     [".carry"]
  timeout_s: 600
  command:   timeout -k 10 590 bash tests/gpu/run-gpu-tests.sh
Results come back from $OUT: summary.txt, run.log, build.log, slurmd.log,
slurmctld.log, bench.txt, node.txt (docs/dev/gpu-testing.md says how to read them).
EOF

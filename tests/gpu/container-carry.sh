#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Prepares the carry folder for tests/gpu/container-nccl.sh (issue 21: a
# real enroot container's NCCL warmed on a GPU node), on the Debian 12
# test machine, as root, after a build of the tree (make) and one
# container test run (tests/cluster/containers.sh installed enroot):
#   CARRY/nccl-warmup, CARRY/libmunge.so.2   this build's helper and the
#                                            one library it links that
#                                            the GPU node lacks
#   CARRY/enroot.tar     enroot 4.1.2 as installed here (/usr/local)
#   CARRY/debs/*.deb     squashfs-tools + liblzo2-2 (mksquashfs and
#                        unsquashfs; the GPU node has neither)
#   CARRY/container-nccl.sh
# Usage: tests/gpu/container-carry.sh CARRY  (SN_BUILD_DIR: build tree)
set -euo pipefail
carry=${1:?usage: container-carry.sh CARRY}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${SN_BUILD_DIR:-$here/../..}
mkdir -p "$carry/debs"
cp "$build/src/warmup/nccl-warmup" "$carry/"
cp -L /usr/lib/x86_64-linux-gnu/libmunge.so.2 "$carry/"
command -v enroot >/dev/null ||
	{ echo "container-carry.sh: enroot not installed (run tests/integration/containers.bats once)" >&2; exit 1; }
tar -C / --exclude=usr/local/etc/enroot/enroot.conf.d/spank-nccl-tests.conf \
	-cf "$carry/enroot.tar" usr/local/bin/enroot usr/local/bin/enroot-aufs2ovlfs \
	usr/local/bin/enroot-mksquashovlfs usr/local/bin/enroot-mount \
	usr/local/bin/enroot-switchroot usr/local/bin/enroot-nsenter \
	usr/local/bin/enroot-makeself usr/local/lib/enroot usr/local/etc/enroot \
	usr/local/share/enroot
(cd "$carry/debs" && rm -f ./*.deb &&
 apt-get download -o APT::Sandbox::User=root squashfs-tools liblzo2-2 >/dev/null)
cp "$here/container-nccl.sh" "$carry/"
du -sh "$carry"

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
#   CARRY/enroot/        enroot 4.1.2 as installed here, squashfs-tools
#                        (lib/enroot.sh's gpu_enroot_carry)
#   CARRY/container-nccl.sh, CARRY/lib/enroot.sh
# Usage: tests/gpu/container-carry.sh CARRY  (SN_BUILD_DIR: build tree)
set -euo pipefail
carry=${1:?usage: container-carry.sh CARRY}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${SN_BUILD_DIR:-$here/../..}
# shellcheck source=tests/gpu/lib/enroot.sh
source "$here/lib/enroot.sh"
mkdir -p "$carry/lib"
cp "$build/src/warmup/nccl-warmup" "$carry/"
cp -L /usr/lib/x86_64-linux-gnu/libmunge.so.2 "$carry/"
gpu_enroot_carry "$carry/enroot"
cp "$here/container-nccl.sh" "$carry/"
cp "$here/lib/enroot.sh" "$carry/lib/"
du -sh "$carry"

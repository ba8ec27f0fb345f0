#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A two-minute look at spank-nccl, as root on Debian 12: installs the
# dependencies, builds, starts a throwaway one-node Slurm cluster with four
# fake GPUs, lists the profiles, runs a two-task step with two profiles and
# a warmup, and stops the cluster again.  Nothing is installed system-wide
# except the Debian packages; the cluster lives in /tmp/spank-nccl-demo.
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=cluster/release.sh
source "$src/tests/cluster/release.sh"
build=$(sn_release_build_dir "$src")
export SN_BUILD_DIR="$build" SN_SRC_DIR="$src"
export SN_CLUSTER_DIR=${SN_CLUSTER_DIR:-/tmp/spank-nccl-demo}

say() {
	printf '\n### %s\n' "$*"
}

show() {
	printf '$ %s\n' "$*"
}

if [ "$(id -u)" -ne 0 ]; then
	echo "demo.sh: run as root (it installs packages and starts Slurm daemons)" >&2
	exit 1
fi

say "Installing build and test dependencies (Debian packages)"
bash "$src/tests/install-deps.sh"

# configure is generated once, by the host's autotools: a release root
# has other versions, and regenerating there would break the host's tree.
if [ ! -f "$src/configure" ]; then
	(cd "$src" && autoreconf -fi)
fi
# SN_SLURM_RELEASE=24.11 or 26.05: the rest runs in that release's Debian
# root (created on first use, about a minute).
sn_release_reexec "$src/tests/demo.sh" "$@"

say "Building spank-nccl against Slurm $(sn_release_local) in $build"
# An existing build tree regenerates itself (automake's rebuild rules).
if [ ! -f "$build/Makefile" ]; then
	mkdir -p "$build"
	(cd "$build" && "$src/configure" -q)
fi
cd "$build"
make -j2 >/dev/null
# Test-only products: the fake CUDA runtime and NCCL used below.
make -j2 integration-deps >/dev/null

# shellcheck source=cluster/cluster.sh
source "$src/tests/cluster/cluster.sh"
say "Starting a throwaway Slurm cluster (1 node, 4 fake GPUs) in $SN_CLUSTER_DIR"
sn_cluster_start
trap 'sn_cluster_stop >/dev/null 2>&1' EXIT
cd "$SN_CLUSTER_DIR/tmp"
echo "plugstack.conf: $(cat "$SN_CLUSTER_DIR/etc/plugstack.conf")"

say "The profiles this site offers"
show srun --nccl-profile=list
timeout 30 srun --nccl-profile=list </dev/null

fake=$(sn_fake_lib_dir)
say "A 2-task step with two profiles and a communicator warmup"
cat <<EOF
This machine has no GPU: the step runs with LD_LIBRARY_PATH=$fake,
a fake NVIDIA driver (libcuda.so.1) and NCCL built by 'make check' that report four GPUs
with distinct PCI bus IDs. On a GPU node the same command uses the real
libraries.
EOF
show "srun -l -n2 --gres=gpu:2 --nccl-profile=nccl-cumem-off,expandable-segments --nccl-warmup=comm,verbose env | grep -E ': (NCCL|PYTORCH)_' | sort"
LD_LIBRARY_PATH="$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	timeout 60 srun -l -n2 --gres=gpu:2 \
	--nccl-profile=nccl-cumem-off,expandable-segments \
	--nccl-warmup=comm,verbose env </dev/null |
	grep -E ': (NCCL|PYTORCH)_' | sort

say "Done; stopping the cluster"

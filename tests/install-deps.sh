#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Installs everything spank-nccl needs to build and test on Debian 12, as
# root.  Idempotent: a second run installs nothing new.  CUDA/NCCL are not
# installed here (the build finds them in /usr/local/cuda when present; the
# tests use the fake libraries built by `make check`).
set -euo pipefail

packages=(
	# build
	build-essential autoconf automake libtool pkg-config
	# unit tests
	libcmocka-dev valgrind
	# Slurm 22.05 (spank.h) and a throwaway cluster for integration tests;
	# libmunge and libssl-dev's libcrypto (the fabric warmup authenticates
	# its nodes with MUNGE, or with a key derived from slurm.key)
	libslurm-dev slurmctld slurmd slurm-client munge libmunge-dev libssl-dev
	# multi-node cluster in network namespaces; job users
	iproute2 util-linux passwd procps
	# integration tests; man page checks; jq: the docs' by-hand
	# nccl-warmup --json examples and "spank-nccl-report | jq" lines
	# (docs_examples.bats, fleet.bats)
	bats man-db groff-base jq
	# the fleet records against docs/record.schema.json, with a real
	# validator (test_record_json_schema.sh, fleet.bats)
	python3-jsonschema
	# make distcheck (dist-xz)
	xz-utils
	# fuzzing with libFuzzer (fuzz/run.sh, tests/ci.d/40-fuzz.sh)
	clang libclang-rt-14-dev
	# line coverage of make check and of integration suites
	# (tests/ci.d/60-coverage.sh; gcov-tool comes with gcc)
	gcovr
	# packaging: build the .deb (tests/ci.d/50-deb.sh), lint and build
	# the RPM spec
	dpkg-dev debhelper rpm rpmlint
	# fleet view (tests/integration/fleet*.bats): node_exporter serves the
	# .prom file, promtool parses the scrape and tests the alert rules,
	# Prometheus evaluates the dashboard, matplotlib draws its panels,
	# xmllint checks the SVG
	prometheus-node-exporter prometheus curl libxml2-utils python3-matplotlib
	# Slurm 24.11 and 26.05 in Debian roots (tests/cluster/release.sh)
	debootstrap
	# real pyxis + enroot built from ../shared/third_party
	# (tests/cluster/containers.sh, containers*.bats): enroot's build and
	# runtime needs, mksquashfs for the offline test images
	libcap2-bin libmd-dev squashfs-tools parallel gawk
)

# Inside a Slurm release root (tests/cluster/release.sh) everything was
# installed when the root was created, from that suite's own list.
if [ -f /.spank-nccl-root ]; then
	echo "install-deps.sh: in the $(cut -d' ' -f1 /.spank-nccl-root) root: its packages came with it"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps.sh: must run as root (apt-get install)" >&2
	exit 1
fi

missing=()
for p in "${packages[@]}"; do
	# Only packages not already installed cost an apt-get run.
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
	     grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps.sh: all ${#packages[@]} packages already installed"
	exit 0
fi

echo "install-deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive

# Keep the packages' postinst scripts from starting munge/slurmctld/slurmd
# as system services (invoke-rc.d honours policy-rc.d exit 101); the tests
# start their own daemons.  Only remove a policy-rc.d we created.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 0755 "$policy"
	created_policy=1
fi
cleanup() {
	if [ "$created_policy" -eq 1 ]; then
		rm -f "$policy"
	fi
}
trap cleanup EXIT

apt-get update -q
apt-get install -y -q --no-install-recommends "${packages[@]}"

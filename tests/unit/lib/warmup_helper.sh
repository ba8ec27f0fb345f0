# SPDX-License-Identifier: MIT
# Sourced by the shell tests of the built nccl-warmup (test_nccl_warmup*.sh,
# test_fabric_helper.sh), run by "make check" from the build directory:
# sets helper and fake (tests/fake, each library in its own directory),
# skips (77) where they were not built, and defines now_ms.
# shellcheck shell=sh

helper=./src/warmup/nccl-warmup
fake=$(cd ./tests/fake 2>/dev/null && pwd)

if [ ! -x "$helper" ] || [ ! -e "$fake/nccl/libnccl.so.2" ] ||
   [ ! -e "$fake/cuda/libcuda.so.1" ]; then
	echo "nccl-warmup or the fake CUDA/NCCL libraries were not built" \
	     "(configure found no cuda.h/nccl.h, see --with-cuda; or --disable-warmup)" >&2
	# CI=true: a missing helper fails, unless it was left out on purpose.
	if [ "${CI:-}" = true ] && [ "${SN_ENABLE_WARMUP:-}" != no ]; then
		echo "FAIL: CI=true requires the warmup helper to be built" >&2
		exit 1
	fi
	exit 77
fi

# The environment guard (tests/fake/env_guard.c), as ENV=VALUE words for
# env(1).  Under --enable-sanitizers ASan wants to be first in the link
# order; a preloaded library is the point here.
# shellcheck disable=SC2034  # used by the scripts that source this file
# CUDA_DEVICE_MAX_CONNECTIONS set, as by a job: the helper's own setenv of
# it at start (main.c) is then skipped, and the guard sees the later ones.
guard_env="LD_PRELOAD=$fake/guard/libenvguard.so CUDA_DEVICE_MAX_CONNECTIONS=8 ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

now_ms() {
	# date +%s%N is GNU; fall back to seconds.
	t=$(date +%s%N 2>/dev/null)
	case $t in *N) echo $(( $(date +%s) * 1000 ));;
	*) echo $(( t / 1000000 ));; esac
}

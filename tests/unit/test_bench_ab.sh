#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/helper-ab.sh, the tool that says whether a change moved the
# helper's speed, on the fake CUDA/NCCL: it builds nccl-warmup from this
# source tree with gcc (src/core's rooms, src/warmup/fabric), runs it and
# the build's own helper in turns and prints a median table with B/A.
# Its numbers are not checked (speed lives in bench/): that it builds,
# runs both and prints every row is.  Run by "make check".
set -u
src=${srcdir:-.}
helper=./src/warmup/nccl-warmup
fake=$(cd ./tests/fake 2>/dev/null && pwd)
if [ ! -x "$helper" ] || [ ! -e "$fake/cuda/libcuda.so.1" ]; then
	echo "nccl-warmup or the fake libraries were not built" >&2
	if [ "${CI:-}" = true ] && [ "${SN_ENABLE_WARMUP:-}" != no ]; then
		echo "FAIL: CI=true requires the warmup helper to be built" >&2
		exit 1
	fi
	exit 77
fi
out=$(LD_LIBRARY_PATH="$fake/cuda:$fake/nccl" \
	SN_HELPER_B="$helper" SN_AB_CPPFLAGS="${SN_CUDA_CPPFLAGS:-}" \
	bash "$src/bench/helper-ab.sh" "$src" - 2 -- --mode comm --teardown exit 2>&1)
rc=$?
printf '%s\n' "$out"
fail=0
[ "$rc" -eq 0 ] || { echo "FAIL: helper-ab.sh exited $rc" >&2; fail=1; }
for row in wall cuda_init contexts comm_init collectives total; do
	# "NAME  A  B  RATIO": two medians and a ratio ("-" when A is 0).
	printf '%s\n' "$out" | grep -Eq "^$row +[0-9.]+ +[0-9.]+ +([0-9.]+|-)\$" ||
		{ echo "FAIL: no '$row A B B/A' row" >&2; fail=1; }
done
exit $fail

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# On the GPU node (issue 31): with the real NCCL, NCCL_DEBUG=INFO and
# NCCL_DEBUG_SUBSYS=ALL (no NCCL_DEBUG_FILE) put NCCL's log on the
# helper's stdout.  The result on stdout (--json alone, as before) is then
# not one JSON line; on its own descriptor (--json --result-fd 3, as
# spank_nccl.so passes it) it is, in check, comm and bandwidth mode, also
# with a preload printing a fake JSON and junk on stdout and stderr
# (tests/fake/junk_preload.c, built here).  The helper by hand, no Slurm.
#
# Usage (root or any user, from the repository root, after
# tests/gpu/run-gpu-tests.sh built the helper):
#   SN_HELPER=/tmp/sn-gpu/build/src/warmup/nccl-warmup bash tests/gpu/result-fd-gpu.sh
# Writes $OUT/result-fd.txt; last line "N passed, N failed"; exit 1 on a
# failure.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
helper=${SN_HELPER:-/tmp/sn-gpu/build/src/warmup/nccl-warmup}
out=${OUT:-/tmp/sn-gpu-out}
dir=$(mktemp -d /tmp/result-fd.XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir -p "$out"
exec > >(tee "$out/result-fd.txt") 2>&1
passed=0 failed=0
ok() { echo "PASS $*"; passed=$((passed + 1)); }
bad() { echo "FAIL $*"; failed=$((failed + 1)); }

# One JSON object, status ok, naming the node's NCCL: FILE's only line?
one_ok_json() {
	python3 - "$1" <<'PY'
import json, sys
lines = open(sys.argv[1], encoding="utf-8", errors="replace").read().splitlines()
if len(lines) != 1:
    sys.exit("%d lines" % len(lines))
r = json.loads(lines[0])
if r.get("status") != "ok" or not r.get("nccl_path") or "FAKE" in lines[0]:
    sys.exit("not the helper's passing result: " + lines[0][:200])
print("ok: %s, NCCL %s from %s" % (r.get("mode"), r.get("nccl_version"), r.get("nccl_path")))
PY
}

[ -x "$helper" ] || { bad "no helper at $helper (SN_HELPER=)"; echo "$passed passed, $failed failed"; exit 1; }
cc -shared -fPIC -o "$dir/libjunk.so" "$src/tests/fake/junk_preload.c" ||
	{ bad "cannot build tests/fake/junk_preload.c"; }
log_env=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALL)
echo "helper: $helper; nvidia-smi: $(nvidia-smi -L 2>/dev/null | head -n 4 | paste -sd';' -)"

# Before: the JSON on stdout, after NCCL's log.
env -u NCCL_DEBUG_FILE "${log_env[@]}" "$helper" --json --mode comm \
	>"$dir/old.out" 2>"$dir/old.err"
rc=$?
echo "stdout channel: exit $rc, $(wc -l <"$dir/old.out") stdout lines, $(grep -c ' NCCL INFO ' "$dir/old.out") of them NCCL INFO"
if grep -q ' NCCL INFO ' "$dir/old.out" && ! one_ok_json "$dir/old.out" >/dev/null 2>&1; then
	ok "stdout-channel: NCCL's log shares stdout with the JSON (the old channel breaks)"
else
	bad "stdout-channel: expected NCCL INFO lines beside the JSON on stdout"
fi

for mode in check comm bandwidth; do
	for junk in no yes; do
		name=result-fd-$mode
		[ $junk = yes ] && name=$name-junk
		pre=()
		[ $junk = yes ] && pre=(LD_PRELOAD="$dir/libjunk.so")
		env -u NCCL_DEBUG_FILE "${log_env[@]}" "${pre[@]}" "$helper" \
			--json --result-fd 3 --mode $mode 3>"$dir/res" \
			>"$dir/out" 2>"$dir/err"
		rc=$?
		why=$(one_ok_json "$dir/res" 2>&1)
		nccl_lines=$(grep -c ' NCCL INFO ' "$dir/out")
		if [ $rc -eq 0 ] && [[ $why == ok:* ]] &&
		   { [ $mode = check ] || [ "$nccl_lines" -gt 0 ]; } &&
		   ! grep -q '"node":' "$dir/out"; then
			ok "$name: $why; stdout: $nccl_lines NCCL INFO lines, no result"
		else
			bad "$name: exit $rc; descriptor 3: $why; stdout NCCL INFO lines: $nccl_lines"
			tail -n 3 "$dir/err" | sed 's/^/    err| /'
		fi
	done
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

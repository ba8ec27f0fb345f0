#!/bin/sh
# SPDX-License-Identifier: MIT
# spank-nccl-report on a crafted fleet: groups of identical nodes, the
# outlier threshold both ways, min-peers, trend, last failure, skipped
# lines, the three output forms and the exit codes.
set -u
report=${SN_REPORT:-src/report/spank-nccl-report}
dir=$(mktemp -d "${TMPDIR:-/tmp}/sn-test-report.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
bad() {
	echo "FAIL: $*" >&2
	fail=1
}
[ -x "$report" ] || { echo "test_report: $report not built" >&2; exit 1; }

# rec TS NODE VERDICT CLASS COUNT MODEL BUSBW TOTAL_MS [MESSAGE]
# A Prolog's record (root's run), or SRC's ("spank": a job's helper).
rec() {
	printf '{"record":"spank-nccl-warmup","version":1,"ts":%s,"source":"%s","node":"%s","verdict":"%s","class":"%s","gpu_count":%s,"gpu_model":"%s","busbw_gbps":%s,"timings_ms":{"total":%s},"message":"%s"}\n' \
		"$1" "${SRC:-prolog}" "$2" "$3" "$4" "$5" "$6" "$7" "$8" "${9:-}"
}
f=$dir/records.jsonl
{
	# a1-a4: 8xH100; a4 25 % slow; a3 50 % slower to warm up.
	for n in a1 a2 a3 a4; do
		bw=400; ms=2000
		[ $n = a4 ] && bw=300
		[ $n = a3 ] && ms=3000
		for t in 1 2 3 4; do
			rec "$t" $n pass ok 8 "NVIDIA H100" $bw $ms
		done
	done
	# a2 drifts down: 400 x4, then 300 x2: the newer half's median (300)
	# against the older half's (400) is -25 %; the median stays 400.
	rec 5 a2 pass ok 8 "NVIDIA H100" 300 2000
	rec 6 a2 pass ok 8 "NVIDIA H100" 300 2000
	rec 7 a1 fail nccl_error 8 "NVIDIA H100" null 100 "NCCL init failed"
	# b1, b2: two 4xA100 nodes, b2 very slow: too few peers to judge.
	rec 1 b1 pass ok 4 "NVIDIA A100" 200 1000
	rec 1 b2 pass ok 4 "NVIDIA A100" 10 1000
	echo 'not json'
	echo '{"record":"spank-nccl-warmup","version":2}'
} >"$f"

out=$("$report" "$f" 2>"$dir/err") || bad "table: exit $?"
echo "$out"
echo "$out" | grep -Eq '^a4 +8xNVIDIA H100 .* OUTLIER:busbw ' || bad "a4 not flagged"
echo "$out" | grep -Eq '^a3 .* OUTLIER:time ' || bad "a3 warmup time not flagged"
echo "$out" | grep -Eq '^a1 .* nccl_error: NCCL init failed$' || bad "a1 last failure"
echo "$out" | grep -Eq '^a2 .* 400\.0 +-25\.0% ' || bad "a2 trend"
echo "$out" | grep -Eq '^b2 .* - +-$' || bad "b2 judged with one peer"
[ "$(echo "$out" | grep -c OUTLIER)" -eq 2 ] || bad "outlier count"
echo "$out" | tail -n1 | grep -q '^6 nodes, 21 records, 2 outliers .*, 2 lines skipped$' ||
	bad "summary line"
grep -q "^spank-nccl: report: $f:23: skipped: " "$dir/err" || bad "skip message"
grep -q "record version 2" "$dir/err" || bad "version message"

"$report" --threshold=30 "$f" 2>/dev/null | grep -q 'OUTLIER:busbw' &&
	bad "a4 flagged at 30 %"
"$report" --min-peers=2 "$f" 2>/dev/null | grep -Eq '^b2 .*OUTLIER:busbw' ||
	bad "b2 not flagged with --min-peers=2"

json=$("$report" --json "$f" 2>/dev/null) || bad "json: exit $?"
case $json in
'{"version":1,"threshold_pct":20,"min_peers":3,"records":21,"skipped":2,"outliers":2,"nodes":[{"node":"a1",'*) ;;
*) bad "json head: $json" ;;
esac
[ "$(echo "$json" | grep -o '"outlier":true' | wc -l)" -eq 2 ] || bad "json outliers"

svg=$("$report" --svg "$f" 2>/dev/null) || bad "svg: exit $?"
echo "$svg" | head -n1 | grep -q '^<?xml' || bad "svg head"
echo "$svg" | grep -q '^<g class="node outlier"><title>a4 (8xNVIDIA H100): outlier</title>' ||
	bad "svg outlier a4"
echo "$svg" | tail -n1 | grep -q '</svg>$' || bad "svg end"

# A fabric warmup that c2 broke: c1's record (peer_failed, blaming c2)
# is not a failure of c1; c2's own record is c2's.
f2=$dir/fabric.jsonl
{
	rec 1 c1 pass ok 2 "NVIDIA H200" null 1000
	rec 2 c1 fail peer_failed 2 "NVIDIA H200" null 1000 "fabric warmup: node c2 (index 1 of 2) failed"
	rec 2 c2 fail nccl_error 2 "NVIDIA H200" null 1000 "NCCL init failed"
	# A fabric pass: its busbw is the network's, its time includes the
	# wait for the other nodes; neither is the node's.
	rec 3 c1 pass ok 2 "NVIDIA H200" 5 9000 |
		sed 's/"verdict"/"mode":"fabric","verdict"/'
} >"$f2"
out=$("$report" "$f2" 2>/dev/null)
echo "$out" | grep -Eq '^c1 +2xNVIDIA H200 +3 +2 +0 +- +- +1\.00 ' || bad "c1 counted c2's fault or the fabric run's numbers: $out"
echo "$out" | grep -Eq '^c2 .* nccl_error: NCCL init failed$' || bad "c2 last failure"
json=$("$report" --json "$f2" 2>/dev/null)
echo "$json" | grep -q '"node":"c1",[^}]*"runs":3,"passes":2,"failures":0,"reused":0,"peer_failed":1,"not_node_faults":1,"last_failure_class":null' ||
	bad "json c1 peer_failed: $json"

# Whose fault (schema 3): a user's bad nccl= (nccl_error, fault job) and
# a squatted fabric port (fault environment) are not the node's; a CUDA
# failure is.  Old records without "fault" go by their class.
f3=$dir/fault.jsonl
{
	rec 1 d1 fail nccl_error 2 "NVIDIA H200" null 1000 "cannot load the NCCL named by --nccl" |
		sed 's/"verdict"/"fault":"job","verdict"/'
	rec 2 d1 fail fabric_setup 2 "NVIDIA H200" null 1000 "ports taken" |
		sed 's/"verdict"/"fault":"environment","verdict"/'
	rec 3 d1 pass ok 2 "NVIDIA H200" null 1000
	rec 4 d2 fail cuda_error 2 "NVIDIA H200" null 1000 "Xid 79" |
		sed 's/"verdict"/"fault":"node","verdict"/'
	rec 5 d2 fail nccl_error 2 "NVIDIA H200" null 1000 "old record, no fault"
	# A killed step's hang record (step_hang.c) is no warmup: not counted.
	rec 6 d1 fail timeout 2 "NVIDIA H200" null 1000 "killed" |
		sed 's/"verdict"/"fault":"job","hang":"rank 1 (task 1 on d1) is dead","verdict"/'
} >"$f3"
json=$("$report" --json "$f3" 2>/dev/null)
echo "$json" | grep -q '"node":"d1",[^}]*"runs":3,"passes":1,"failures":0,"reused":0,"peer_failed":0,"not_node_faults":2,"last_failure_class":null' ||
	bad "json d1 counted the job's or environment's fault: $json"
echo "$json" | grep -q '"node":"d2",[^}]*"failures":2,"reused":0,"peer_failed":0,"not_node_faults":0,"last_failure_class":"nccl_error"' ||
	bad "json d2 node faults: $json"
# busbw is compared at one all-reduce size ("bytes", schema 3): e1-e3
# at 64M; e4 measured at 1M (a third of the busbw, as small messages
# are) is another group, not an outlier; e1's older 1M runs do not count.
f4=$dir/sizes.jsonl
{
	for n in e1 e2 e3; do
		rec 1 $n pass ok 8 "NVIDIA H100" 400 1000 |
			sed 's/"verdict"/"bytes":67108864,"verdict"/'
	done
	rec 0 e1 pass ok 8 "NVIDIA H100" 100 1000 |
		sed 's/"verdict"/"bytes":1048576,"verdict"/'
	rec 1 e4 pass ok 8 "NVIDIA H100" 130 1000 |
		sed 's/"verdict"/"bytes":1048576,"verdict"/'
} >"$f4"
out=$("$report" "$f4" 2>/dev/null)
echo "$out" | grep -Eq '^e1 +8xNVIDIA H100@64M +2 +2 +0 +400\.0 ' ||
	bad "e1's busbw mixed sizes: $out"
echo "$out" | grep -Eq '^e4 +8xNVIDIA H100@1M .* -  *-$' ||
	bad "e4 at 1M judged against 64M nodes: $out"
! echo "$out" | grep -q OUTLIER || bad "an outlier across sizes: $out"

# Figures and identity only from root's runs (source "prolog"): a job's
# helper (source "spank") forging a low busbw and a slow warmup on f1
# makes no outlier, nor does a fast busbw and another GPU name on f3
# hide the slow f3 (it stays in its peers' group).
f6=$dir/forged.jsonl
{
	for n in f1 f2 f3; do
		bw=400
		[ $n = f3 ] && bw=300
		rec 1 $n pass ok 8 "NVIDIA H100" $bw 1000
	done
	SRC=spank rec 2 f1 pass ok 8 "NVIDIA H100" 1 90000
	SRC=spank rec 2 f1 pass ok 8 "NVIDIA H100" 1 90000
	SRC=spank rec 2 f3 pass ok 8 "NVIDIA H100" 9000 1000
	SRC=spank rec 3 f3 pass ok 1 "Forged GPU" 9000 1000
} >"$f6"
out=$("$report" "$f6" 2>/dev/null)
echo "$out" | grep -Eq '^f3 +8xNVIDIA H100 +3 +3 +0 +300\.0 .*OUTLIER:busbw ' ||
	bad "a job's forged figures hid f3: $out"
[ "$(echo "$out" | grep -c OUTLIER)" -eq 1 ] ||
	bad "a job's forged figures made an outlier: $out"

# A "fault" that is no fault name: the line is refused, not counted.
rec 6 d3 fail cuda_error 2 "NVIDIA H200" null 1000 "x" |
	sed 's/"verdict"/"fault":"user","verdict"/' >"$dir/badfault.jsonl"
rec 7 d3 pass ok 2 "NVIDIA H200" null 1000 >>"$dir/badfault.jsonl"
"$report" --json "$dir/badfault.jsonl" 2>/dev/null | grep -q '"skipped":1' ||
	bad "a bad fault value was not skipped"

# A hostile GPU name (the helper runs as the job user and names the GPU):
# JSON that closes the group and adds {"node":"n1","outlier":true}, SVG
# markup, a terminal escape sequence, a newline and DEL (records are
# ASCII: the reader refuses other bytes).  Each form shows exactly the
# three honest nodes, escaped.
f5=$dir/hostile.jsonl
evil='x\",\"outlier\":true},{\"node\":\"n1\",\"outlier\":true,\"x\":\"</title><script>\u001b[2J\nF\u007f'
for n in h1 h2 h3; do
	printf '{"record":"spank-nccl-warmup","version":1,"ts":1,"node":"%s","verdict":"pass","class":"ok","gpu_count":8,"gpu_model":"%s","busbw_gbps":400,"timings_ms":{"total":1000},"message":""}\n' \
		"$n" "$evil"
done >"$f5"
out=$("$report" "$f5" 2>&1) || bad "hostile table: exit $?"
printf '%s\n' "$out" | grep -q "$(printf '\033')" && bad "ESC reached the table"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 5 ] || bad "hostile table: not 5 lines: $out"
printf '%s\n' "$out" | grep -Eq '^h1 +8xx","outlier":true},.*</title><script>\?\[2J\?F\? ' ||
	bad "hostile table: group not shown escaped: $out"
"$report" --json "$f5" >"$dir/hostile.json" 2>&1 || bad "hostile json: exit $?"
python3 - "$dir/hostile.json" <<'PY' || bad "hostile json: $(cat "$dir/hostile.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
nodes = doc["nodes"]
assert [n["node"] for n in nodes] == ["h1", "h2", "h3"], nodes
assert doc["outliers"] == 0 and not any(n["outlier"] for n in nodes), nodes
model = ('x","outlier":true},{"node":"n1","outlier":true,"x":"'
         '</title><script>\x1b[2J\nF\x7f')
assert all(n["group"] == "8x" + model for n in nodes), nodes[0]["group"]
assert all(n["gpu_model"] == model for n in nodes), nodes[0]["gpu_model"]
PY
"$report" --svg "$f5" >"$dir/hostile.svg" 2>&1 || bad "hostile svg: exit $?"
python3 - "$dir/hostile.svg" <<'PY' || bad "hostile svg: $(cat "$dir/hostile.svg")"
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
assert [e for e in root.iter() if e.tag == ns + "script"] == [], "a script element"
titles = [t.text for g in root.iter(ns + "g") for t in g.findall(ns + "title")]
assert len(titles) == 3, titles
for n, t in zip(["h1", "h2", "h3"], titles):
    assert t.startswith(n + ' (8xx","outlier":true},'), t
    assert t.endswith('</title><script>?[2J?F?): ok'), t
PY

: >"$dir/empty"
"$report" "$dir/empty" >/dev/null 2>&1
[ $? -eq 1 ] || bad "empty input: exit not 1"
"$report" --threshold=0 "$f" >/dev/null 2>&1
[ $? -eq 2 ] || bad "--threshold=0: exit not 2"
"$report" --json --svg "$f" >/dev/null 2>&1
[ $? -eq 2 ] || bad "--json --svg: exit not 2"
"$report" "$dir/missing" >/dev/null 2>&1
[ $? -eq 1 ] || bad "missing file: exit not 1"
exit $fail

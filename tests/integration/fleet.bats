#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# Fleet view on three nodes (network namespaces) with fake GPUs: one
# record per warmup (spank and Prolog paths, pass and fail), written by
# the root side into a root-only directory; per-node .prom files served by
# Debian's real prometheus-node-exporter and parsed by promtool; the admin
# report flags the node made slow (and the docs' "spank-nccl-report ... |
# jq" lines run on the records); forged helper output cannot add records
# or metric lines; a failing sink never fails the step; whose fault a
# failure is; syslog's parts.  The shipped alert rules and dashboard are
# fleet_alerts.bats's.  Every record, of
# every mode, pass or fail, matches the published JSON Schema
# (docs/record.schema.json) under a real validator (python3-jsonschema).
#
# Node n3 is made slow with the fake NCCL: warmup_helper= points at a
# wrapper that sets FAKE_NCCL_BUSBW_GBPS from the node's host name (the
# nodes share one file system and one job environment) and execs the
# real nccl-warmup.

SN_NODES=3
load common
load helpers/fleet

setup_file() { fleet_setup_file; }
teardown_file() { fleet_teardown_file; }
setup() { fleet_setup; }


@test "fleet: one record per node for a passing bandwidth warmup (job user, root-only sink)" {
	local job lines
	run --separate-stderr sn_as_user env LD_LIBRARY_PATH="$(sn_fake_lib_dir)" \
		timeout 30 srun -N3 --gres=gpu:2 --nccl-warmup=bandwidth \
		printenv SLURM_JOB_ID
	sn_assert_status 0
	job=$(head -n1 <<<"$output")
	lines=$(job_records "$job")
	[ "$(wc -l <<<"$lines")" -eq 3 ] || sn_fail "records: $lines"
	[ "$(field node <<<"$lines" | sort | paste -sd' ')" = "n1 n2 n3" ] ||
		sn_fail "nodes: $lines"
	[ "$(field verdict <<<"$lines" | sort -u)" = pass ] || sn_fail "$lines"
	[ "$(field class <<<"$lines" | sort -u)" = ok ] || sn_fail "$lines"
	[ "$(field user <<<"$lines" | sort -u)" = "$SN_USER" ] || sn_fail "$lines"
	[ "$(field source <<<"$lines" | sort -u)" = spank ] || sn_fail "$lines"
	[ "$(field mode <<<"$lines" | sort -u)" = bandwidth ] || sn_fail "$lines"
	[ "$(field gpu_count <<<"$lines" | sort -u)" = 2 ] || sn_fail "$lines"
	# Typed for sinks: the step a number, its kind apart; the cluster;
	# the all-reduce size the busbw was measured at (64 MiB default).
	[ "$(field step <<<"$lines" | sort -u)" = 0 ] || sn_fail "$lines"
	[ "$(field step_kind <<<"$lines" | sort -u)" = normal ] || sn_fail "$lines"
	[ "$(field cluster <<<"$lines" | sort -u)" = spanknccl ] || sn_fail "$lines"
	[ "$(field bytes <<<"$lines" | sort -u)" = 67108864 ] || sn_fail "$lines"
	[ "$(field fault <<<"$lines" | sort -u)" = None ] || sn_fail "$lines"
	[ "$(field gpus.1.busid <<<"$lines" | sort -u)" = 0000:02:00.0 ] ||
		sn_fail "bus IDs: $lines"
	field nccl_version <<<"$lines" | grep -qE '^[0-9]+\.[0-9]+\.[0-9]+' ||
		sn_fail "NCCL version: $lines"
	field timings_ms.comm_init <<<"$lines" | grep -qvx None ||
		sn_fail "timings: $lines"
	# n3's busbw follows its fake NCCL: well under the others'.
	python3 -c '
import json, sys
slow, fast = float(sys.argv[1]), float(sys.argv[2])
n = 0
for line in sys.stdin:
    r = json.loads(line)
    v = r["busbw_gbps"]
    if r["node"] == "n3":
        assert 0.2 * slow < v <= 1.05 * slow, r
    else:
        assert 2 * slow < v <= 1.05 * fast, r
    n += 1
assert n == 3, n' "$SLOW_GBPS" "$FAST_GBPS" <<<"$lines" ||
		sn_fail "busbw per node: $lines"
	[ "$(stat -c %a "$(records)")" = 640 ] || sn_fail "mode $(stat -c %a "$(records)")"
	[ "$(stat -c %u "$(records)")" = 0 ] || sn_fail "records not root's"
	validate_records "bandwidth records" <<<"$lines"
}

@test "fleet: a failing warmup records its class and message, the step still fails" {
	local job lines
	sn_fake_env duplicate
	run --separate-stderr sn_srun -N3 --gres=gpu:2 --nccl-warmup=comm \
		printenv SLURM_JOB_ID
	sn_assert_failed
	# This step's records are the file's last three lines.
	lines=$(tail -n3 "$(records)")
	[ "$(field job <<<"$lines" | sort -u | wc -l)" -eq 1 ] ||
		sn_fail "records: $lines"
	[ "$(field verdict <<<"$lines" | sort -u)" = fail ] || sn_fail "$lines"
	[ "$(field class <<<"$lines" | sort -u)" = duplicate_busid ] ||
		sn_fail "$lines"
	[ "$(field exit_code <<<"$lines" | sort -u)" = 3 ] || sn_fail "$lines"
	field message <<<"$lines" | grep -q 'duplicate PCI bus ID' ||
		sn_fail "message: $lines"
	validate_records "failure records" <<<"$lines"
}


@test "fleet: whose fault: a user's bad nccl= and NCCL_ALGO are the job's, a GPU whose memory is held the node's" {
	local rec prom
	sn_fake_env ok
	failing_step_on_n2 "comm,nccl=$(bad_nccl)"
	sn_assert_msg "cannot load the NCCL named by --nccl"
	sn_assert_msg "not a fault of the node"
	! grep -q "report the node" <<<"$stderr$output" ||
		sn_fail "a user's bad nccl= says report the node: $stderr"
	[ "$(field class <<<"$rec")" = nccl_error ] || sn_fail "$rec"
	[ "$(field fault <<<"$rec")" = job ] || sn_fail "bad nccl= not the job's: $rec"
	validate_records "job-fault record" <<<"$rec"

	# The job's own NCCL_ALGO breaks broadcast: the job's.
	NCCL_ALGO=Tree failing_step_on_n2 comm
	sn_assert_msg "NCCL broadcast failed"
	! grep -q "report the node" <<<"$stderr$output" ||
		sn_fail "the job's NCCL_ALGO says report the node: $stderr"
	[ "$(field fault <<<"$rec")" = job ] || sn_fail "NCCL_ALGO not the job's: $rec"
	[ "$(field failed_op <<<"$rec")" = broadcast ] || sn_fail "$rec"

	# The job's NCCL (from its LD_LIBRARY_PATH here) loaded, then could
	# not build a communicator, with no NCCL_* of the job's: the node's
	# (NVLink or the fabric manager would fail any NCCL).
	sn_node_fake FAKE_NCCL_FAIL=init
	FAKE_NCCL_FAIL=init failing_step_on_n2 comm
	[ "$(field class <<<"$rec")" = nccl_error ] || sn_fail "$rec"
	[ "$(field nccl_source <<<"$rec")" = ld_library_path ] || sn_fail "$rec"
	[ "$(field fault <<<"$rec")" = node ] || sn_fail "init failure not the node's: $rec"
	sn_assert_msg "report the node if it persists"

	# A GPU whose memory another process holds: the node's, and said so.
	sn_node_fake FAKE_CUDA_FAIL=context-oom
	FAKE_CUDA_FAIL=context-oom failing_step_on_n2 comm
	sn_assert_msg "already held by other processes"
	[ "$(field class <<<"$rec")" = cuda_error ] || sn_fail "$rec"
	[ "$(field fault <<<"$rec")" = node ] || sn_fail "OOM not the node's: $rec"
	field message <<<"$rec" | grep -q "CUDA_ERROR_OUT_OF_MEMORY" ||
		sn_fail "message: $rec"

	# The node's counters tell them apart.
	prom=$(cat "$(prom_dir n2)/spank_nccl.prom")
	[ "$(sample 'spank_nccl_warmup_failure_classes_total{class="nccl_error",fault="job"}' "$prom")" -ge 2 ] ||
		sn_fail "job faults not counted apart: $prom"
	# (one: the init failure above; the job's two are not there)
	[ "$(sample 'spank_nccl_warmup_failure_classes_total{class="nccl_error",fault="node"}' "$prom")" = 1 ] ||
		sn_fail "a job's fault counted as the node's: $prom"
	[ "$(sample 'spank_nccl_warmup_failures_total{mode="comm",source="plugin",fault="job"}' "$prom")" -ge 2 ] ||
		sn_fail "job faults by mode/source: $prom"
	[ "$(sample 'spank_nccl_warmup_failures_total{mode="comm",source="plugin",fault="node"}' "$prom")" -ge 1 ] ||
		sn_fail "the node's fault not counted: $prom"
}

@test "fleet: a reused pass is recorded as reused, without touching the metrics" {
	local script lines prom before
	sn_fake_env ok
	prom="$(fleet_dir)/prom/n1/spank_nccl.prom"
	before=$(awk '$1 == "spank_nccl_warmup_passes_total{mode=\"comm\",source=\"plugin\"}" { print $2 }' "$prom" 2>/dev/null)
	script=$(sn_batch_script fleet-reuse.sh <<'S'
#!/bin/bash
#SBATCH --nccl-warmup
#SBATCH --gres=gpu:2
srun true && echo srun-ok
S
)
	sn_sbatch_run -w n1 "$script" || sn_fail "sbatch failed"
	[ "$SN_JOB_EXIT" = "0:0" ] || sn_fail "job exit $SN_JOB_EXIT: $SN_JOB_OUT"
	lines=$(job_records "$SN_JOB_ID")
	[ "$(wc -l <<<"$lines")" -eq 2 ] || sn_fail "records: $lines"
	# The batch step warmed up; the srun reused its pass.
	[ "$(field reused <<<"$lines" | paste -sd' ')" = "False True" ] ||
		sn_fail "reused flags: $lines"
	[ "$(field step <<<"$lines" | paste -sd' ')" = "None 0" ] ||
		sn_fail "steps: $lines"
	[ "$(field step_kind <<<"$lines" | paste -sd' ')" = "batch normal" ] ||
		sn_fail "step kinds: $lines"
	[ "$(field verdict <<<"$lines" | sort -u)" = pass ] || sn_fail "$lines"
	# The metrics count the one real warmup, not the reuse.
	[ "$(awk '$1 == "spank_nccl_warmup_passes_total{mode=\"comm\",source=\"plugin\"}" { print $2 }' "$prom")" -eq $((${before:-0} + 1)) ] ||
		sn_fail "passes_total (was ${before:-0}): $(cat "$prom")"
	validate_records "batch and reused records" <<<"$lines"
}

@test "fleet: node_exporter serves n3's metrics; promtool accepts the scrape" {
	local text busbw
	failing_warmup_on n3 || return 1
	run --separate-stderr bandwidth_srun
	sn_assert_status 0
	prolog_bandwidth_pass n3 "$SLOW_GBPS" || return 1
	text=$(scrape) || sn_fail "no scrape from node_exporter"
	promtool check metrics <<<"$text" ||
		sn_fail "promtool rejects the scrape: $(promtool check metrics <<<"$text" 2>&1)"
	# No textfile error: node_exporter parsed our file.
	[ "$(sample node_textfile_scrape_error "$text")" = 0 ] ||
		sn_fail "textfile error: $(grep textfile "$SN_CLUSTER_DIR/log/node_exporter.log")"
	[ "$(sample 'spank_nccl_warmup_last_success{mode="bandwidth",source="plugin"}' "$text")" = 1 ] ||
		sn_fail "$text"
	# The failed comm warmup before it is not hidden by the pass.
	[ "$(sample 'spank_nccl_warmup_last_success{mode="comm",source="plugin"}' "$text")" = 0 ] ||
		sn_fail "$text"
	busbw=$(sample spank_nccl_warmup_last_busbw_bytes_per_second "$text")
	python3 -c "import sys; v = float(sys.argv[1]); assert 0.2e9 * $SLOW_GBPS < v <= 1.05e9 * $SLOW_GBPS, v" "$busbw" ||
		sn_fail "busbw $busbw"
	[ "$(sample 'spank_nccl_warmup_passes_total{mode="bandwidth",source="plugin"}' "$text")" -ge 1 ] ||
		sn_fail "$text"
	sample 'spank_nccl_warmup_failure_classes_total{class="duplicate_busid",fault="node"}' "$text" |
		grep -qx '[1-9][0-9]*' || sn_fail "failure counter: $text"
	sample 'spank_nccl_warmup_phase_duration_seconds_count{phase="comm_init"}' "$text" |
		grep -qx '[1-9][0-9]*' || sn_fail "phase histogram: $text"
	sample 'spank_nccl_warmup_duration_seconds_bucket{mode="bandwidth",le="+Inf"}' "$text" |
		grep -qx '[1-9][0-9]*' || sn_fail "duration histogram: $text"
	# _info is the node's: its GPU model; the jobs here load the fake
	# NCCL from their LD_LIBRARY_PATH, which is not the node's NCCL.
	grep -q '^spank_nccl_warmup_info{.*gpu_model="NVIDIA Fake GPU"' <<<"$text" ||
		sn_fail "$text"
	grep -q '^spank_nccl_warmup_info{.*nccl_version=""' <<<"$text" ||
		sn_fail "a job's NCCL version in _info: $text"
	# GPU series carry dcgm-exporter's pci_bus_id (NVML's spelling) and UUID.
	# (node_exporter sorts the labels.)
	grep '^spank_nccl_warmup_last_nccl_memory_bytes{' <<<"$text" |
		grep -E 'pci_bus_id="[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]"' |
		grep -q 'UUID="GPU-' || sn_fail "GPU labels: $text"
	# No job ids, users or steps in labels.
	! grep -E '^spank_nccl.*(job|user|step)=' <<<"$text" || sn_fail "$text"
}

@test "fleet: the report flags the slow node (table, JSON, SVG)" {
	local json svg
	failing_warmup_on n1 || return 1
	prolog_bandwidth_all || return 1
	run --separate-stderr "$(report)" "$(records)"
	sn_assert_status 0
	echo "$output" | sed 's/^/# /' >&3
	grep -E '^n3 .*OUTLIER:busbw' <<<"$output" >/dev/null ||
		sn_fail "n3 not flagged"
	# Only bandwidth: the warmup time of fake GPUs (~0.1 s) is the
	# machine's noise, and a loaded CI run flagged n2's once (OUTLIER:time).
	! grep -E '^n[12] .*OUTLIER:busbw' <<<"$output" || sn_fail "fast node flagged"
	grep -E '^n[123] .*duplicate_busid: ' <<<"$output" ||
		sn_fail "last failure not shown"
	json=$("$(report)" --json "$(records)") || sn_fail "--json failed"
	python3 -c '
import json, sys
r = json.load(sys.stdin)
nodes = {n["node"]: n for n in r["nodes"]}
assert nodes["n3"]["slow_busbw"] and nodes["n3"]["outlier"], nodes["n3"]
assert not nodes["n1"]["slow_busbw"] and not nodes["n2"]["slow_busbw"], nodes
assert nodes["n3"]["group"] == nodes["n1"]["group"] == "2xNVIDIA Fake GPU@64M", nodes["n1"]["group"]
assert nodes["n1"]["failures"] >= 1
assert nodes["n1"]["last_failure_class"] == "duplicate_busid"' <<<"$json" ||
		sn_fail "JSON: $json"
	svg="$SN_CLUSTER_DIR/tmp/fleet.svg"
	"$(report)" --svg "$(records)" >"$svg" || sn_fail "--svg failed"
	xmllint --noout "$svg" || sn_fail "invalid SVG"
	# The outlier bar is n3's, drawn in red.
	xmllint --xpath 'count(//*[local-name()="g"][contains(@class,"outlier")]/*[local-name()="title"][starts-with(., "n3 ")])' \
		"$svg" | grep -qx '[1-9][0-9]*' || sn_fail "SVG outlier: $(cat "$svg")"
	# A threshold looser than n3's gap flags nobody's bandwidth.
	"$(report)" --threshold=98 "$(records)" | grep -q OUTLIER:busbw &&
		sn_fail "flagged at 98 %"
	return 0
}

# Every "spank-nccl-report ... | jq ..." line of README.md, docs/*.md and
# man/*.[0-9] (code lines, and `inline code` in Markdown), as written.
doc_jq_lines() {
	(cd "$SN_SRC_DIR" && {
		grep -hoE '`spank-nccl-report [^`]*\| *jq [^`]*`' README.md docs/*.md |
			tr -d '`'
		grep -hE '^[[:space:]]*(\$ )?spank-nccl-report .*\| *jq ' README.md docs/*.md
		sed -n 's/\\-/-/g; s/\\e/\\/g; /^[[:space:]]*\(\$ \)\{0,1\}spank-nccl-report .*| *jq /p' man/*.[0-9] man/*.[0-9].in
	} | sed -E 's/^[[:space:]]*(\$ )?//' | sort -u)
}

@test "fleet: the docs' spank-nccl-report | jq lines run on real records" {
	local lines line head tail w words cmd out report=""
	command -v jq >/dev/null || sn_fail "jq not installed (bash tests/install-deps.sh)"
	# Records of this cluster: n3 slow (an outlier), a failure on n1.
	failing_warmup_on n1 || return 1
	prolog_bandwidth_all || return 1
	lines=$(doc_jq_lines)
	[ -n "$lines" ] || sn_fail "no 'spank-nccl-report ... | jq' line found in the docs"
	while IFS= read -r line; do
		# The record files the line names are this cluster's records;
		# its options and its jq filter stay as written.
		head=${line%%|*}
		tail=${line#*|}
		read -ra words <<<"$head"
		cmd=""
		for w in "${words[@]}"; do
			case $w in
			spank-nccl-report | -*) cmd+="$w " ;;
			*) [[ $cmd == *" $(records) "* ]] || cmd+="$(records) " ;;
			esac
		done
		cmd+="|$tail"
		out=$(PATH="$(dirname "$(report)"):$PATH" bash -o pipefail -c "$cmd" 2>&1) ||
			{ report+="$line: exit $?: $out"$'\n'; continue; }
		echo "# $line -> $(paste -sd' ' <<<"$out")" >&3
		[ -n "$out" ] || { report+="$line: no output"$'\n'; continue; }
		# jq printed JSON values, one per line.
		jq -e . >/dev/null 2>&1 <<<"$out" || report+="$line: not JSON: $out"$'\n'
		# The outlier filter names the one slow node.
		if [[ $line == *outlier* ]] && [ "$out" != '"n3"' ]; then
			report+="$line: expected \"n3\" (the slow node), got: $out"$'\n'
		fi
	done <<<"$lines"
	[ -z "$report" ] || sn_fail "doc jq lines that do not work:"$'\n'"$report"
}

@test "fleet: a job's forged busbw and GPU name neither make an outlier nor hide one (report)" {
	local before file out i
	before=$(record_count)
	prolog_bandwidth_all || return 1
	# The job's helper (the forging wrapper) reports a passing bandwidth
	# run: n1 at a hundredth of its busbw, n3 at ten times the fast
	# nodes' on a GPU of another name (another group), n2 at its own.
	python3 - "$SN_CLUSTER_DIR/tmp/prolog-bandwidth.json" "$(forged)" \
		"$FAST_GBPS" <<'PY' ||
import json, sys
r, fast = json.load(open(sys.argv[1])), float(sys.argv[3])
json.dump(dict(r, busbw_gbps=fast), open(sys.argv[2] + ".n2", "w"))
json.dump(dict(r, busbw_gbps=fast / 100), open(sys.argv[2] + ".n1", "w"))
for g in r["gpus"]:
    g["name"] = "NVIDIA Forged GPU"
json.dump(dict(r, busbw_gbps=fast * 10), open(sys.argv[2] + ".n3", "w"))
PY
		sn_fail "cannot write the forgeries"
	chmod 0644 "$(forged)".n[123]
	sn_fake_env ok
	for i in 1 2; do
		SN_FORGE=1 run --separate-stderr sn_srun -N3 --gres=gpu:2 \
			--nccl-warmup=bandwidth true
		sn_assert_status 0
	done
	rm -f "$(forged)".n[123]
	# This test's records: three Prolog passes, six forged job passes.
	file="$SN_CLUSTER_DIR/tmp/forged-busbw.jsonl"
	tail -n +$((before + 1)) "$(records)" >"$file"
	[ "$(wc -l <"$file")" -eq 9 ] || sn_fail "records: $(cat "$file")"
	grep -q '"node":"n3".*NVIDIA Forged GPU' "$file" ||
		sn_fail "the forgery is not in the records: $(cat "$file")"
	out=$("$(report)" "$file") || sn_fail "report failed"
	echo "$out" | sed 's/^/# /' >&3
	grep -E '^n3 +2xNVIDIA Fake GPU@64M .*OUTLIER:busbw' <<<"$out" >/dev/null ||
		sn_fail "the forgery hid n3"
	# (busbw only: the fake GPUs' warmup time is the machine's noise)
	! grep -E '^n[12] .*OUTLIER:busbw' <<<"$out" ||
		sn_fail "the forgery made an outlier"
}

@test "fleet: forged helper output cannot add records or metric lines" {
	local job lines text before
	cat >"$(forged)" <<'J'
{"version":1,"status":"ok","exit_code":0,"mode":"comm","message":"","nccl_version":"2.28.9\"}\n{\"a\":1","driver_version":"1\"} 1\nspank_nccl_warmup_passes_total 999999","transport":"\"}\n{\"record\":\"spank-nccl-warmup\",\"node\":\"n9\"","gpus":[{"index":0,"busid":"0\nevil 1","uuid":"GPU-x","name":"H\"}\nevil{a=\"b\"} 1"}],"timings_ms":{"total":1.0},"busbw_gbps":null}
J
	chmod 0644 "$(forged)"
	before=$(record_count)
	sn_fake_env ok
	SN_FORGE=1 run --separate-stderr sn_srun -N3 --gres=gpu:1 \
		--nccl-warmup=comm printenv SLURM_JOB_ID
	sn_assert_status 0
	job=$(head -n1 <<<"$output")
	[ $(($(record_count) - before)) -eq 3 ] ||
		sn_fail "$(($(record_count) - before)) new lines, expected 3"
	lines=$(job_records "$job")
	[ "$(wc -l <<<"$lines")" -eq 3 ] || sn_fail "records: $lines"
	# The injected text is inside string values, escaped.
	[ "$(field nccl_version <<<"$lines" | head -n1 | head -c 8)" = '2.28.9"}' ] ||
		sn_fail "$lines"
	! grep -q '"node":"n9"' "$(records)" || sn_fail "a record was injected"
	field transport <<<"$lines" | grep -qF '"node":"n9"' ||
		sn_fail "the forged text is not kept as a value: $lines"
	"$(report)" "$(records)" >/dev/null 2>"$SN_CLUSTER_DIR/tmp/report.err" ||
		sn_fail "report failed"
	! grep -q skipped "$SN_CLUSTER_DIR/tmp/report.err" ||
		sn_fail "unreadable record lines: $(cat "$SN_CLUSTER_DIR/tmp/report.err")"
	text=$(scrape) || sn_fail "no scrape"
	promtool check metrics <<<"$text" || sn_fail "promtool: $text"
	[ "$(sample node_textfile_scrape_error "$text")" = 0 ] || sn_fail "$text"
	! grep -qE '^(evil|spank_nccl_warmup_passes_total 999999)' <<<"$text" ||
		sn_fail "a metric line was injected: $text"
	[ "$(grep -c '^spank_nccl_warmup_last_success{mode="comm",source="plugin"} ' <<<"$text")" -eq 1 ] ||
		sn_fail "$text"
	[ "$(grep -c '^spank_nccl_warmup_info' <<<"$text")" -eq 1 ] || sn_fail "$text"
	validate_records "records of forged helper output" <<<"$lines"
}

@test "fleet: a full, missing or read-only sink never fails the step" {
	local ro full
	ro="$(fleet_dir)/ro"
	full="$(fleet_dir)/full"
	mkdir -p "$ro" "$full"
	# New mounts, not remounts: a remount's flags do not propagate into
	# the nodes' mount namespaces (cluster.sh).
	mount -t tmpfs -o ro,size=64k sn-ro "$ro" ||
		sn_fail "cannot make a read-only mount"
	# A full file system: a one-page tmpfs, its page taken.
	mount -t tmpfs -o size=4k sn-full "$full" ||
		sn_fail "cannot make a small mount"
	dd if=/dev/zero of="$full/fill" bs=4096 count=1 2>/dev/null || true
	sn_plugstack_set "warmup_helper=$(wrapper)" \
		"record_file=$full/%n.jsonl" "prom_dir=$ro" "record_syslog=yes"
	sn_fake_env ok
	run --separate-stderr sn_srun -N3 --gres=gpu:1 --nccl-warmup=comm \
		printenv SLURM_JOB_ID
	sn_assert_status 0
	sn_assert_no_msgs
	grep -q "warmup record not written: cannot write record_file $full/n1.jsonl: No space left" \
		"$(sn_slurmd_log n1)" || sn_fail "full disk not logged"
	grep -q "warmup metrics not written: .*$ro.*Read-only file system" \
		"$(sn_slurmd_log n2)" || sn_fail "read-only not logged"
	# A device is no sink: refused, never opened for writing.
	sn_plugstack_set "warmup_helper=$(wrapper)" "record_file=/dev/full" \
		"prom_dir=/nonexistent"
	run --separate-stderr sn_srun -N3 --gres=gpu:1 --nccl-warmup=comm true
	sn_assert_status 0
	sn_assert_no_msgs
	grep -q 'warmup record not written: record_file /dev/full: is a character device, not a regular file' \
		"$(sn_slurmd_log n1)" || sn_fail "device not refused"
	sn_plugstack_set "warmup_helper=$(wrapper)" \
		"record_file=/nonexistent/spank-nccl/%n.jsonl" "prom_dir=/nonexistent"
	run --separate-stderr sn_srun -N3 --gres=gpu:1 --nccl-warmup=comm true
	sn_assert_status 0
	sn_assert_no_msgs
	grep -q 'cannot open record_file /nonexistent/spank-nccl/n3.jsonl: No such file' \
		"$(sn_slurmd_log n3)" || sn_fail "missing directory not logged"
	umount "$ro" "$full"
}

@test "fleet: a bad sink argument is refused with its name" {
	sn_plugstack_set "warmup_helper=$(wrapper)" "record_file=/x/%j.jsonl"
	run --separate-stderr sn_srun -N1 true
	sn_assert_failed
	sn_assert_msg 'record_file=/x/%j.jsonl.*%n'
	sn_plugstack_set "warmup_helper=$(wrapper)" "record_syslog=maybe"
	run --separate-stderr sn_srun -N1 true
	sn_assert_failed
	sn_assert_msg 'record_syslog=maybe.*expected yes'
}

@test "fleet: the Prolog path records pass and fail through nccl-warmup-record" {
	local conf prolog lines before
	prolog="$SN_BUILD_DIR/scripts/nccl-warmup-prolog"
	sn_require_file "$prolog" "nccl-warmup-prolog not built" || return 1
	conf="$SN_CLUSTER_DIR/etc/fleet-prolog.conf"
	sn_fake_env ok
	{
		echo "HELPER=$(sn_helper_path)"
		echo "RECORDER=$(recorder)"
		echo "MODE=comm"
		echo "DRAIN=no"
		echo "RECORD_FILE=$(records)"
		echo "PROM_DIR=$(fleet_dir)/prom/%n"
		echo "export LD_LIBRARY_PATH=$(sn_fake_lib_dir)"
	} >"$conf"
	chmod 0644 "$conf"
	before=$(record_count)
	# As slurmd runs it: root, a minimal environment.
	env -i SLURM_JOB_ID=4242 SLURMD_NODENAME=n1 SLURM_JOB_UID=0 \
		SLURM_JOB_USER=root CUDA_VISIBLE_DEVICES=0,1 \
		NCCL_WARMUP_PROLOG_CONF="$conf" sh "$prolog" ||
		sn_fail "passing Prolog failed"
	env -i SLURM_JOB_ID=4243 SLURMD_NODENAME=n1 CUDA_VISIBLE_DEVICES=0,1 \
		FAKE_CUDA_BUSIDS=0000:01:00.0,0000:01:00.0 \
		NCCL_WARMUP_PROLOG_CONF="$conf" sh "$prolog" &&
		sn_fail "failing Prolog passed"
	[ $(($(record_count) - before)) -eq 2 ] || sn_fail "not 2 records"
	lines=$(tail -n2 "$(records)")
	[ "$(field source <<<"$lines" | sort -u)" = prolog ] || sn_fail "$lines"
	[ "$(field verdict <<<"$lines" | paste -sd' ')" = "pass fail" ] ||
		sn_fail "$lines"
	[ "$(field class <<<"$lines" | paste -sd' ')" = "ok duplicate_busid" ] ||
		sn_fail "$lines"
	[ "$(field job <<<"$lines" | paste -sd' ')" = "4242 4243" ] ||
		sn_fail "$lines"
	[ "$(field gpus.0.busid <<<"$lines" | head -n1)" = 0000:01:00.0 ] ||
		sn_fail "$lines"
	promtool check metrics <"$(prom_dir n1)/spank_nccl.prom" ||
		sn_fail "Prolog's .prom file"
	validate_records "Prolog records" <<<"$lines"
}

@test "fleet: check and fabric records (a pass, a blamed peer) match the JSON Schema, as does the whole file" {
	local job lines
	sn_fake_env ok
	run --separate-stderr sn_srun -N1 -w n1 --gres=gpu:2 \
		--nccl-warmup=check printenv SLURM_JOB_ID
	sn_assert_status 0
	lines=$(job_records "$(head -n1 <<<"$output")")
	[ "$(field mode <<<"$lines")" = check ] || sn_fail "$lines"
	validate_records "a check record" <<<"$lines"
	run --separate-stderr sn_srun -N3 --gres=gpu:2 --nccl-warmup=fabric \
		printenv SLURM_JOB_ID
	sn_assert_status 0
	job=$(head -n1 <<<"$output")
	lines=$(job_records "$job")
	[ "$(field mode <<<"$lines" | sort | uniq -c | awk '{print $1, $2}')" = "3 fabric" ] ||
		sn_fail "fabric records: $lines"
	[ "$(field transport <<<"$lines" | sort -u)" = NET/Socket ] ||
		sn_fail "transport: $lines"
	# The fabric object (schema 3): the step's nodes, each node's index
	# and ranks, the coordinator on the first node.
	[ "$(field fabric.nodes <<<"$lines" | sort -u)" = 3 ] || sn_fail "$lines"
	[ "$(field fabric.node_index <<<"$lines" | sort | paste -sd' ')" = "0 1 2" ] ||
		sn_fail "$lines"
	[ "$(field fabric.ranks <<<"$lines" | sort -u)" = 6 ] || sn_fail "$lines"
	[ "$(field fabric.coordinator <<<"$lines" | sort -u | wc -l)" = 1 ] ||
		sn_fail "$lines"
	validate_records "fabric records" <<<"$lines"
	FAKE_NCCL_INIT_FAIL_HOSTS=n3 run --separate-stderr sn_srun -N3 \
		--gres=gpu:2 --nccl-warmup=fabric true
	sn_assert_failed
	# This step's records are the file's last three lines.
	lines=$(tail -n3 "$(records)")
	python3 -c '
import json, sys
r = {x["node"]: x for x in map(json.loads, sys.stdin)}
assert sorted(r) == ["n1", "n2", "n3"], r
for n in ("n1", "n2"):
    assert r[n]["class"] == "peer_failed" and r[n]["blame_node"] == "n3", r[n]
assert r["n3"]["class"] == "nccl_error", r["n3"]' <<<"$lines" ||
		sn_fail "fabric failure records: $lines"
	validate_records "fabric failure records" <<<"$lines"
	validate_records "every record of $(records)" <"$(records)"
}

@test "fleet: the admin guide's PromQL queries parse (promtool check rules)" {
	local rules="$SN_CLUSTER_DIR/tmp/fleet-rules.yml"
	python3 - "$SN_SRC_DIR/docs/admin-guide.md" >"$rules" <<'P' ||
import sys
text = open(sys.argv[1]).read().split("```promql\n")[1].split("```")[0]
exprs, cur = [], []
for line in text.splitlines():
    if line.startswith("#"):
        if cur:
            exprs.append(" ".join(cur))
        cur = []
    else:
        cur.append(line.strip())
if cur:
    exprs.append(" ".join(cur))
assert len(exprs) >= 5, exprs
print("groups:\n- name: admin-guide\n  rules:")
for i, e in enumerate(exprs):
    print("  - record: spank_nccl:doc_query_%d\n    expr: '%s'" % (i, e))
P
		sn_fail "no promql block in docs/admin-guide.md"
	run promtool check rules "$rules"
	sn_assert_status 0
}

@test "fleet: record_syslog sends the record to syslog as ident spank-nccl, @cee: JSON in parts under 1 KiB" {
	local got="$SN_CLUSTER_DIR/tmp/syslog.txt" file="$SN_CLUSTER_DIR/tmp/syslog.jsonl"
	local res="$SN_CLUSTER_DIR/tmp/syslog-result.json"
	rm -f "$got" "$file"
	# A real result with 4 GPUs: more than one message's worth.
	sn_fake_env ok
	CUDA_VISIBLE_DEVICES=0,1,2,3 "$(sn_helper_path)" --node n2 --mode comm \
		--json >"$res" 2>/dev/null || sn_fail "helper: $(cat "$res")"
	# A private mount namespace (nothing propagates back to the host)
	# with its own /dev (tmpfs), where a datagram socket at /dev/log
	# stands in for the syslog daemon; it keeps every message it gets.
	unshare -m --propagation private sh -c 'res=$1; shift; mount -t tmpfs tmpfs /dev && exec python3 -c "
import socket, subprocess, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(\"/dev/log\")
s.settimeout(2)
rc = subprocess.run(sys.argv[1:], stdin=open(\"$res\")).returncode
with open(\"$0\", \"wb\") as f:
    try:
        while True:
            f.write(s.recv(65536) + b\"\\n\")
    except socket.timeout:
        pass
sys.exit(rc)
" "$@"' "$got" "$res" "$(recorder)" --node n2 --mode comm --exit-status 0 \
		--job 77 --record-file "$file" --syslog ||
		sn_fail "recorder failed"
	# Every message: daemon.info (<30>), ident spank-nccl, @cee: and one
	# JSON object under 1 KiB; together they are the file's record.
	python3 - "$got" "$file" <<'P' || sn_fail "syslog: $(cat "$got")"
import json, re, sys
msgs = [l for l in open(sys.argv[1], "rb").read().split(b"\n") if l]
rec = json.loads(open(sys.argv[2]).read())
parts, gpus = [], []
for m in msgs:
    assert len(m) <= 1024, len(m)
    h = re.match(rb"<30>spank-nccl\[[0-9]+\]: @cee:", m)
    assert h, m[:60]
    p = json.loads(m[h.end():])
    parts.append(p["part"])
    assert p["parts"] == len(msgs) and p["node"] == "n2", p
    assert p["rid"] == "n2-%.3f" % rec["ts"], (p["rid"], rec["ts"])
    gpus += p.get("gpus", [])
    for k, v in p.items():
        if k not in ("rid", "part", "parts"):
            assert rec[k] == v, (k, v, rec[k])
assert parts == list(range(1, len(msgs) + 1)), parts
assert len(msgs) >= 3 and gpus == rec["gpus"] and len(gpus) == 4, (len(msgs), gpus)
print(len(msgs), "parts")
P
	validate_records "a record with 4 GPUs" <"$file"
}

# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# What the fleet bats files (fleet.bats, fleet_alerts.bats) share: the
# sinks in the test cluster, node_exporter over n3's textfile, the wrapper
# that makes n3 slow, and the steps and checks both use.  Each file's
# setup_file, teardown_file and setup call fleet_setup_file,
# fleet_teardown_file and fleet_setup.

# Ten times apart: the fake NCCL's measured busbw only drops under CPU load
# (simulated delays run late, never early), and the check must hold on a
# busy 2-core CI machine.  Low enough that the timed all-reduces last long
# next to a scheduler's hiccup: at 100 GB/s the five timed 64 MiB
# all-reduces of the fast nodes took 3.4 ms in all, and one late wakeup of
# ~15 ms on the CI machine (Slurm 22.05, fleet.bats test 1) put a fast node
# under twice the slow one's busbw.  At 10 GB/s they take 34 ms, and it
# takes ~130 ms of lateness to do that.
FAST_GBPS=10
SLOW_GBPS=1
DUPLICATE=0000:01:00.0,0000:01:00.0,0000:03:00.0,0000:04:00.0

fleet_dir() { echo "$SN_CLUSTER_DIR/fleet"; }
records() { echo "$(fleet_dir)/records.jsonl"; }
prom_dir() { echo "$(fleet_dir)/prom/$1"; }
wrapper() { echo "$SN_CLUSTER_DIR/libexec/fleet-helper"; }
forged() { echo "$SN_CLUSTER_DIR/etc/forged.json"; }
report() { echo "$SN_BUILD_DIR/src/report/spank-nccl-report"; }
recorder() { echo "$SN_BUILD_DIR/src/report/nccl-warmup-record"; }
exporter_port() { echo $((30000 + $(sn__dir_hash) % 9000)); }
scrape() { curl -sf --max-time 5 "http://127.0.0.1:$(exporter_port)/metrics"; }

fleet_setup_file() {
	local d
	sn_file_setup || return 1
	d=$(fleet_dir)
	rm -rf "$d"
	mkdir -p "$d/prom/n1" "$d/prom/n2" "$d/prom/n3"
	# Only root can write here: the record is slurmstepd's, never the
	# job user's (nor the helper's, which runs as the job user).
	chmod 0700 "$d"
	cat >"$(wrapper)" <<W
#!/bin/sh
if [ "\${SN_FORGE:-}" = 1 ]; then
	# The forged result where the plugin reads one: --result-fd N.
	fd=1 prev=
	for a in "\$@"; do
		[ "\$prev" = --result-fd ] && fd=\$a
		prev=\$a
	done
	# This node's forgery if there is one (forged.json.n1).
	f='$(forged)'
	[ -f "\$f.\$(hostname)" ] && f=\$f.\$(hostname)
	eval "cat '\$f' >&\$fd"
	exit 0
fi
case \$(hostname) in
n3) FAKE_NCCL_BUSBW_GBPS=$SLOW_GBPS ;;
*) FAKE_NCCL_BUSBW_GBPS=$FAST_GBPS ;;
esac
export FAKE_NCCL_BUSBW_GBPS
exec '$(sn_helper_path)' "\$@"
W
	chmod 0755 "$(wrapper)"
	# node_exporter with only the textfile collector, serving n3's
	# directory on loopback.
	prometheus-node-exporter --collector.disable-defaults \
		--collector.textfile \
		--collector.textfile.directory="$(prom_dir n3)" \
		--web.listen-address="127.0.0.1:$(exporter_port)" \
		>"$SN_CLUSTER_DIR/log/node_exporter.log" 2>&1 &
	echo $! >"$SN_CLUSTER_DIR/run/node_exporter.pid"
	sn__wait_for 100 scrape
}

fleet_teardown_file() {
	local pid m
	for pid in node_exporter listener prometheus; do
		pid=$(cat "$SN_CLUSTER_DIR/run/$pid.pid" 2>/dev/null)
		[ -z "$pid" ] || kill "$pid" 2>/dev/null
	done
	for m in "$(fleet_dir)/ro" "$(fleet_dir)/full"; do
		if mountpoint -q "$m" 2>/dev/null; then
			umount "$m"
		fi
	done
	sn_file_teardown
}

fleet_setup() {
	sn_test_setup
	sn_require_warmup
	sn_require_file "$(report)" "spank-nccl-report not built" || return 1
	fleet_plugstack
}

# plugstack.conf with this file's sinks, and any more arguments.
fleet_plugstack() {
	sn_plugstack_set "warmup_helper=$(wrapper)" \
		"record_file=$(records)" "prom_dir=$(fleet_dir)/prom/%n" "$@"
}

# Lines in the record file (0 before the first record).
record_count() {
	if [ -f "$(records)" ]; then
		wc -l <"$(records)"
	else
		echo 0
	fi
}

# Record lines of job $1.
job_records() {
	grep -F "\"job\":$1," "$(records)" || true
}

# Field $2 of every JSON line on stdin, one per line (python3 parses: the
# lines must be valid JSON).
field() {
	python3 -c '
import json, sys
for line in sys.stdin:
    v = json.loads(line)
    for k in sys.argv[1].split("."):
        v = v[int(k)] if isinstance(v, list) else v[k]
    print(v)' "$1"
}

# The record lines on stdin match docs/record.schema.json, checked by
# python3-jsonschema (helpers/validate-record.py); $1 names them.  Without
# the validator the test is skipped (CI=true: the script fails instead).
validate_records() {
	local out rc
	out=$(python3 "$SN_SRC_DIR/tests/integration/helpers/validate-record.py" \
		"$SN_SRC_DIR/docs/record.schema.json" - 2>&1)
	rc=$?
	[ "$rc" -ne 77 ] || skip "$out"
	[ "$rc" -eq 0 ] ||
		sn_fail "$1 do not match docs/record.schema.json: $out"
	echo "# $1: $out" >&3
}

# Value of sample $1 (a full series name) in Prometheus text $2.
sample() {
	awk -v s="$1" '$1 == s { print $2 }' <<<"$2"
}

# A warmup on node $1 that fails (duplicate bus IDs): a failure record.
failing_warmup_on() {
	sn_fake_env ok
	sn_node_fake "FAKE_CUDA_BUSIDS=$DUPLICATE"
	FAKE_CUDA_BUSIDS=$DUPLICATE run --separate-stderr sn_srun -N1 -w "$1" \
		--gres=gpu:2 --nccl-warmup=comm true
	sn_assert_failed
}

# A Prolog bandwidth pass on node $1 at $2 GB/s (the fake NCCL), recorded
# by nccl-warmup-record: the node's busbw gauge comes only from runs as
# root (the Prolog's, the plugin's confirmation), never a job's helper.
prolog_bandwidth_pass() {
	local out="$SN_CLUSTER_DIR/tmp/prolog-bandwidth.json"
	sn_fake_env ok
	# The Prolog of a job of two GPUs: the steps' GPUs 0 and 1.
	CUDA_VISIBLE_DEVICES=0,1 FAKE_NCCL_BUSBW_GBPS=$2 \
		"$(sn_helper_path)" --node "$1" \
		--mode bandwidth --json >"$out" 2>/dev/null ||
		sn_fail "the bandwidth warmup failed: $(cat "$out")" || return 1
	"$(recorder)" --node "$1" --mode bandwidth --exit-status 0 \
		--source prolog --record-file "$(records)" \
		--prom-dir "$(fleet_dir)/prom/%n" <"$out" ||
		sn_fail "nccl-warmup-record failed"
}

# Prolog bandwidth passes on every node: n3 slow, the others fast (the
# report's outliers use only root's figures).
prolog_bandwidth_all() {
	prolog_bandwidth_pass n1 "$FAST_GBPS" &&
		prolog_bandwidth_pass n2 "$FAST_GBPS" &&
		prolog_bandwidth_pass n3 "$SLOW_GBPS"
}

bandwidth_srun() {
	sn_fake_env ok
	sn_srun -N3 --gres=gpu:2 --nccl-warmup=bandwidth "$@" \
		printenv SLURM_JOB_ID
}

# The record of the last warmup on node $1.
last_record_on() {
	grep -F "\"node\":\"$1\"" "$(records)" | tail -n1
}

# A file that is not a library, as a user's nccl= typo finds one ("invalid
# ELF header", as measured on an H200); its path on stdout.
bad_nccl() {
	local bad="$SN_CLUSTER_DIR/tmp/badnccl"
	mkdir -p "$bad"
	echo "not a library" >"$bad/libnccl.so.2"
	chmod 0755 "$bad"
	chmod 0644 "$bad/libnccl.so.2"
	echo "$bad/libnccl.so.2"
}

# A one-node step on n2 with warmup option $1 that must fail; its record
# in the caller's $rec.
failing_step_on_n2() {
	run --separate-stderr sn_srun -N1 -w n2 --gres=gpu:2 \
		"--nccl-warmup=$1" true
	sn_assert_failed
	rec=$(last_record_on n2)
}

# A Prolog check pass on node $1: nccl-warmup run as the Prolog runs it
# (the fake GPUs), its result recorded by nccl-warmup-record.
prolog_check_pass() {
	local out="$SN_CLUSTER_DIR/tmp/prolog-check.json"
	sn_fake_env ok
	"$(sn_helper_path)" --node "$1" --mode check --json >"$out" 2>/dev/null ||
		sn_fail "the check warmup failed: $(cat "$out")" || return 1
	"$(recorder)" --node "$1" --mode check --exit-status 0 --source prolog \
		--record-file "$(records)" --prom-dir "$(fleet_dir)/prom/%n" <"$out" ||
		sn_fail "nccl-warmup-record failed"
}

prometheus_port() { echo $((39000 + $(sn__dir_hash) % 9000)); }
# Whether Prometheus answers query $1 with a sample.
prom_has() {
	curl -sf --max-time 5 -G "http://127.0.0.1:$(prometheus_port)/api/v1/query" \
		--data-urlencode "query=$1" | grep -q '"value"'
}
prom_up() {
	curl -sf --max-time 5 "http://127.0.0.1:$(prometheus_port)/api/v1/query?query=count_over_time(spank_nccl_warmup_last_gpus%5B1m%5D)%3E%3D3" |
		grep -q '"value"'
}

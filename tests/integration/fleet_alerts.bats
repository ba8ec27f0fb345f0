#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
#
# The alert rules and the Grafana dashboard the packages ship
# (share/spank-nccl/), tested against data on the three-node fleet
# cluster (helpers/fleet.bash): promtool test rules over series built from
# the records these steps write (a node failing its GPU twice alerts; a
# user's bad nccl= and NCCL_ALGO=Tree do not; a Prolog pass does not hide
# a failed plugin warmup; a squatted fabric port is the environment's),
# and every panel's query evaluated by a real Prometheus scraping
# node_exporter over n3's textfile, each returning the series it should.

SN_NODES=3
load common
load helpers/fabric
load helpers/fleet

setup_file() { fleet_setup_file; }
teardown_file() { fleet_teardown_file; }
setup() { fleet_setup; }

@test "fleet: the shipped alert rules fire on a node's own repeated faults only (promtool test rules over these records)" {
	local rules="$SN_SRC_DIR/share/spank-nccl/spank-nccl-alerts.yml"
	local t="$SN_CLUSTER_DIR/tmp/alerts-test.yml" mine="$SN_CLUSTER_DIR/tmp/alert-records.jsonl"
	local first lo=31110 hi=31113 minutes rec
	first=$(record_count)
	# n1: a GPU fault, twice (the node's).
	failing_warmup_on n1 || return 1
	failing_warmup_on n1 || return 1
	# n2: a user's bad nccl=, twice (the job's), and its NCCL_ALGO.
	sn_fake_env ok
	failing_step_on_n2 "comm,nccl=$(bad_nccl)"
	failing_step_on_n2 "comm,nccl=$(bad_nccl)"
	NCCL_ALGO=Tree failing_step_on_n2 comm
	# n3: one plugin comm failure (the node's), then a Prolog check pass.
	sn_node_fake FAKE_CUDA_FAIL=context
	FAKE_CUDA_FAIL=context run --separate-stderr sn_srun -N1 -w n3 \
		--gres=gpu:2 --nccl-warmup=comm true
	sn_assert_failed
	prolog_check_pass n3 || return 1
	# All three: a fabric warmup whose ports on n1 are all taken.
	fleet_plugstack "fabric_ports=$lo-$hi" warmup_timeout=8
	occupy_on_n1 $(seq "$lo" "$hi")
	echo "$LISTENER_PID" >"$SN_CLUSTER_DIR/run/listener.pid"
	run --separate-stderr sn_srun -N3 --gres=gpu:2 --nccl-warmup=fabric true
	kill "$LISTENER_PID"
	sn_assert_failed
	tail -n +"$((first + 1))" "$(records)" >"$mine"
	# The fabric step's records: the ports' and the peers' (environment).
	rec=$(grep '"mode":"fabric"' "$mine")
	[ "$(wc -l <<<"$rec")" -eq 3 ] || sn_fail "fabric records: $rec"
	[ "$(field fault <<<"$rec" | sort -u)" = environment ] ||
		sn_fail "a squatted port blamed a node: $rec"
	grep -q '"class":"fabric_setup"' <<<"$rec" || sn_fail "$rec"
	validate_records "alert test records" <"$mine"

	python3 "$SN_SRC_DIR/tests/integration/helpers/records-to-series.py" \
		"$mine" 15 >"$t.series" || sn_fail "records-to-series failed"
	minutes=$(sed -n 's/^# minutes: //p' "$t.series")
	{
		echo "rule_files: ['$rules']"
		echo "evaluation_interval: 1m"
		echo "tests:"
		echo "  - interval: 1m"
		sed -e '/^#/d' -e 's/^/    /' "$t.series"
		cat <<Y
    alert_rule_test:
      # n1 failed twice by its own fault; n2's were the job's (bad nccl=,
      # NCCL_ALGO) and, like n3's, the squatted port's: no alert.
      - eval_time: $((minutes + 6))m
        alertname: SpankNcclNodeFaults
        exp_alerts:
          - exp_labels: { instance: n1, severity: warning }
            exp_annotations:
              summary: "NCCL warmups failed twice or more in an hour by the node's own fault on n1"
              description: "GPU, driver, network, or NCCL on the node's defaults: read the node's records (spank-nccl-report, the record's message and class); drain the node if it goes on."
      # n3's Prolog check pass does not hide its failed plugin comm.
      - eval_time: $((minutes + 6))m
        alertname: SpankNcclPluginWarmupFailing
        exp_alerts:
          - exp_labels: { instance: n1, mode: comm, source: plugin, severity: info }
            exp_annotations:
              summary: "The last comm warmup (plugin) on n1 failed by the node's fault"
              description: "A pass of another mode or source does not clear it; read the node's records."
          - exp_labels: { instance: n3, mode: comm, source: plugin, severity: info }
            exp_annotations:
              summary: "The last comm warmup (plugin) on n3 failed by the node's fault"
              description: "A pass of another mode or source does not clear it; read the node's records."
    promql_expr_test:
      - expr: spank_nccl_warmup_last_success{instance="n3"}
        eval_time: $((minutes + 6))m
        exp_samples:
          - labels: 'spank_nccl_warmup_last_success{instance="n3",mode="check",source="prolog"}'
            value: 1
          - labels: 'spank_nccl_warmup_last_success{instance="n3",mode="comm",source="plugin"}'
            value: 0
          - labels: 'spank_nccl_warmup_last_success{instance="n3",mode="fabric",source="plugin"}'
            value: 0
Y
	} >"$t"
	run promtool test rules "$t"
	[ "$status" -eq 0 ] || sn_fail "promtool test rules: $output"
	echo "# $(grep -c . "$mine") records, $minutes minutes: $(tail -n1 <<<"$output")" >&3
}

@test "fleet: every query of the shipped dashboard returns its series from a real Prometheus scraping node_exporter" {
	local dash="$SN_SRC_DIR/share/spank-nccl/spank-nccl-dashboard.json"
	local d="$SN_CLUSTER_DIR/tmp/prometheus" out
	# n3's textfile exists (a pass) before Prometheus scrapes it; its
	# busbw gauge from a Prolog pass (root's runs only).
	run --separate-stderr bandwidth_srun
	sn_assert_status 0
	prolog_bandwidth_pass n3 "$SLOW_GBPS" || return 1
	rm -rf "$d"
	mkdir -p "$d/data"
	cat >"$d/prometheus.yml" <<Y
global: { scrape_interval: 1s, evaluation_interval: 1s }
scrape_configs:
  - job_name: node
    static_configs: [ { targets: ['127.0.0.1:$(exporter_port)'], labels: { instance: n3 } } ]
Y
	prometheus --config.file="$d/prometheus.yml" --storage.tsdb.path="$d/data" \
		--web.listen-address="127.0.0.1:$(prometheus_port)" \
		>"$SN_CLUSTER_DIR/log/prometheus.log" 2>&1 &
	echo $! >"$SN_CLUSTER_DIR/run/prometheus.pid"
	# Three scrapes at least: rate() and increase() need two.
	sn__wait_for 300 prom_up ||
		sn_fail "Prometheus has no scrapes: $(tail -n5 "$SN_CLUSTER_DIR/log/prometheus.log")"
	# While it scrapes: a node fault, a job's fault, passes.
	failing_warmup_on n3 || return 1
	sn_fake_env ok
	run --separate-stderr sn_srun -N1 -w n3 --gres=gpu:2 \
		"--nccl-warmup=comm,nccl=$(bad_nccl)" true
	sn_assert_failed
	run --separate-stderr bandwidth_srun
	sn_assert_status 0
	sn__wait_for 300 prom_has 'sum(increase(spank_nccl_warmup_failures_total{fault="job"}[5m]))>0' ||
		sn_fail "Prometheus never saw the job's failure"
	run python3 "$SN_SRC_DIR/tests/integration/helpers/dashboard-queries.py" \
		"$dash" "http://127.0.0.1:$(prometheus_port)" "$d/results.json"
	kill "$(cat "$SN_CLUSTER_DIR/run/prometheus.pid")"
	[ "$status" -eq 0 ] || sn_fail "dashboard queries: $output"
	echo "$output" | sed 's/^/# /' >&3
	# The series it should: n3's own fault and the job's, apart; the GPU
	# series with dcgm-exporter's labels; the node's model in _info.
	out=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
f = {s["metric"]["fault"]: float(s["value"][1]) for s in r["Warmup failures by whose fault (last hour)"]}
print("faults", sorted(f), "node>0" if f["node"] > 0 else "node=0", "job>0" if f["job"] > 0 else "job=0")
print("failing nodes", r["Nodes failing by their own fault (last hour)"][0]["value"][1])
m = r["NCCL memory per GPU (joins dcgm-exporter on UUID, pci_bus_id)"]
print("gpu", all("UUID" in s["metric"] and "pci_bus_id" in s["metric"] for s in m), len(m))
print("model", sorted({s["metric"]["gpu_model"] for s in r["Driver, GPU model and the node'"'"'s NCCL"]}))
' "$d/results.json")
	grep -qx "faults \['environment', 'job', 'node'\] node>0 job>0" <<<"$out" || sn_fail "$out"
	grep -qx "failing nodes 1" <<<"$out" || sn_fail "$out"
	grep -qx "gpu True 2" <<<"$out" || sn_fail "$out"
	grep -qx "model \['NVIDIA Fake GPU'\]" <<<"$out" || sn_fail "$out"
	# The picture in docs/ (docs/results/dashboard.png) is drawn from
	# these results where matplotlib is installed.
	if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
		/usr/bin/python3 "$SN_SRC_DIR/tests/integration/helpers/render-dashboard.py" \
			"$dash" "$d/results.json" "$SN_CLUSTER_DIR/tmp/dashboard.png" ||
			sn_fail "render-dashboard.py failed"
		echo "# panels drawn: $SN_CLUSTER_DIR/tmp/dashboard.png" >&3
	fi
}

# Issue 30: a non-root user sends syslog records in the plugin's own
# format (ident spank-nccl, @cee: JSON, fault node) to /dev/log (a socket
# the test listens on, in a private /dev); the kernel's credentials tell
# them from the recorder's as root, and they change nothing the shipped
# alert rules read: n1's .prom and the record file stay byte for byte,
# and promtool finds no alert over n1's metrics from before to after.
@test "fleet: syslog records forged by a non-root user change nothing the alert rules read" {
	local d="$SN_CLUSTER_DIR/tmp/forged-syslog" prom records_before forged t
	local rules="$SN_SRC_DIR/share/spank-nccl/spank-nccl-alerts.yml"
	rm -rf "$d"
	mkdir -p "$d"
	prom="$(prom_dir n1)/spank_nccl.prom"
	sn_fake_env ok
	run --separate-stderr sn_srun -N1 -w n1 --gres=gpu:2 --nccl-warmup=comm true
	sn_assert_status 0
	cp "$prom" "$d/before.prom"
	records_before=$(record_count)
	CUDA_VISIBLE_DEVICES=0,1 "$(sn_helper_path)" --node n1 --mode comm \
		--json >"$d/result.json" 2>/dev/null || sn_fail "helper: $(cat "$d/result.json")"
	forged='@cee:{"rid":"n1-1795389000.250","part":1,"parts":1,"record":"spank-nccl-warmup","node":"n1","pass":false,"class":"duplicate_busid","fault":"node","exit_code":3}'
	cat >"$d/listen.py" <<'P'
import json, os, socket, struct, subprocess, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
os.chmod("/dev/log", 0o666)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
rc = 0
for cmd in json.load(open(sys.argv[2])):
    rc |= subprocess.run(cmd).returncode
# A datagram is queued when sendto() returns: read what is there.
s.setblocking(False)
with open(sys.argv[1], "w") as f:
    try:
        while True:
            m, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(12))
            uid = [struct.unpack("iII", c[2])[1] for c in anc
                   if c[1] == socket.SCM_CREDENTIALS]
            f.write("%s %s\n" % (uid[0] if uid else "?", m.decode(errors="replace")))
    except BlockingIOError:
        pass
sys.exit(rc)
P
	# nobody's two forged records, then the recorder's real one as root.
	python3 - "$d" "$forged" "$(recorder)" <<'P' >"$d/cmds.json"
import json, sys
d, forged, recorder = sys.argv[1:]
send = ("import socket, sys; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
        "for pid in (4242, 4243): s.sendto(b'<30>spank-nccl[%d]: ' % pid + sys.argv[1].encode(), '/dev/log')")
print(json.dumps([["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                   "python3", "-c", send, forged],
                  ["sh", "-c", 'exec "$0" --node n1 --mode comm --exit-status 0 --job 78 '
                   '--record-file "$1/genuine.jsonl" --syslog <"$1/result.json"', recorder, d]]))
P
	unshare -m --propagation private sh -c 'mount -t tmpfs tmpfs /dev &&
		exec python3 "$@"' sh "$d/listen.py" "$d/got.txt" "$d/cmds.json" ||
		sn_fail "the syslog listener failed: $(cat "$d/got.txt" 2>/dev/null)"
	# The same format from both; the sender's uid (journald's _UID)
	# tells them apart.
	[ "$(grep -cE '^65534 <30>spank-nccl\[[0-9]+\]: @cee:\{.*"fault":"node"' "$d/got.txt")" -eq 2 ] ||
		sn_fail "nobody's records did not arrive: $(cat "$d/got.txt")"
	grep -qE '^0 <30>spank-nccl\[[0-9]+\]: @cee:\{"rid":"n1-' "$d/got.txt" ||
		sn_fail "the recorder's record did not arrive: $(cat "$d/got.txt")"
	cmp -s "$d/before.prom" "$prom" || sn_fail "n1's .prom changed"
	[ "$(record_count)" -eq "$records_before" ] || sn_fail "the record file changed"
	# promtool: n1's series from the .prom before, then after, an hour
	# each; neither node-fault alert fires on n1.
	python3 - "$d/before.prom" "$prom" <<'P' >"$d/series.yml" || sn_fail "series"
import sys
def samples(path):
    return dict(l.rsplit(" ", 1) for l in open(path).read().splitlines()
                if l and not l.startswith("#"))
before, after = samples(sys.argv[1]), samples(sys.argv[2])
for key in sorted(set(before) | set(after)):
    name, _, labels = key.partition("{")
    labels = labels.rstrip("}")
    print("      - series: '%s{%s%sinstance=\"n1\"}'" % (name, labels, "," if labels else ""))
    print("        values: '%s+0x60 %s+0x60'" % (before.get(key, after.get(key)), after.get(key, before.get(key))))
P
	{
		echo "rule_files: ['$rules']"
		echo "evaluation_interval: 1m"
		echo "tests:"
		echo "  - interval: 1m"
		echo "    input_series:"
		cat "$d/series.yml"
		echo "    alert_rule_test:"
		for t in 60 120; do
			echo "      - { eval_time: ${t}m, alertname: SpankNcclNodeFaults, exp_alerts: [] }"
			echo "      - { eval_time: ${t}m, alertname: SpankNcclPluginWarmupFailing, exp_alerts: [] }"
		done
	} >"$d/alerts-test.yml"
	run promtool test rules "$d/alerts-test.yml"
	[ "$status" -eq 0 ] || sn_fail "promtool test rules: $output"
}

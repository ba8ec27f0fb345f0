#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fleet records (JSON lines) -> promtool test input_series (YAML).

The counters and gauges spank-nccl's .prom file would hold, one sample a
minute, one record per minute in record order (per node, as its own
instance), after a first minute at 0 (the node's file as earlier warmups
left it: every series is written at 0 from the first warmup on), so that promtool test rules evaluates the shipped alert rules
over what the integration suite really recorded (fleet_alerts.bats).  Every mode, source and
fault series starts at 0, as prom_state.c writes them.  The last values
are held for EXTRA more minutes.

usage: records-to-series.py RECORDS EXTRA [JOB...]   (JOB: keep only those)
"""
import json
import sys

MODES = ("check", "comm", "bandwidth", "fabric")
SOURCES = {"spank": "plugin", "prolog": "prolog", "manual": "manual"}
FAULTS = ("node", "job", "environment")


def main():
    path, extra = sys.argv[1], int(sys.argv[2])
    jobs = set(sys.argv[3:])
    recs = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if jobs and str(r.get("job")) not in jobs:
                continue
            recs.append(r)
    nodes = sorted({r["node"] for r in recs})
    counters, gauges = {}, {}
    for node in nodes:
        for m in MODES:
            for s in SOURCES.values():
                for fault in FAULTS:
                    counters[("spank_nccl_warmup_failures_total", node,
                              (("mode", m), ("source", s),
                               ("fault", fault)))] = []
                counters[("spank_nccl_warmup_passes_total", node,
                          (("mode", m), ("source", s)))] = []
    state = {k: 0 for k in counters}
    for k in counters:
        counters[k].append(0)
    for i, r in enumerate(recs, start=1):
        src = SOURCES[r["source"]]
        if r["verdict"] == "pass":
            state[("spank_nccl_warmup_passes_total", r["node"],
                   (("mode", r["mode"]), ("source", src)))] += 1
        else:
            state[("spank_nccl_warmup_failures_total", r["node"],
                   (("mode", r["mode"]), ("source", src),
                    ("fault", r["fault"] or "node")))] += 1
        g = ("spank_nccl_warmup_last_success", r["node"],
             (("mode", r["mode"]), ("source", src)))
        gauges.setdefault(g, ["_"] * i)
        for k, v in state.items():
            counters[k].append(v)
        for k, v in gauges.items():
            v.append(None)
        gauges[g][-1] = 1 if r["verdict"] == "pass" else 0
        for k, v in gauges.items():
            if v[-1] is None:
                v[-1] = v[-2]
    print("input_series:")
    for series in (counters, gauges):
        for (name, node, labels), values in sorted(series.items()):
            values = values + [values[-1]] * extra
            text = ",".join('%s="%s"' % kv for kv in labels)
            print("  - series: '%s{instance=\"%s\",%s}'" % (name, node, text))
            print("    values: '%s'" % " ".join(str(v) for v in values))
    print("# minutes: %d" % (len(recs) + 1))


if __name__ == "__main__":
    main()

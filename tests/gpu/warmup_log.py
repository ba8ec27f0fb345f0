#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reads slurmd log lines on stdin and checks the plugin's warmup records:

  ... job J step S on NODE: nccl-warmup passed in N ms: {JSON}

(src/plugin/step_warmup.c logs one per node per step, JSON from
nccl-warmup --json).  Options say what must hold; exit 0 when all do, 1
with one line per problem otherwise.  --print shows each record briefly.

  warmup_log.py --count 1 --status passed --mode comm --gpus 4 \
      --uid 1001 --gid 1001 --group 998 --nccl 2.28.3 --busids a,b,c,d
"""
import argparse
import json
import re
import sys

RECORD = re.compile(r"job (\d+) step (\d+) on (\S+): nccl-warmup "
                    r"(passed|failed) in ([0-9.]+) ms: (.*)$")


def records(lines):
    for line in lines:
        m = RECORD.search(line)
        if not m:
            continue
        raw = m.group(6).strip()
        try:
            data = json.loads(raw) if raw.startswith("{") else None
        except ValueError:
            data = None
        yield {"job": int(m.group(1)), "step": int(m.group(2)),
               "node": m.group(3), "verdict": m.group(4),
               "ms": float(m.group(5)), "json": data, "raw": raw}


def problems_of(rec, args):
    out = []
    d = rec["json"]
    if args.max_ms is not None and rec["ms"] > args.max_ms:
        out.append("the helper ran %.0f ms, over %d" % (rec["ms"], args.max_ms))
    if args.status and rec["verdict"] != args.status:
        out.append("verdict %s, want %s" % (rec["verdict"], args.status))
    if d is None:
        if any((args.mode, args.gpus, args.uid is not None, args.nccl,
                args.busids)):
            out.append("no JSON result in the record: %s" % rec["raw"][:200])
        return out
    if args.mode and d.get("mode") != args.mode:
        out.append("mode %s, want %s" % (d.get("mode"), args.mode))
    if args.gpus is not None and len(d.get("gpus", [])) != args.gpus:
        out.append("%d GPUs in the result, want %d"
                   % (len(d.get("gpus", [])), args.gpus))
    if args.busids:
        # As sets: CUDA's order need not be nvidia-smi's.
        got = sorted(g.get("busid", "").lower() for g in d.get("gpus", []))
        if got != sorted(args.busids.lower().split(",")):
            out.append("bus IDs %s, want %s" % (got, args.busids))
    if args.nccl and d.get("nccl_version") != args.nccl:
        out.append("NCCL %s, want %s" % (d.get("nccl_version"), args.nccl))
    ids = d.get("ids", {})
    if args.uid is not None and ids.get("uid") != [args.uid] * 3:
        out.append("helper ran as uid %s (real, effective, saved), want %d"
                   % (ids.get("uid"), args.uid))
    if args.gid is not None and ids.get("gid") != [args.gid] * 3:
        out.append("helper ran as gid %s, want %d" % (ids.get("gid"),
                                                     args.gid))
    if args.group is not None and args.group not in ids.get("groups", []):
        out.append("supplementary groups %s lack %d"
                   % (ids.get("groups"), args.group))
    if args.uid is not None and args.uid != 0 and 0 in ids.get("groups", []):
        out.append("helper kept root's group 0: %s" % ids.get("groups"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, help="records expected")
    ap.add_argument("--status", choices=("passed", "failed"))
    ap.add_argument("--max-ms", type=int, help="the helper's run at most")
    ap.add_argument("--mode")
    ap.add_argument("--gpus", type=int)
    ap.add_argument("--busids", help="comma-separated, any order")
    ap.add_argument("--nccl", help="NCCL version, e.g. 2.28.3")
    ap.add_argument("--uid", type=int)
    ap.add_argument("--gid", type=int)
    ap.add_argument("--group", type=int, help="a supplementary gid expected")
    ap.add_argument("--print", action="store_true")
    args = ap.parse_args()

    recs = list(records(sys.stdin))
    problems = []
    if args.count is not None and len(recs) != args.count:
        problems.append("%d warmup records in the log, want %d"
                        % (len(recs), args.count))
    for rec in recs:
        if args.print:
            d = rec["json"] or {}
            print("warmup_log: job %d step %d %s %s in %.0f ms: %s"
                  % (rec["job"], rec["step"], rec["node"], rec["verdict"],
                     rec["ms"], d.get("summary", rec["raw"][:300])))
        for p in problems_of(rec, args):
            problems.append("job %d step %d: %s" % (rec["job"], rec["step"],
                                                    p))
    for p in problems:
        print("warmup_log: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

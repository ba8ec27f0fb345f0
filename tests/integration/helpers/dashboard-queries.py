#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Evaluates every panel query of a Grafana dashboard on a Prometheus.

usage: dashboard-queries.py DASHBOARD.json URL [OUT.json]

Each target's expr must return at least one series, carrying the labels
its outermost aggregation's "by (...)" names, and finite or NaN values only.  Prints
one line per panel; OUT.json gets every result (for rendering).  Exit 1
when a query fails or returns nothing.
"""
import json
import re
import sys
import urllib.parse
import urllib.request


def query(url, expr):
    q = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen("%s/api/v1/query?%s" % (url, q),
                                timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(body)
    return body["data"]["result"]


def main():
    dash = json.load(open(sys.argv[1]))
    url = sys.argv[2].rstrip("/")
    out, bad = {}, 0
    for p in dash["panels"]:
        for t in p.get("targets", []):
            expr = t["expr"]
            res = query(url, expr)
            # The outermost aggregation's labels ("sum by (a, b) (...)").
            m = re.match(r"\s*\w+ by \(([^)]*)\)", expr)
            want = [w.strip() for w in m.group(1).split(",")] if m else []
            want = [w for w in want if w != "le"]
            ok = bool(res) and all(
                all(w in s["metric"] for w in want) for s in res)
            print("%s %s: %d series%s" % ("ok" if ok else "FAIL", p["title"],
                                          len(res),
                                          "" if ok else " (want labels %s)"
                                          % want))
            bad += not ok
            out[p["title"]] = res
    if len(sys.argv) > 3:
        json.dump(out, open(sys.argv[3], "w"), indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

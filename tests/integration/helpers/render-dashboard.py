#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Draws the dashboard's panels from the results dashboard-queries.py
fetched from a real Prometheus (matplotlib, Debian's python3-matplotlib).

usage: render-dashboard.py DASHBOARD.json RESULTS.json OUT.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def label(metric, skip=("__name__", "job")):
    return ",".join("%s=%s" % (k, v) for k, v in sorted(metric.items())
                    if k not in skip) or "(all)"


def main():
    dash = json.load(open(sys.argv[1]))
    res = json.load(open(sys.argv[2]))
    panels = dash["panels"]
    rows = (len(panels) + 1) // 2
    fig, axes = plt.subplots(rows, 2, figsize=(16, 3.4 * rows))
    for ax, p in zip(axes.flat, panels):
        ax.set_title(p["title"], fontsize=9, loc="left")
        inst = res.get(p["title"], [])
        rng = res.get(p["title"] + " (range)")
        if p["type"] == "timeseries" and rng:
            t0 = min(float(v[0]) for s in rng for v in s["values"])
            for s in rng[:8]:
                xs = [float(v[0]) - t0 for v in s["values"]]
                ys = [float(v[1]) for v in s["values"]]
                ax.plot(xs, ys, label=label(s["metric"])[:60])
            ax.set_xlabel("seconds", fontsize=7)
            ax.legend(fontsize=6, loc="upper left")
            ax.tick_params(labelsize=7)
        elif p["type"] == "stat":
            v = inst[0]["value"][1] if inst else "-"
            ax.text(0.5, 0.45, v, fontsize=40, ha="center", va="center")
            ax.axis("off")
        else:
            cells = [[label(s["metric"])[:90], s["value"][1]]
                     for s in inst[:10]]
            ax.axis("off")
            if cells:
                t = ax.table(cellText=cells, colLabels=["series", "value"],
                             loc="upper left", colWidths=[0.85, 0.15])
                t.auto_set_font_size(False)
                t.set_fontsize(6)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(dash["title"] + " (rendered from fleet_alerts.bats's Prometheus)",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(sys.argv[3], dpi=80)


if __name__ == "__main__":
    main()

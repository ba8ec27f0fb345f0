#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What the node's GPUs hold right now, read with nvidia-smi (which never
creates a CUDA context, so reading does not change the answer).

  gpu_state.py baseline      print used MiB per GPU, comma-separated
  gpu_state.py check-idle    exit 1 unless every GPU uses at most
                             $SN_GPU_BASELINE[i] + $SN_GPU_SLACK_MIB (default
                             2) MiB and no compute process runs
  gpu_state.py busids        print the PCI bus IDs, one per line, in the
                             form CUDA uses (0000:00:06.0)

Used by tests/gpu/run-gpu-tests.sh and, inside jobs, by ddp_check.py: a
task started after `--nccl-warmup` must find the GPUs as the warmup found
them (the helper has exited and released its contexts).
"""
import os
import subprocess
import sys


def _smi(*args):
    out = subprocess.run(["nvidia-smi", *args], check=True,
                         capture_output=True, text=True, timeout=30).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def used_mib():
    return [int(v) for v in _smi("--query-gpu=memory.used",
                                 "--format=csv,noheader,nounits")]


def compute_apps():
    # "No running processes found" style lines are not processes.
    return [line for line in _smi("--query-compute-apps=pid,process_name,"
                                  "used_memory", "--format=csv,noheader")
            if line.split(",")[0].strip().isdigit()]


def busids():
    # nvidia-smi: 00000000:00:06.0; CUDA: 0000:00:06.0 (4-digit domain).
    ids = []
    for line in _smi("--query-gpu=pci.bus_id", "--format=csv,noheader"):
        domain, rest = line.split(":", 1)
        ids.append("%04x:%s" % (int(domain, 16), rest.lower()))
    return ids


def idle_problems(baseline, slack):
    problems = []
    used = used_mib()
    if len(used) != len(baseline):
        problems.append("nvidia-smi lists %d GPUs, the baseline %d"
                        % (len(used), len(baseline)))
    for i, (now, base) in enumerate(zip(used, baseline)):
        if now > base + slack:
            problems.append("GPU %d uses %d MiB, baseline %d MiB (+%d allowed)"
                            % (i, now, base, slack))
    for app in compute_apps():
        problems.append("compute process on a GPU: %s" % app)
    return problems


def baseline_from_env():
    raw = os.environ.get("SN_GPU_BASELINE", "")
    if not raw:
        sys.exit("gpu_state.py: SN_GPU_BASELINE is not set "
                 "(comma-separated MiB per GPU, from `gpu_state.py baseline`)")
    return [int(v) for v in raw.split(",")]


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "baseline":
        print(",".join(str(v) for v in used_mib()))
    elif cmd == "busids":
        print("\n".join(busids()))
    elif cmd == "check-idle":
        slack = int(os.environ.get("SN_GPU_SLACK_MIB", "2"))
        problems = idle_problems(baseline_from_env(), slack)
        for p in problems:
            print("gpu_state.py: not idle: " + p, file=sys.stderr)
        if problems:
            return 1
        print("gpu_state.py: GPUs idle (used MiB %s)"
              % ",".join(str(v) for v in used_mib()))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

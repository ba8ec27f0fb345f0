#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The work nccl-warmup does, the way a PyTorch job does it: one process
per GPU (torch.multiprocessing.spawn), init_process_group("nccl",
device_id=...) (eager NCCL communicator init), one all_reduce whose sum is
checked, destroy_process_group.  bench/warmup-bench.sh times the whole
process from the outside; this prints its own phase times as one JSON line.

  pytorch_warmup.py [--gpus N]     (default: nvidia-smi -L)
"""
import argparse
import datetime
import json
import os
import socket
import subprocess
import sys
import time

T0 = time.monotonic()


def gpu_count():
    out = subprocess.run(["nvidia-smi", "-L"], check=True,
                         capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def worker(rank, world, port, results):
    import torch
    import torch.distributed as dist

    t = {}
    start = time.monotonic()
    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port,
                            rank=rank, world_size=world, device_id=device,
                            timeout=datetime.timedelta(seconds=120))
    t["init_process_group"] = time.monotonic() - start
    x = torch.ones(1, device=device)
    mark = time.monotonic()
    dist.all_reduce(x)
    torch.cuda.synchronize(device)
    t["allreduce"] = time.monotonic() - mark
    ok = x.item() == world
    mark = time.monotonic()
    dist.destroy_process_group()
    t["destroy"] = time.monotonic() - mark
    results.put((rank, ok, t))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, default=0)
    args = ap.parse_args()
    n = args.gpus or gpu_count()

    import torch.multiprocessing as mp
    t_import = time.monotonic() - T0

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    results = ctx.SimpleQueue()
    mark = time.monotonic()
    mp.spawn(worker, args=(n, port, results), nprocs=n, join=True)
    t_spawn = time.monotonic() - mark
    per_rank = [results.get() for _ in range(n)]
    bad = [r for r, ok, _ in per_rank if not ok]
    rank0 = sorted(per_rank)[0][2]
    print(json.dumps({
        "gpus": n, "ok": not bad,
        "import_s": round(t_import, 3),
        "spawn_to_joined_s": round(t_spawn, 3),
        "rank0_init_process_group_s": round(rank0["init_process_group"], 3),
        "rank0_allreduce_s": round(rank0["allreduce"], 4),
        "rank0_destroy_s": round(rank0["destroy"], 3),
        "in_process_s": round(time.monotonic() - T0, 3),
    }))
    if bad:
        print("pytorch_warmup: wrong all_reduce on ranks %s" % bad,
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    sys.exit(main())

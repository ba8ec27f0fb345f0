#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One Slurm task that does what a PyTorch DDP job does first, after
`srun --nccl-warmup --nccl-profile=nccl-cumem-off,expandable-segments`:

 1. before anything touches CUDA: the GPUs are as idle as before the step
    (the warmup helper is gone; SN_GPU_BASELINE, see gpu_state.py);
 2. the environment holds what the profiles set (and what the user had:
    the test exports PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:256 before
    srun, and the merge must keep it);
 3. one process per GPU (torch.multiprocessing.spawn), each
    init_process_group("nccl", device_id=...), one all_reduce whose sum is
    checked, destroy_process_group.

Exit 0 when all of that holds; otherwise one line per problem on stderr.
"""
import argparse
import datetime
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_state  # noqa: E402


def alloc_conf_keys(name):
    raw = os.environ.get(name)
    if raw is None:
        return None
    return {kv.strip() for kv in raw.split(",") if kv.strip()}


def env_problems(user_key):
    problems = []

    def want(name, value):
        if os.environ.get(name) != value:
            problems.append("%s=%r, want %r"
                            % (name, os.environ.get(name), value))

    want("NCCL_CUMEM_ENABLE", "0")          # nccl-cumem-off
    want("NCCL_GRAPH_REGISTER", "0")        # expandable-segments default
    want("NCCL_NVLS_ENABLE", "0")           # the node's own, kept
    for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        keys = alloc_conf_keys(name)
        if keys is None or "expandable_segments:True" not in keys:
            problems.append("%s=%r lacks expandable_segments:True"
                            % (name, os.environ.get(name)))
    if user_key:
        keys = alloc_conf_keys("PYTORCH_CUDA_ALLOC_CONF") or set()
        if user_key not in keys:
            problems.append("PYTORCH_CUDA_ALLOC_CONF=%r lost the user's %s"
                            % (os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
                               user_key))
    return problems


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, world, port):
    import torch
    import torch.distributed as dist

    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port,
                            rank=rank, world_size=world, device_id=device,
                            timeout=datetime.timedelta(seconds=60))
    t = torch.full((1024,), float(rank + 1), device=device)
    dist.all_reduce(t)
    torch.cuda.synchronize(device)
    want = world * (world + 1) / 2
    got = t.cpu()
    dist.destroy_process_group()
    if not bool((got == want).all()):
        raise SystemExit("ddp_check: rank %d: all_reduce gave %s, want %s"
                         % (rank, got[:4].tolist(), want))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, required=True,
                    help="GPUs the step must see")
    ap.add_argument("--user-key", default="max_split_size_mb:256",
                    help="alloc-conf key the user exported before srun")
    args = ap.parse_args()

    problems = gpu_state.idle_problems(gpu_state.baseline_from_env(),
                                       int(os.environ.get("SN_GPU_SLACK_MIB",
                                                          "2")))
    problems += env_problems(args.user_key)
    if problems:
        for p in problems:
            print("ddp_check: " + p, file=sys.stderr)
        return 1
    print("ddp_check: GPUs idle at task start, profile environment ok")

    import torch
    import torch.multiprocessing as mp

    seen = torch.cuda.device_count()
    if seen != args.gpus:
        print("ddp_check: torch sees %d GPUs (CUDA_VISIBLE_DEVICES=%s), want %d"
              % (seen, os.environ.get("CUDA_VISIBLE_DEVICES"), args.gpus),
              file=sys.stderr)
        return 1
    mp.spawn(worker, args=(args.gpus, free_port()), nprocs=args.gpus,
             join=True)
    print("ddp_check: ok: %d ranks, NCCL all_reduce correct (torch %s, NCCL %s)"
          % (args.gpus, torch.__version__,
             ".".join(str(v) for v in torch.cuda.nccl.version())))
    return 0


if __name__ == "__main__":
    sys.exit(main())

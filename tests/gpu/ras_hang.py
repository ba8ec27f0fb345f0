# SPDX-License-Identifier: MIT
"""One task of a PyTorch job for the RAS phase (tests/gpu/ras-gpu.sh).

Every task joins one NCCL communicator (SLURM_PROCID of SLURM_NTASKS on
127.0.0.1), runs one all-reduce, prints "ready RANK PID NCCL_RAS_ADDR",
then runs a second one -- except the rank named by RAS_SKIP_RANK, which
takes another code path and sleeps: the others wait in NCCL for it, the
hang issue 35 is about.  Then every task sleeps until it is killed.
"""
import os
import time

import torch
import torch.distributed as dist

rank = int(os.environ["SLURM_PROCID"])
size = int(os.environ["SLURM_NTASKS"])
local = int(os.environ["SLURM_LOCALID"])
os.environ["MASTER_ADDR"] = "127.0.0.1"
os.environ["MASTER_PORT"] = str(21000 + int(os.environ["SLURM_JOB_ID"]) % 8000)
dev = torch.device("cuda", local)
torch.cuda.set_device(dev)
# device_id: the communicator now, not at the first collective.
dist.init_process_group("nccl", rank=rank, world_size=size, device_id=dev)
x = torch.ones(1 << 20, device=dev)
dist.all_reduce(x)
torch.cuda.synchronize()
print("ready %d %d %s" % (rank, os.getpid(), os.environ.get("NCCL_RAS_ADDR", "-")),
      flush=True)
if os.environ.get("RAS_SKIP_RANK") != str(rank):
    dist.all_reduce(x)
    torch.cuda.synchronize()
time.sleep(3600)

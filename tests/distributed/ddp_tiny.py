"""A tiny DDP training loop on gloo (CPU), for the distributed profiling tests: `--slow-rank R` sleeps on rank R."""

import argparse
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

parser = argparse.ArgumentParser()
parser.add_argument("--slow-rank", type=int, default=None)
parser.add_argument("--sleep", type=float, default=0.05)
parser.add_argument("--steps", type=int, default=50)
args = parser.parse_args()

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(8, 32), torch.randn(8, 4)
for _ in range(args.steps):
    if rank == args.slow_rank:
        time.sleep(args.sleep)
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
dist.destroy_process_group()

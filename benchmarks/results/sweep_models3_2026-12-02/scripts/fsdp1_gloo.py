"""FSDP1 (FullyShardedDataParallel wrapper, FULL_SHARD) on gloo on CPU, 10 steps."""
import os
import torch, torch.nn as nn, torch.nn.functional as F, torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29542")
dist.init_process_group("gloo", rank=int(os.environ.get("RANK", 0)), world_size=int(os.environ.get("WORLD_SIZE", 1)))
torch.manual_seed(0)
m = FSDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)), device_id=torch.device("cpu"), use_orig_params=True)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
torch.manual_seed(dist.get_rank())
x, y = torch.randn(16, 32), torch.randint(0, 4, (16,))
for step in range(10):
    loss = F.cross_entropy(m(x), y); opt.zero_grad(); loss.backward(); opt.step()
print("rank", dist.get_rank(), "steps", step + 1, "loss", loss.item())
dist.destroy_process_group()

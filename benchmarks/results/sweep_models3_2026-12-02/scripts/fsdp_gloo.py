"""FSDP2 (fully_shard) on gloo on CPU: run as a torchrun job (RANK/WORLD_SIZE set) or alone (world of 1); 10 steps."""
import os
import torch, torch.nn as nn, torch.nn.functional as F, torch.distributed as dist
from torch.distributed.fsdp import fully_shard
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29541")
dist.init_process_group("gloo", rank=int(os.environ.get("RANK", 0)), world_size=int(os.environ.get("WORLD_SIZE", 1)))
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))
for layer in m:
    if isinstance(layer, nn.Linear):
        fully_shard(layer)
fully_shard(m)
opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
torch.manual_seed(dist.get_rank())
x, y = torch.randn(16, 32), torch.randint(0, 4, (16,))
for step in range(10):
    loss = F.cross_entropy(m(x), y); opt.zero_grad(); loss.backward(); opt.step()
print("rank", dist.get_rank(), "steps", step + 1, "loss", loss.item())
dist.destroy_process_group()

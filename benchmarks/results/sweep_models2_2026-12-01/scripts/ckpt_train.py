"""Training with activation checkpointing: 10 SGD steps; --reentrant picks use_reentrant=True."""
import sys
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

reentrant = "--reentrant" in sys.argv
class Block(nn.Module):
    def __init__(s, d=64): super().__init__(); s.a = nn.Linear(d, 256); s.b = nn.Linear(256, d)
    def forward(s, x): return x + s.b(F.gelu(s.a(x)))
class M(nn.Module):
    def __init__(s): super().__init__(); s.blocks = nn.ModuleList(Block() for _ in range(3)); s.head = nn.Linear(64, 4)
    def forward(s, x):
        for b in s.blocks:
            x = checkpoint(b, x, use_reentrant=reentrant) if "--none" not in sys.argv else b(x)
        return s.head(x)
m = M(); opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(16, 64, requires_grad=reentrant); y = torch.randint(0, 4, (16,))
for step in range(10):
    loss = F.cross_entropy(m(x), y); loss.backward(); opt.step(); opt.zero_grad()
print("steps", step + 1)

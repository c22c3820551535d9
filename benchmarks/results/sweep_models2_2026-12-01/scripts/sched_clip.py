"""OneCycleLR scheduler + clip_grad_norm_(foreach=True) + weight decay param groups; 12 steps."""
import torch, torch.nn as nn, torch.nn.functional as F
m = nn.Sequential(nn.Linear(32, 128), nn.LayerNorm(128), nn.GELU(), nn.Linear(128, 8))
decay = [p for n, p in m.named_parameters() if p.ndim == 2]; nodecay = [p for n, p in m.named_parameters() if p.ndim < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": nodecay, "weight_decay": 0.0}], lr=1e-3, foreach=True)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=12)
x, y = torch.randn(32, 32), torch.randint(0, 8, (32,))
for step in range(12):
    loss = F.cross_entropy(m(x), y); opt.zero_grad(); loss.backward()
    nn.utils.clip_grad_norm_(m.parameters(), 1.0, foreach=True)
    opt.step(); sched.step()
print("steps", step + 1, "lr", sched.get_last_lr())

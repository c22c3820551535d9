"""torch.amp.GradScaler('cpu') with fp16 autocast on CPU; 10 steps."""
import torch, torch.nn as nn, torch.nn.functional as F
m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(m.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu")
x, y = torch.randn(16, 32), torch.randint(0, 4, (16,))
for step in range(10):
    with torch.autocast("cpu", dtype=torch.float16):
        loss = F.cross_entropy(m(x), y)
    scaler.scale(loss).backward(); scaler.step(opt); scaler.update(); opt.zero_grad()
print("steps", step + 1, "scale", scaler.get_scale())

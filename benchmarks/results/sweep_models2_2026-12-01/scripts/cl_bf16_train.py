"""channels_last conv net, bf16 autocast training, BatchNorm in train mode (running stats updated); 10 steps."""
import torch, torch.nn as nn, torch.nn.functional as F
m = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2),
                  nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
m = m.to(memory_format=torch.channels_last)
opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(8, 3, 32, 32).to(memory_format=torch.channels_last); y = torch.randint(0, 10, (8,))
for step in range(10):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = F.cross_entropy(m(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
print("steps", step + 1, "bn batches", int(m[1].num_batches_tracked))

import torch, torch.nn as nn
m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
cm = torch.compile(m)
for i in range(12):
    cm(torch.randn(8, 32)).sum()
print("done")

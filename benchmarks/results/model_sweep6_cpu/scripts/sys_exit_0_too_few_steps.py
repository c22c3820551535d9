"""sys.exit(0) after five steps, fewer than the schedule needs: exit 2, one line"""
import os, sys, torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 64)
LOOPS = 5

def step():
    model(x).sum().backward(); opt.step(); opt.zero_grad()

if not os.environ.get("SWEEP6_FCM"):
    for _ in range(LOOPS):
        step()

if not os.environ.get("SWEEP6_FCM"):
    sys.exit(0)

"""sys.exit(0) after ten steps"""
import os, sys, torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 64)
LOOPS = 10

def step():
    model(x).sum().backward(); opt.step(); opt.zero_grad()

if not os.environ.get("SWEEP6_FCM"):
    for _ in range(LOOPS):
        step()

if not os.environ.get("SWEEP6_FCM"):
    sys.exit(0)

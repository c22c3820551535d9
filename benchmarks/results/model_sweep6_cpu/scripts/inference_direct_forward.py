"""inference_mode, the model called as model.forward(x) (its own hooks never run)"""
import os, sys, torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64)).eval()
x = torch.randn(16, 64)
LOOPS = 10

def step():
    with torch.inference_mode():
        model.forward(x)

if not os.environ.get("SWEEP6_FCM"):
    for _ in range(LOOPS):
        step()

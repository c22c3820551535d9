"""AdamW step under torch.amp.autocast('cpu', bfloat16), 4 micro-batches accumulated"""
import os, sys, torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
LOOPS = 10

def step():
    for _ in range(4):
        with torch.amp.autocast("cpu", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x), y) / 4
        loss.backward()
    opt.step()
    opt.zero_grad()

if not os.environ.get("SWEEP6_FCM"):
    for _ in range(LOOPS):
        step()

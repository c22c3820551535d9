"""A DataLoader with num_workers=2 (fork) under if __name__ == '__main__'"""
import os, sys, torch
import torch.nn as nn
torch.manual_seed(0)
from torch.utils.data import DataLoader, TensorDataset
model = nn.Linear(32, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 32), torch.randint(0, 4, (32,))
LOOPS = 0

def step():
    nn.functional.cross_entropy(model(x), y).backward(); opt.step(); opt.zero_grad()

if __name__ == "__main__" and not os.environ.get("SWEEP6_FCM"):
    ds = TensorDataset(torch.randn(512, 32), torch.randint(0, 4, (512,)))
    for x, y in DataLoader(ds, batch_size=32, num_workers=2):
        step()

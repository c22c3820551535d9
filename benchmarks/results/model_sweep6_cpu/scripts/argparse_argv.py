"""argparse with a required option, passed after the script"""
import os, sys, torch
import torch.nn as nn
torch.manual_seed(0)
import argparse
p = argparse.ArgumentParser()
p.add_argument("--width", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args() if not os.environ.get("SWEEP6_FCM") else p.parse_args(["--width", "48"])
assert sys.argv[0].endswith("argparse_argv.py"), sys.argv
model = nn.Linear(a.width, a.width)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, a.width)
LOOPS = a.steps

def step():
    model(x).sum().backward(); opt.step(); opt.zero_grad()

if not os.environ.get("SWEEP6_FCM"):
    for _ in range(LOOPS):
        step()

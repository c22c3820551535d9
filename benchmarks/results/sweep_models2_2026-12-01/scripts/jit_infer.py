"""A torch.jit.script'ed model in an inference loop (no optimizer): 10 forwards."""
import torch, torch.nn as nn
m = torch.jit.script(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8)).eval())
x = torch.randn(8, 32)
with torch.no_grad():
    for i in range(10): y = m(x)
print("forwards", i + 1)

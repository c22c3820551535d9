import sys, torch, torch.nn as nn
from torch.profiler import profile
from roofline.capture.script_runner import StepFinder
m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
cm = torch.compile(m)
with StepFinder(lambda: None):
    for i in range(5): cm(torch.randn(8, 32))
    with profile(with_stack="stack" in sys.argv) as p:
        for i in range(3): cm(torch.randn(8, 32)).sum()
for e in p.key_averages():
    if "Compiled Region" in e.key or "Dynamo" in e.key: print(e.key, e.count)

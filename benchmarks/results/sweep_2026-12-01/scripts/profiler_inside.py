import torch
from torch.profiler import profile, ProfilerActivity
m = torch.nn.Linear(64, 64)
with profile(activities=[ProfilerActivity.CPU]) as p:
    for _ in range(5):
        m(torch.randn(8, 64))
print(p.key_averages().table(row_limit=3))

import torch, torch.nn as nn, sys
from torch.profiler import profile
m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
hooks = len(sys.argv) > 1
if hooks:
    n = [0]
    from torch.nn.modules import module as nm
    nm.register_module_forward_pre_hook(lambda mod, i: None)
    nm.register_module_forward_hook(lambda mod, i, o: n.__setitem__(0, n[0] + 1))
cm = torch.compile(m)
for i in range(5): cm(torch.randn(8, 32))
with profile() as p:
    for i in range(3): cm(torch.randn(8, 32)).sum()
for e in p.key_averages():
    if "Compiled" in e.key or "Dynamo" in e.key or "addmm" in e.key: print(e.key, e.count)
print("graph breaks:", torch._dynamo.utils.counters["graph_break"])

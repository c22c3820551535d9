"""torch.func training with no torch.optim: grad of functional_call, manual SGD update; 10 steps."""
import torch, torch.nn as nn, torch.nn.functional as F
from torch.func import functional_call, grad
m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
params = {k: v.detach() for k, v in m.named_parameters()}
x, y = torch.randn(16, 32), torch.randint(0, 4, (16,))
loss_fn = lambda p: F.cross_entropy(functional_call(m, p, (x,)), y)
for step in range(10):
    g = grad(loss_fn)(params)
    params = {k: params[k] - 0.01 * g[k] for k in params}
print("steps", step + 1)

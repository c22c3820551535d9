"""GAN-style loop: two models, two optimizers, each stepped once per iteration; 10 iterations."""
import torch, torch.nn as nn, torch.nn.functional as F
G = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 32))
D = nn.Sequential(nn.Linear(32, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))
og = torch.optim.Adam(G.parameters(), 1e-3); od = torch.optim.Adam(D.parameters(), 1e-3)
real = torch.randn(32, 32)
for it in range(10):
    fake = G(torch.randn(32, 16))
    ld = F.softplus(-D(real)).mean() + F.softplus(D(fake.detach())).mean()
    od.zero_grad(); ld.backward(); od.step()
    lg = F.softplus(-D(fake)).mean()
    og.zero_grad(); lg.backward(); og.step()
print("iterations", it + 1)

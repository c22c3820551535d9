"""A VAE: Normal.rsample, kl_divergence, Adam"""
import os, sys, torch
import torch.nn as nn
torch.manual_seed(0)
from torch.distributions import Normal, kl_divergence

class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc, self.dec = nn.Linear(64, 32), nn.Linear(16, 64)

    def forward(self, x):
        mu, logv = self.enc(x).chunk(2, -1)
        q = Normal(mu, (0.5 * logv).exp())
        rec = self.dec(q.rsample())
        prior = Normal(torch.zeros_like(mu), torch.ones_like(mu))
        return ((rec - x) ** 2).sum(-1).mean() + kl_divergence(q, prior).sum(-1).mean()

model, x = VAE(), torch.randn(32, 64)
opt = torch.optim.Adam(model.parameters(), 1e-3)
LOOPS = 10

def step():
    loss = model(x)
    opt.zero_grad(); loss.backward(); opt.step()

if not os.environ.get("SWEEP6_FCM"):
    for _ in range(LOOPS):
        step()

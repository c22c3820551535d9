"""A GAN: discriminator and generator steps, two Adam optimizers (the step: the one with the most parameters, the generator's)"""
import os, sys, torch
import torch.nn as nn
torch.manual_seed(0)
G = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 64))
D = nn.Sequential(nn.Linear(64, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
og, od = torch.optim.Adam(G.parameters(), 1e-3), torch.optim.Adam(D.parameters(), 1e-3)
bce = nn.BCEWithLogitsLoss()
real, z = torch.randn(32, 64), torch.randn(32, 16)
LOOPS = 10

def step():
    fake = G(z)
    ld = bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))
    od.zero_grad(); ld.backward(); od.step()
    lg = bce(D(fake), torch.ones(32, 1))
    og.zero_grad(); lg.backward(); og.step()

if not os.environ.get("SWEEP6_FCM"):
    for _ in range(LOOPS):
        step()

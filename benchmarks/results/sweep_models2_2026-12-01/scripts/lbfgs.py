"""LBFGS: optimizer.step(closure) runs forward+backward several times (max_iter=4) per step; 10 steps."""
import torch, torch.nn as nn
m = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 1))
opt = torch.optim.LBFGS(m.parameters(), lr=0.5, max_iter=4, history_size=5)
x, y = torch.randn(64, 32), torch.randn(64, 1)
calls = 0
def closure():
    global calls; calls += 1
    opt.zero_grad(); loss = nn.functional.mse_loss(m(x), y); loss.backward(); return loss
for step in range(10):
    opt.step(closure)
print("steps", step + 1, "closure calls", calls)

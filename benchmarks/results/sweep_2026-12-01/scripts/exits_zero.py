import sys, torch
m = torch.nn.Linear(8, 8)
for i in range(10):
    m(torch.randn(4, 8))
sys.exit(0)

import argparse, sys
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--accum", type=int, default=2)
    a = p.parse_args()
    assert sys.argv[0].endswith("train_loop.py"), sys.argv
    ds = TensorDataset(torch.randn(256, 32), torch.randint(0, 4, (256,)))
    dl = DataLoader(ds, batch_size=16, shuffle=True)
    m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    step = 0
    for i, (x, y) in enumerate(dl):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(m(x), y) / a.accum
        loss.backward()
        if (i + 1) % a.accum == 0:
            opt.step(); opt.zero_grad(set_to_none=True); step += 1
        if step >= a.steps: break
    print("final loss", loss.item() * a.accum)

if __name__ == "__main__":
    main()

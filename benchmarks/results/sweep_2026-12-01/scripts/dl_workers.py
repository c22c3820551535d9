import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
if __name__ == "__main__":
    ds = TensorDataset(torch.randn(512, 32), torch.randint(0, 4, (512,)))
    dl = DataLoader(ds, batch_size=16, num_workers=2)
    m = nn.Linear(32, 4); opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for x, y in dl:
        nn.functional.cross_entropy(m(x), y).backward(); opt.step(); opt.zero_grad()

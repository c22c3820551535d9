"""Mixtral (4 experts, top-2) from config: 10 training steps with the router's aux loss, AdamW."""
import sys, torch
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent.parent))
import fac
m, batch = fac.hf_mixtral_train()
opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
for step in range(10):
    out = m(**batch)
    out.loss.backward(); opt.step(); opt.zero_grad()
print("steps", step + 1, "aux", out.aux_loss.item())

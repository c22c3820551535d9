"""BART from config: 10 training steps, AdamW, linear warm-up, clip_grad_norm_."""
import sys, torch
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent.parent))
import fac
from transformers import get_linear_schedule_with_warmup
m, batch = fac.hf_bart_train()
opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
sched = get_linear_schedule_with_warmup(opt, 2, 10)
for step in range(10):
    loss = m(**batch).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    opt.step(); sched.step(); opt.zero_grad()
print("steps", step + 1, "loss", loss.item())

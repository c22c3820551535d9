"""torch.profiler traces of some of this sweep's set-ups, for `roofline trace`: python make_traces.py OUT_DIR.

Each: 2 steps under schedule(wait=0, warmup=1, active=2), record_shapes and with_stack on, CPU only."""
import sys, warnings
from pathlib import Path
import torch, torch.nn as nn, torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).parent))
import fac  # noqa: E402

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
warnings.simplefilter("ignore")
torch.set_num_threads(1)


def record(name, step, n=3):
    sched = torch.profiler.schedule(wait=0, warmup=1, active=n - 1, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched, record_shapes=True,
                                with_stack=True,
                                on_trace_ready=lambda p: p.export_chrome_trace(str(out / f"{name}.json"))) as prof:
        for _ in range(n):
            step(); prof.step()
    print("wrote", out / f"{name}.json")


def train_step(model, inputs, opt):
    def step():
        y = model(*inputs) if isinstance(inputs, tuple) else model(inputs)
        (y if y.ndim == 0 else y.float().mean()).backward(); opt.step(); opt.zero_grad()
    return step


for name in ("ckpt_nonreentrant", "ckpt_reentrant"):
    m, x = getattr(fac, name)()
    record(name, train_step(m, x, torch.optim.SGD(m.parameters(), lr=0.01)))

m = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 1))
opt = torch.optim.LBFGS(m.parameters(), max_iter=4)
x, y = torch.randn(64, 32), torch.randn(64, 1)
def closure():
    opt.zero_grad(); loss = F.mse_loss(m(x), y); loss.backward(); return loss
record("lbfgs", lambda: opt.step(closure))

for name in ("quant_static", "jit_script", "frcnn", "vit_fast", "nested_encoder", "sdpa_gqa", "hf_bert_attn_out"):
    m, x = getattr(fac, name)()
    with torch.no_grad():
        record(name, (lambda m=m, x=x: m(**x)) if isinstance(x, dict) else (lambda m=m, x=x: m(*x) if isinstance(x, tuple) else m(x)))

m, x = fac.channels_last_bf16()
record("channels_last_bf16_train", train_step(m, x, torch.optim.SGD(m.parameters(), lr=0.01)))

m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)); opt = torch.optim.SGD(m.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu"); x, t = torch.randn(16, 32), torch.randint(0, 4, (16,))
def scaled():
    with torch.autocast("cpu", dtype=torch.float16):
        loss = F.cross_entropy(m(x), t)
    scaler.scale(loss).backward(); scaler.step(opt); scaler.update(); opt.zero_grad()
record("gradscaler_fp16", scaled)

"""torch.profiler traces of some of this sweep's set-ups, for `roofline trace`: python make_traces.py OUT_DIR [NAME...].

Each: 2 steps under schedule(wait=0, warmup=1, active=2), record_shapes and with_stack on, CPU only; a training
step is forward, backward, SGD step."""
import sys, warnings
from pathlib import Path
import torch

sys.path.insert(0, str(Path(__file__).parent))
import fac  # noqa: E402

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
only = set(sys.argv[2:])
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


def call(model, inputs):
    return model(**inputs) if isinstance(inputs, dict) else model(*(inputs if isinstance(inputs, tuple) else (inputs,)))


def train_step(model, inputs, opt):
    def step():
        y = call(model, inputs)
        y = y if isinstance(y, torch.Tensor) else y.loss
        (y if y.ndim == 0 else y.float().mean()).backward(); opt.step(); opt.zero_grad()
    return step


TRAIN = ("hf_mixtral_train", "hf_qwen2moe_train", "hf_mamba", "hf_whisper_train", "hf_clip_loss", "tv_frcnn_train",
         "param_spectral_norm", "gru_packed_bidir", "func_jacrev")
INFER = ("hf_bart_beam", "tv_raft_small", "qdyn_lstm")
for name in TRAIN + INFER:
    if only and name not in only:
        continue
    m, x = getattr(fac, name)()
    if name in TRAIN:
        record(name, train_step(m, x, torch.optim.SGD(m.parameters(), lr=0.01)))
    else:
        def step(m=m, x=x):
            with torch.no_grad():
                call(m, x)
        record(name, step)

"""Record real torch.profiler traces on CPU with whatever torch this Python has (2.0 and later), for the sweep of
`roofline trace`/`doctor` on traces from older torch versions (benchmarks/results/sweep_oldtorch_2026-12-02.md).

Only torch and the standard library are imported, so it runs under an old torch in its own venv:

    /work/oldtorch-envs/t21/bin/python benchmarks/sweep_oldtorch.py OUTDIR

writes OUTDIR/torch<version>/<workload>.json (export_chrome_trace) or, for the scheduled training loop, the files
tensorboard_trace_handler names (*.pt.trace.json, gzip'd where the version takes use_gzip), and OUTDIR/torch<version>/
manifest.json (torch version, what each file records). Each workload runs a second or so on CPU.
"""

from __future__ import annotations

import inspect
import json
import platform
import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

CPU = [ProfilerActivity.CPU]


def mlp_training_steps(out: Path) -> str:
    """schedule(wait=1, warmup=1, active=2) + tensorboard_trace_handler: ProfilerStep#2 and #3 recorded."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    gz = "use_gzip" in inspect.signature(tensorboard_trace_handler).parameters
    handler = tensorboard_trace_handler(str(out / "mlp_train"), worker_name="rank0",
                                        **({"use_gzip": True} if gz else {}))
    with profile(activities=CPU, schedule=schedule(wait=1, warmup=1, active=2), on_trace_ready=handler,
                 record_shapes=True) as prof:
        for _ in range(5):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            prof.step()
    return f"MLP 256-512-10 batch 64, SGD, 5 steps, schedule(wait=1, warmup=1, active=2), record_shapes, gzip={gz}"


def _conv() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(32, 10))


def _record(path: Path, run, **kwargs) -> profile:
    with profile(activities=CPU, **kwargs) as prof:
        run()
    prof.export_chrome_trace(str(path))
    return prof


def conv_forward_shapes_stack(out: Path) -> str:
    torch.manual_seed(0)
    model, x = _conv().eval(), torch.randn(8, 3, 32, 32)
    with torch.no_grad():
        _record(out / "conv_shapes_stack.json", lambda: model(x), record_shapes=True, with_stack=True)
    return "conv net forward, batch 8 of 3x32x32, no_grad, record_shapes + with_stack"


def conv_forward_no_shapes(out: Path) -> str:
    torch.manual_seed(0)
    model, x = _conv().eval(), torch.randn(8, 3, 32, 32)
    with torch.no_grad():
        _record(out / "conv_no_shapes.json", lambda: model(x), record_shapes=False)
    return "conv net forward, record_shapes=False"


def lstm_forward_backward(out: Path) -> str:
    torch.manual_seed(0)
    lstm = nn.LSTM(64, 128, num_layers=2, batch_first=True)
    x = torch.randn(4, 20, 64)
    _record(out / "lstm.json", lambda: lstm(x)[0].sum().backward(), record_shapes=True)
    return "LSTM 2 layers 64->128, batch 4, 20 steps, forward + backward, record_shapes"


def transformer_fast_path(out: Path) -> str:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
    enc = nn.TransformerEncoder(layer, num_layers=2).eval()
    x = torch.randn(4, 16, 64)
    with torch.no_grad():
        _record(out / "transformer_eval.json", lambda: enc(x), record_shapes=True)
    return "nn.TransformerEncoder 2 layers d=64 (fast path: eval + no_grad), batch 4 x 16 tokens, record_shapes"


def mlp_memory_modules_flops(out: Path) -> str:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
    x = torch.randn(64, 256)
    prof = _record(out / "mlp_memory_modules_flops.json", lambda: model(x).sum().backward(), record_shapes=True,
                   profile_memory=True, with_modules=True, with_flops=True)
    # with_flops puts no FLOPs in the exported trace (2.1-2.7): torch's own figures, to compare with roofline's
    flops = {e.key: e.flops for e in prof.key_averages() if e.flops}
    (out / "mlp_memory_modules_flops.torch_flops.json").write_text(json.dumps(flops, indent=1, sort_keys=True))
    return "MLP forward + backward, record_shapes + profile_memory + with_modules + with_flops"


def _ddp_rank(rank: int, world: int, out: str, port: int) -> None:
    import os

    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 256), torch.randint(0, 10, (32,))
    handler = tensorboard_trace_handler(out, worker_name=f"rank{rank}")
    with profile(activities=CPU, schedule=schedule(wait=1, warmup=1, active=2), on_trace_ready=handler,
                 record_shapes=True) as prof:
        for _ in range(5):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            prof.step()
    dist.destroy_process_group()


def ddp_gloo_two_ranks(out: Path) -> str:
    """Two processes of one gloo DDP job, each writing its own trace (distributedInfo names rank and world)."""
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_ddp_rank, args=(2, str(out / "ddp_gloo"), port), nprocs=2, join=True)
    return "DDP over gloo, 2 CPU processes, MLP 256-512-10 batch 32 per rank, schedule(wait=1, warmup=1, active=2)"


WORKLOADS = [mlp_training_steps, conv_forward_shapes_stack, conv_forward_no_shapes, lstm_forward_backward,
             transformer_fast_path, mlp_memory_modules_flops, ddp_gloo_two_ranks]


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: sweep_oldtorch.py OUTDIR", file=sys.stderr)
        return 2
    out = Path(sys.argv[1]) / f"torch{torch.__version__.split('+')[0]}"
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    runs = []
    for workload in WORKLOADS:
        t0 = time.perf_counter()
        what = workload(out)
        runs.append({"workload": workload.__name__, "what": what, "seconds": round(time.perf_counter() - t0, 2)})
        print(f"{workload.__name__:28s} {runs[-1]['seconds']:6.2f} s  {what}")
    manifest = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "torch": torch.__version__,
                "python": platform.python_version(), "command": " ".join(sys.argv), "device": "cpu",
                "runs": runs, "files": sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

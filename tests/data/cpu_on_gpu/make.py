"""Writes train_cpu_h200props.json.gz: a real torch.profiler trace of a small MLP training step run on the CPU
(record_shapes, a schedule, ProfilerActivity.CPU), into which the H200's deviceProperties entry is written as Kineto
writes it on a GPU machine even when no kernel ran (copied from tests/data/h200/bad_syncs_fwd_fp32.json.gz).

    PYTHONPATH=src python tests/data/cpu_on_gpu/make.py
"""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, schedule

HERE = Path(__file__).resolve().parent
H200_TRACE = HERE.parent / "h200" / "bad_syncs_fwd_fp32.json.gz"


def main() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "t.json"
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                     schedule=schedule(wait=0, warmup=1, active=2, repeat=1),
                     on_trace_ready=lambda p: p.export_chrome_trace(str(raw))) as prof:
            for _ in range(3):
                torch.nn.functional.cross_entropy(model(x), y).backward()
                opt.step()
                opt.zero_grad()
                prof.step()
        trace = json.loads(raw.read_text())
    with gzip.open(H200_TRACE, "rt") as f:
        trace["deviceProperties"] = json.load(f)["deviceProperties"]
    with gzip.open(HERE / "train_cpu_h200props.json.gz", "wt") as f:
        json.dump(trace, f)


if __name__ == "__main__":
    main()

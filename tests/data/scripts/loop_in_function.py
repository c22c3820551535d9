"""A training loop inside a function, profiled by its own torch.profiler (with_stack): `main` is already running
when profiling begins. tests/capture/test_source_lines.py reads its trace; keep the line numbers below in step with
the LINE_* constants there."""
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def main(trace_path: str) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True) as prof:
        for _ in range(2):
            out = model(x)
            loss = torch.nn.functional.cross_entropy(out, y) / 2
            loss.backward()
            opt.step()
            opt.zero_grad()
    prof.export_chrome_trace(trace_path)


if __name__ == "__main__":
    main(sys.argv[1])

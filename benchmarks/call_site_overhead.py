"""What the call-site ranges cost the profiled steps of `roofline profile SCRIPT.py`.

While the profiler runs, the script runner opens one record_function range per top-level module call, named with
the user line that made it (capture/script_runner.py, _open_call_site), so a torch that records no call sites
(no CallFrom) still places forward and backward ops at their line. This runs one small training script (its loop
inside main(), the shape that needs it) under the harness, alternating runs with the ranges on and off in one
process, and compares the profiled step times (wall time between steps, the harness's own figure); then times
one range directly (the step comparison is only as good as the machine is quiet). The true (unprofiled) steps
never run the ranges.

    python benchmarks/call_site_overhead.py OUT_DIR [--pairs 7] [--active 20] [--device cuda]
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import tempfile
import textwrap
from pathlib import Path

import torch

from roofline.capture import script_runner
from roofline.capture.profiling import StepProfiler
from roofline.io import atomic_write_text

SCRIPT = textwrap.dedent(
    """\
    import sys
    import torch


    def main():
        torch.manual_seed(0)
        device = sys.argv[2]
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x, y = torch.randn(16, 32, device=device), torch.randint(0, 4, (16,), device=device)
        for _ in range(int(sys.argv[1])):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)


    main()
    """
)


def write_script(folder: Path) -> Path:
    script = folder / "train_in_main.py"
    script.write_text(SCRIPT)
    return script


def one_run(script: Path, *, ranges: bool, active: int, device: str) -> StepProfiler:
    """One harness run of ``script``, with the call-site ranges on or off (the closed context: its
    profiled_step_s and trace_path)."""
    saved = script_runner._FastRange
    if not ranges:
        script_runner._FastRange = None  # as a torch without it: the finder opens no range, checks nothing
    try:
        context = StepProfiler(wait=2, warmup=1, active=active, timed=1, device=device, whole_block=False,
                               detect_syncs=False)
        script_runner.profile_script(context, script, [str(10 * active), device])
    finally:
        script_runner._FastRange = saved
    return context


def range_cost_s(repeats: int = 7, calls: int = 2000) -> list[float]:
    """Seconds per call-site range (open, close, the walk to the user frame) under a with_stack profiler, as in
    the profiled steps: ``repeats`` figures, each the mean of ``calls`` ranges opened from this frame."""
    import time

    from torch.profiler import ProfilerActivity, profile

    frame = sys._getframe()
    figures = []
    with profile(activities=[ProfilerActivity.CPU], with_stack=True, record_shapes=True):
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(calls):
                script_runner._close_call_site(script_runner._open_call_site(frame))
            figures.append((time.perf_counter() - start) / calls)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--active", type=int, default=20)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if torch.device(args.device).type == "cpu":
        torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        script = write_script(Path(tmp))
        one_run(script, ranges=True, active=3, device=args.device)  # first profiler start-up, not counted
        runs: dict[str, list[float]] = {"on": [], "off": []}
        for i in range(args.pairs):
            for name in (("on", "off") if i % 2 == 0 else ("off", "on")):
                context = one_run(script, ranges=name == "on", active=args.active, device=args.device)
                runs[name].append(statistics.median(context.profiled_step_s))
    per_range = range_cost_s()
    on, off = statistics.median(runs["on"]), statistics.median(runs["off"])
    result = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
        "torch": torch.__version__, "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "method": f"{args.pairs} alternating pairs of harness runs in one process; per run the median of "
                  f"{args.active} profiled step times; the median over runs, with min-max",
        "profiled_step_s": {name: {"median": statistics.median(v), "min": min(v), "max": max(v), "runs": v}
                            for name, v in runs.items()},
        "overhead": on / off - 1.0,
        "per_range_s": {"median": statistics.median(per_range), "min": min(per_range), "max": max(per_range),
                        "method": "7 figures, each the mean of 2000 ranges opened and closed under a with_stack "
                                  "profiler"},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / "call_site_overhead.json", json.dumps(result, indent=1) + "\n")
    print(f"{'call-site ranges':18} {'profiled step (median)':>24} {'min-max':>22}")
    for name, v in runs.items():
        print(f"{name:18} {statistics.median(v) * 1e6:21.1f} us {min(v) * 1e6:10.1f}-{max(v) * 1e6:.1f} us")
    print(f"overhead of the ranges: {result['overhead']:+.1%} of the profiled step; one range costs "
          f"{statistics.median(per_range) * 1e6:.1f} us ({min(per_range) * 1e6:.1f}-{max(per_range) * 1e6:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""CUDA graphs through roofline's live paths on a GPU: does each replay's row carry its graph's work?

An fp16 MLP's forward (and, for make_graphed_callables, a training step) run as a CUDA graph three ways: captured by
hand with torch.cuda.graph (lazily, on the model's first call, as benchmarks/gpu_sweep_cases.py's cuda_graph_replay),
with torch.cuda.make_graphed_callables, and with torch.compile(mode="reduce-overhead") (CUDA graph trees). Each is
analysed by `roofline analyze`'s path (analyze_model: the capture runs in its warm-up) and by a ProfilingContext (the
`roofline profile` path: the capture runs in the first, waiting, step); one more case captures the graph before
roofline starts (its rows must stay unmodelled, saying why). Each case's total FLOPs is set beside the eager model's
counted FLOPs (count_flops_per_op, the counting pass alone).

    PYTHONPATH=src python3 benchmarks/cuda_graphs_gpu.py OUT_DIR [--cases a,b] [--layers 8 --width 1024 --batch 256]

Writes OUT_DIR/<case>/report.json.gz and report.txt for each case, OUT_DIR/summary.txt (the table printed) and
OUT_DIR/summary.json (per case: total FLOPs, the profiled steps, the eager model's (one step), their ratio per
step, the unmodelled share of the time, the replay rows, the CUDA-graph notes, any error),
rewritten after every case so a later failure or a timeout keeps the earlier ones; prints a table. Each case runs in
its own try/except. Expected on a GPU: ratio 1.000 for every case but reduce_overhead_profile (Inductor's Triton
kernels estimated from their names, ~1) and captured_before_* (the replay unmodelled: ratio ~0, a note).
Budget: about a minute on an H200 (two torch.compile's of a small MLP); cases are skipped past --budget-s.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import torch

GRAPH_LABEL = "CUDA graph replay"


def mlp(layers: int, width: int, device: str, dtype: torch.dtype = torch.float16) -> torch.nn.Module:
    torch.manual_seed(0)
    blocks = [torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.GELU()) for _ in range(layers)]
    return torch.nn.Sequential(*blocks).to(device, dtype)


class LazilyGraphed(torch.nn.Module):
    """``inner``'s forward captured with torch.cuda.graph on the first call (after a side-stream warm-up) and
    replayed on every call after; the output is the graph's static buffer."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.graph: Any = None

    def capture(self, x: torch.Tensor) -> None:
        self.static_in = x.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(3):
                self.inner(self.static_in)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph), torch.no_grad():
            self.static_out = self.inner(self.static_in)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.graph is None:
            self.capture(x)
        self.static_in.copy_(x)
        self.graph.replay()
        return self.static_out


class LazilyMadeGraphed(torch.nn.Module):
    """``torch.cuda.make_graphed_callables(inner, (x,))`` made on the first call (its forward and backward graphs
    captured then), called on every call. It replaces ``inner``'s forward: count the eager model before."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.graphed: Any = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.graphed is None:  # its warm-up takes gradients: made with grad on, whatever the step's mode
            sample = x.detach().clone().requires_grad_(x.requires_grad)
            with torch.enable_grad():
                self.graphed = torch.cuda.make_graphed_callables(self.inner, (sample,))
        return self.graphed(x)


def eager_flops(model: torch.nn.Module, x: torch.Tensor, backward: bool) -> float:
    from roofline.api import count_flops_per_op

    return float(sum(op.flops for op in count_flops_per_op(model, (x,), backward=backward)))


def _ceilings() -> Any:
    from roofline.device import get_ceilings
    from roofline.device.cache import ceilings_for_device_name

    return ceilings_for_device_name(torch.cuda.get_device_name()) or get_ceilings("cuda", quick=True)


def analyze(model: torch.nn.Module, x: torch.Tensor, ceilings: Any, backward: bool = False, warmup: int = 3) -> Any:
    from roofline.analyze.live import analyze_model

    return analyze_model(model, (x,), device="cuda", ceilings=ceilings, warmup=warmup, iters=3, backward=backward,
                         workload=type(model).__name__)


def profile(model: torch.nn.Module, x: torch.Tensor, ceilings: Any, backward: bool = False) -> Any:
    """The ProfilingContext path (`roofline profile`'s capture): 2 waiting steps (the capture runs in the first),
    then timed, warm-up and profiled steps."""
    from roofline.analyze.live import make_step
    from roofline.api import ProfilingContext

    step = make_step(model, (x,), backward=backward)
    context = ProfilingContext(wait=3, warmup=1, active=3, timed=3, device="cuda", ceilings=ceilings,
                               whole_block=False, workload=type(model).__name__)
    with context:
        for _ in range(context.total_steps):
            step()
            context.step()
    return context.report()


def _graph_rows(report: Any) -> list[dict[str, Any]]:
    return [{"name": op.name, "flops": op.flops, "bytes": op.bytes, "dtype": op.dtype, "modeled": op.modeled,
             "kernels": len(op.kernels), "time_s": op.time_s, "phase": op.phase}
            for op in report.ops if op.name.startswith(GRAPH_LABEL)]


def cases(layers: int, width: int, batch: int) -> dict[str, Callable[[Any], tuple[Any, float]]]:
    """name -> run(ceilings) -> (report, the eager model's FLOPs for the same step)."""

    def data() -> tuple[torch.nn.Module, torch.Tensor]:
        return mlp(layers, width, "cuda"), torch.randn(batch, width, device="cuda", dtype=torch.float16)

    def hand(path: Callable) -> Callable:
        def run(ceilings: Any) -> tuple[Any, float]:
            inner, x = data()
            expected = eager_flops(inner, x, False)
            return path(LazilyGraphed(inner), x, ceilings), expected
        return run

    def captured_before(path: Callable) -> Callable:
        def run(ceilings: Any) -> tuple[Any, float]:
            inner, x = data()
            expected = eager_flops(inner, x, False)
            model = LazilyGraphed(inner)
            model.capture(x)  # before roofline starts: its replays stay unmodelled, with a note
            return path(model, x, ceilings), expected
        return run

    def made(path: Callable, backward: bool) -> Callable:
        def run(ceilings: Any) -> tuple[Any, float]:
            inner, x = data()
            expected = eager_flops(inner, x, backward)  # before make_graphed_callables replaces its forward
            return path(LazilyMadeGraphed(inner), x, ceilings, backward=backward), expected
        return run

    def compiled(path: Callable) -> Callable:
        def run(ceilings: Any) -> tuple[Any, float]:
            torch._dynamo.reset()
            inner, x = data()
            model = torch.compile(inner, mode="reduce-overhead")
            expected = eager_flops(inner, x, False)
            return path(model, x, ceilings), expected
        return run

    return {
        "hand_graph_analyze": hand(analyze),
        "hand_graph_profile": hand(profile),
        "captured_before_analyze": captured_before(analyze),
        "captured_before_profile": captured_before(profile),
        "make_graphed_analyze": made(analyze, False),
        "make_graphed_train_analyze": made(analyze, True),
        "make_graphed_train_profile": made(profile, True),
        "reduce_overhead_analyze": compiled(analyze),
        "reduce_overhead_profile": compiled(profile),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--budget-s", type=float, default=140.0, help="skip the cases left once this much has passed")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    table = cases(args.layers, args.width, args.batch)
    names = [n for n in args.cases.split(",") if n] or list(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        print(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(table)}", file=sys.stderr)
        return 2
    summary: dict[str, Any] = {"torch": torch.__version__, "command": " ".join(sys.argv), "cases": {},
                               "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "none",
                               "model": {"layers": args.layers, "width": args.width, "batch": args.batch}}

    def write() -> None:
        summary["elapsed_s"] = round(time.perf_counter() - start, 1)
        (args.out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")

    ceilings = None
    for name in names:
        entry: dict[str, Any] = {}
        summary["cases"][name] = entry
        if not torch.cuda.is_available():
            entry["skipped"] = "needs a CUDA GPU"
            continue
        if time.perf_counter() - start > args.budget_s:
            entry["skipped"] = f"past the {args.budget_s:g} s budget"
            continue
        t0 = time.perf_counter()
        try:
            if ceilings is None:
                ceilings = _ceilings()
            report, expected = table[name](ceilings)
            from roofline.render.console import render_report

            (args.out / name).mkdir(exist_ok=True)
            report.save(args.out / name / "report.json.gz")
            (args.out / name / "report.txt").write_text(render_report(report) + "\n")
            total = report.summary.total_flops
            steps = max(1, report.steps)  # a profile's totals cover every profiled step; the eager count is one
            entry.update(total_flops=total, steps=steps, eager_flops=expected,
                         ratio=total / steps / expected if expected else None,
                         unmodeled_time_share=report.summary.unmodeled_time_share, replay_rows=_graph_rows(report),
                         graph_notes=[n for n in report.summary.notes if "CUDA graph" in n],
                         graphs_captured=report.extra.get("cuda_graphs"))
        except Exception as exc:  # noqa: BLE001 - one case's failure keeps the others
            entry["error"] = f"{type(exc).__name__}: {exc}"
            entry["traceback"] = traceback.format_exc()
        entry["seconds"] = round(time.perf_counter() - t0, 1)
        write()
    write()
    lines = [f"{'case':28s} {'FLOPs':>12s} {'steps':>5s} {'eager':>12s} {'ratio':>7s} {'unmod':>6s} {'replays':>7s}  error/skip"]
    for name, e in summary["cases"].items():
        ratio = f"{e['ratio']:.3f}" if e.get("ratio") is not None else "-"
        share = f"{e['unmodeled_time_share']:.1%}" if "unmodeled_time_share" in e else "-"
        lines.append(f"{name:28s} {e.get('total_flops', 0):12.4g} {e.get('steps', 1):5d} {e.get('eager_flops', 0):12.4g} "
                     f"{ratio:>7s} "
                     f"{share:>6s} {len(e.get('replay_rows', [])):7d}  {(e.get('error') or e.get('skipped') or '')[:80]}")
    lines.append(f"elapsed {summary['elapsed_s']} s on {summary['device']}, torch {summary['torch']}")
    (args.out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"summary: {args.out / 'summary.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

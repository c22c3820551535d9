"""Where a CPU trace's host time goes in `roofline trace`'s op table: the report's total against the top-level
events' host time, and the host time of the events the table holds no row for (outside their children), by kind.

    PYTHONPATH=src python benchmarks/cpu_own_time.py TRACE... [--record DIR]

With --record DIR, first records two fresh CPU traces into DIR (torchvision's resnet18 in eval, 2 steps; an
nn.TransformerEncoder's forward + backward + SGD step, 2 steps) and adds them to the list. Run it with another
checkout's src on PYTHONPATH for that version's figures (benchmarks/results/cpu_own_time_2026-12-02.md: before
and after the own-time rows).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from roofline.analyze.join import children_index, choose_without_recording, roots_by_step
from roofline.analyze.optimizer_lists import OptimizerLists
from roofline.analyze.pipeline import _TraceCounter
from roofline.analyze.trace_file import analyze_trace
from roofline.capture.kineto import load_trace
from roofline.capture.trace_model import Trace, is_autograd_frame
from roofline.count.counting import is_composite_op


def record(out: Path) -> list[Path]:
    import torch
    import torchvision
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(0)
    torch.set_num_threads(1)
    paths = []

    def traced(name, step):
        path = out / f"{name}.json"
        for _ in range(2):
            step()
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                     schedule=schedule(wait=0, warmup=1, active=2),
                     on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
            for _ in range(3):
                step()
                prof.step()
        paths.append(path)

    net = torchvision.models.resnet18(num_classes=10).eval()
    x = torch.randn(2, 3, 64, 64)

    def infer():
        with torch.no_grad():
            net(x)

    traced("resnet18_eval", infer)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, 2)
    opt = torch.optim.SGD(enc.parameters(), lr=0.01)
    src = torch.randn(4, 16, 64)

    def train():
        opt.zero_grad()
        enc(src).sum().backward()
        opt.step()

    traced("transformer_train", train)
    return paths


def _kind(trace: Trace, idx: int, is_row) -> str:
    op = trace.ops[idx]
    if op.is_annotation:
        return "annotation"
    if is_autograd_frame(op.name):
        return "autograd frame"
    if is_composite_op(op.name):
        return "composite op"
    return "op with a formula (batched below)" if is_row(op) else "op without a formula"


def outside_rows(trace: Trace) -> tuple[float, Counter, Counter, Counter]:
    """(top-level host time, and by (kind, name): own host time of events in no row, their calls)."""
    children = children_index(trace)
    roots = [i for step, idx in roots_by_step(trace).items() if step is not None or not trace.steps for i in idx]
    counter = _TraceCounter(OptimizerLists(trace), trace, children)

    def is_row(op):
        cost = counter(op).cost
        return cost.modeled or cost.keep_whole

    chosen = choose_without_recording(trace, roots, children, is_row)
    whole = {c.event for c in chosen if not c.self_only}
    own_rows = {c.event for c in chosen if c.self_only}
    lost, calls, by_kind = Counter(), Counter(), Counter()
    stack = list(roots)
    while stack:
        i = stack.pop()
        if i in whole:
            continue
        kids = children.get(i, [])
        stack.extend(kids)
        if i in own_rows:
            continue
        key = (_kind(trace, i, is_row), trace.ops[i].name)
        own = max(0.0, trace.ops[i].dur_us - sum(trace.ops[k].dur_us for k in kids))
        lost[key] += own
        calls[key] += 1
        by_kind[key[0]] += own
    return sum(trace.ops[i].dur_us for i in roots), lost, calls, by_kind


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--record", type=Path)
    args = parser.parse_args()
    paths = list(args.traces) + (record(args.record) if args.record else [])
    for path in paths:
        trace = load_trace(path, split=True)
        report = analyze_trace(trace)
        total_ms = report.summary.total_time_s * 1e3
        top_us, lost, calls, by_kind = outside_rows(trace)
        top_ms = top_us / 1e3
        gap_ms = round(top_ms - total_ms, 6) + 0.0  # no "-0.000" from the sums' last bits
        print(f"{path.name}: {len(trace.steps)} step(s), {len(report.ops)} rows; table {total_ms:.3f} ms of "
              f"{top_ms:.3f} ms top-level host time; {gap_ms:.3f} ms ({gap_ms / top_ms:.1%}) "
              f"in no row; unmodelled {report.summary.unmodeled_time_share:.1%}, 'launch' "
              f"{report.summary.share_by_bound.get('launch', 0.0):.1%} of the table")
        for kind, us in by_kind.most_common():
            print(f"  {kind}: {us / 1e3:.3f} ms")
        for (kind, name), us in lost.most_common(6):
            print(f"    {name} ({kind}) x{calls[(kind, name)]}: {us / 1e3:.3f} ms")


if __name__ == "__main__":
    main()

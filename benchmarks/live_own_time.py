"""A live CPU report's op table against the trace it kept: `roofline analyze` / `roofline profile` (a counting pass
joined to the trace) and `roofline trace` of the same trace.json.gz should agree on where a step's host time goes.

    PYTHONPATH=src python benchmarks/live_own_time.py DIR...
    PYTHONPATH=src python -m roofline analyze benchmarks/live_own_time.py:encoder --device cpu --backward -o DIR

DIR: a live command's output directory (report.json and trace.json.gz). For each, prints the live report's total
(medians over the profiled steps), the trace report's total per profiled step, and by op name the host time per
step the trace report holds and the live one does not (the ops whose own time, outside their children, the live
join dropped). Results: benchmarks/results/live_own_time_2026-12-02.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from pathlib import Path

from roofline.analyze.join import children_index, roots_by_step
from roofline.analyze.trace_file import analyze_trace
from roofline.capture.kineto import load_trace
from roofline.capture.trace_model import Trace, is_autograd_frame


def encoder():
    """The TransformerEncoder of the results, for `roofline analyze benchmarks/live_own_time.py:encoder --device cpu
    --backward` (and :encoder_eval, its eval-mode twin)."""
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    return model, (torch.randn(4, 16, 64),)


def encoder_eval():
    model, inputs = encoder()
    return model.eval(), inputs


def per_name_s(ops, steps: int) -> Counter:
    time = Counter()
    for op in ops:
        time[op.get("name") if isinstance(op, dict) else op.name] += (
            op["time_s"] if isinstance(op, dict) else op.time_s) / steps
    return time


def step_op_time_ms(trace: Trace) -> float:
    """The median over the profiled steps of their top-level events' host time, less the own time (outside their
    children) of the events that are not ops: the autograd engine's frames and annotations."""
    children = children_index(trace)
    per_step = Counter()
    for step, roots in roots_by_step(trace).items():
        if step is not None:
            per_step[step] += sum(trace.ops[i].dur_us for i in roots)
    for op in trace.ops:
        if op.step is not None and op.step >= 0 and (op.is_annotation or is_autograd_frame(op.name)) \
                and not op.name.startswith("ProfilerStep#"):
            per_step[op.step] -= op.dur_us - sum(trace.ops[k].dur_us for k in children.get(op.index, []))
    return statistics.median(per_step.values()) / 1e3 if per_step else 0.0


def row_medians_ms(rows_by_step: dict) -> float:
    """The trace table's rows, each the median over the steps of its time (the k-th row of every step), summed: what
    a live report's table, a median per op, compares with (a sum of medians is below the median of the sums when
    the noise is one-sided); nan where the steps' rows differ in number."""
    counts = {len(rows) for rows in rows_by_step.values()}
    if len(counts) != 1:
        return float("nan")
    return sum(statistics.median(times) for times in zip(*rows_by_step.values())) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dirs", nargs="+", type=Path)
    args = parser.parse_args()
    for out in args.dirs:
        live = json.loads((out / "report.json").read_text())
        trace = load_trace(out / "trace.json.gz")
        steps = max(1, len(trace.steps))
        from_trace = analyze_trace(trace)
        live_ms = live["summary"]["total_time_s"] * 1e3
        trace_ms = from_trace.summary.total_time_s * 1e3 / steps
        rows_by_step: dict = {}
        for op in from_trace.ops:
            rows_by_step.setdefault(op.step, []).append(op.time_s)
        median_ms = statistics.median(map(sum, rows_by_step.values())) * 1e3 if rows_by_step else 0.0
        medians_ms = row_medians_ms(rows_by_step)
        wall = live["summary"].get("wall_time_s")
        ops_ms = step_op_time_ms(trace)
        print(f"{out}: live table {live_ms:.3f} ms ({len(live['ops'])} rows); ops' host time {ops_ms:.3f} ms a step "
              f"(median of {steps}); live/ops {live_ms / ops_ms:.1%}; trace table {trace_ms:.3f} ms a step "
              f"(median step {median_ms:.3f} ms, {len(from_trace.ops) // steps} rows a step; its rows' medians "
              f"over the steps sum to {medians_ms:.3f} ms, live/that {live_ms / medians_ms:.1%}); "
              f"profiled step wall {wall * 1e3 if wall else float('nan'):.3f} ms")
        live_names = per_name_s(live["ops"], 1)
        trace_names = per_name_s(from_trace.ops, steps)
        gaps = Counter({name: trace_names[name] - live_names.get(name, 0.0) for name in trace_names})
        for name, gap in gaps.most_common(8):
            if gap <= 0:
                break
            print(f"    {name}: trace {trace_names[name] * 1e3:.3f} ms, live {live_names.get(name, 0.0) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()

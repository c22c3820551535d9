"""Data-dependent ops from a GPU trace: what the profiler records below `nonzero`, `argwhere` and a boolean-mask
index on CUDA, and whether roofline counts them from it (analyze/resized_outputs.py, analyze/index_lists.py: on a
CPU the result's size comes from the resize ATen records below the op).

    PYTHONPATH=src python3 benchmarks/data_dependent_gpu.py OUT_DIR [--device cuda]

Writes OUT_DIR/trace.json (the trace), OUT_DIR/data_dependent.json (per op: modelled, FLOPs, bytes, the names and
concrete arguments of the events below it) and prints a table. The expected FLOPs and bytes are worked out here from
the live tensors (the mask's true count), beside roofline's count from the trace.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

OPS = ("aten::nonzero", "aten::argwhere", "aten::index")


def _workload(device: str):
    torch.manual_seed(0)
    x = torch.randn(4096, 256, device=device)
    mask = torch.rand(4096, device=device) > 0.5
    grid = torch.rand(4096, 256, device=device) > 0.7

    def step():
        torch.nonzero(mask)
        torch.argwhere(grid)
        x[mask]
        x[grid]

    rows, hits = int(mask.sum()), int(grid.sum())
    expected = {
        "aten::nonzero": (4096.0, 4096 + rows * 1 * 8),
        "aten::argwhere": (4096.0 * 256, 4096 * 256 + hits * 2 * 8),
        "x[mask]": (4096.0, 4096 + rows * 8 + 2 * rows * 256 * 4 + rows * 8),
        "x[grid]": (4096.0 * 256, 4096 * 256 + hits * 2 * 8 + 2 * hits * 4 + 2 * hits * 8),
    }
    return step, expected


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    from roofline.analyze.join import children_index
    from roofline.analyze.trace_file import analyze_trace_file
    from roofline.capture.kineto import load_trace

    step, expected = _workload(args.device)
    step()
    activities = [torch.profiler.ProfilerActivity.CPU]
    if args.device.startswith("cuda"):
        activities.append(torch.profiler.ProfilerActivity.CUDA)
        torch.cuda.synchronize()
    path = args.out / "trace.json"
    with torch.profiler.profile(activities=activities, record_shapes=True) as prof:
        step()
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
    prof.export_chrome_trace(str(path))
    report = analyze_trace_file(path)
    trace = load_trace(path)
    children = children_index(trace)

    def below(idx: int, depth: int = 0) -> list:
        out = []
        for k in children.get(idx, []):
            ev = trace.ops[k]
            out.append({"depth": depth, "name": ev.name, "dims": ev.input_dims, "types": ev.input_types,
                        "concrete": ev.concrete_inputs})
            out.extend(below(k, depth + 1))
        return out

    events = [ev for ev in trace.ops if ev.name in OPS and (ev.parent < 0 or trace.ops[ev.parent].name not in OPS)]
    row_of = {(o.name, o.external_id): o for o in report.ops}
    labels = iter(["aten::nonzero", "aten::argwhere", "x[mask]", "x[grid]"])
    rows = []
    for ev in events:
        label = next(labels, ev.name)
        want = expected.get(label)
        op = row_of.get((ev.name, ev.external_id))
        if op is None:  # not a row of its own: counted through the rows below it
            rows.append({"op": label, "event": ev.name, "modeled": None, "flops": 0.0, "bytes": 0.0,
                         "expected_flops": want[0] if want else None, "expected_bytes": want[1] if want else None,
                         "below": below(ev.index)})
            continue
        rows.append({"op": label, "event": ev.name, "modeled": op.modeled, "flops": op.flops, "bytes": op.bytes,
                     "expected_flops": want[0] if want else None, "expected_bytes": want[1] if want else None,
                     "below": below(ev.index)})
    result = {"device": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
              "torch": torch.__version__, "command": " ".join(sys.argv), "ops": rows,
              "unmodeled_time_share": report.summary.unmodeled_time_share}
    (args.out / "data_dependent.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"{'op':16s} {'modelled':8s} {'FLOPs':>12s} {'expected':>12s} {'bytes':>12s} {'expected':>12s}  below")
    for r in rows:
        names = ",".join(sorted({b['name'].replace('aten::', '') for b in r['below']}))
        print(f"{r['op']:16s} {str(r['modeled']):8s} {r['flops']:12.0f} {r['expected_flops'] or 0:12.0f} "
              f"{r['bytes']:12.0f} {r['expected_bytes'] or 0:12.0f}  {names[:90]}")
    print(f"unmodelled share of the trace's time: {report.summary.unmodeled_time_share:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

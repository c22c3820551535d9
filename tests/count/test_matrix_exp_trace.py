"""matrix_exp from a trace: counted with the matrix products recorded below it (analyze/recorded_products.py), as
many as the live count makes from the matrices' norms. It was one unmodelled row: a trace holds no norm."""

from __future__ import annotations

import json

import torch

from roofline.capture.op_recorder import record_ops
from roofline.count.linalg import NO_NORM


def _matrices(norms, n, dtype):
    torch.manual_seed(0)
    m = torch.randn(len(norms), n, n, dtype=dtype)
    return m * (torch.tensor(norms, dtype=torch.float64) / m.abs().sum(-2).amax(-1).double()).to(dtype)[:, None, None]


CASES = [(_matrices([v], 12, torch.float32)[0], "single float32") for v in (1e-9, 1e-3, 0.3, 1.0, 2.0, 20.0)] + [
    (_matrices([0.5], 12, torch.float64)[0], "single float64, degree 18"),
    (_matrices([10.0], 8, torch.complex64)[0], "complex64, 2 squarings"),
    (_matrices([0.01, 0.3, 5.0, 100.0], 8, torch.float32), "batch: degree 18 each, squarings 0 to 6"),
]


def _traced(tmp_path, cpu_ceilings, edit=None):
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace

    path = tmp_path / "mexp.json"
    for a, _ in CASES:
        torch.linalg.matrix_exp(a)  # warm
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        for a, _ in CASES:
            torch.linalg.matrix_exp(a)
    prof.export_chrome_trace(str(path))
    if edit is not None:
        trace = json.loads(path.read_text())
        trace["traceEvents"] = [e for e in trace["traceEvents"] if edit(e)]
        path.write_text(json.dumps(trace))
    report = report_from_trace(load_trace(str(path)), cpu_ceilings)
    return [o for o in report.ops if o.name == "aten::linalg_matrix_exp"], report.summary.notes


def test_matrix_exp_from_a_trace_counts_the_products_recorded_below_it(tmp_path, cpu_ceilings):
    traced, _ = _traced(tmp_path, cpu_ceilings)
    live = []
    for a, _ in CASES:
        (op,) = [op for op in record_ops(lambda: torch.linalg.matrix_exp(a)).ops if "matrix_exp" in op.name]
        live.append((op.cost.flops, op.cost.bytes))
    assert len(traced) == len(CASES) and all(o.modeled for o in traced)
    assert [(o.flops, o.bytes) for o in traced] == live
    assert traced[0].flops == 0 and all(o.flops > 0 for o in traced[1:])  # degree 1: I + A, no product


def test_without_its_products_recorded_it_stays_unmodelled(tmp_path, cpu_ceilings):
    """A trace that kept no event below matrix_exp: no product count to read, so no count."""
    traced, notes = _traced(tmp_path, cpu_ceilings,
                            edit=lambda e: e.get("cat") != "cpu_op" or e.get("name") == "aten::linalg_matrix_exp")
    assert len(traced) == len(CASES) and not any(o.modeled or o.flops for o in traced)
    assert any(NO_NORM in n for n in notes)

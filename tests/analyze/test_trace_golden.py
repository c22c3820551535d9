"""The trace path's numbers on every trace in tests/data, pinned: per op name the count, time, FLOPs, bytes and
bounds, the summary's totals, and a digest of every op row and kernel row (times, FLOPs, bytes, bound, module,
source line, step, kernels). The invariants (test_trace_invariants) say the numbers add up; this says they did not
move. Each family's formula is checked against an independent figure in tests/count; these pins catch a change in
how those formulas meet real traces (the join, the attribution, the reader) that keeps every sum consistent.

A deliberate change of a number: regenerate with
    ROOFLINE_REGEN_GOLDEN=1 PYTHONPATH=src python -m pytest -q tests/analyze/test_trace_golden.py
and say in the commit which numbers moved and why (the failure lists the op names whose totals changed)."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path

import pytest

from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace
from roofline.report import Ceilings

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "golden_trace_reports.json"
TRACES = sorted([*(DATA / "h200").glob("*.json.gz"), *(DATA / "hta").rglob("*.json.gz")])
CEILINGS = Ceilings(
    device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.8e12,
    peak_flops_per_s={"float32": 67e12, "tfloat32": 494.7e12, "float16": 989.4e12, "bfloat16": 989.4e12},
    launch_overhead_s=5e-6, source="datasheet",
)


def _r(x):
    """Nine significant digits: exact for this arithmetic, deaf to the last bit of a summation order."""
    if isinstance(x, float):
        return float(f"{x:.9g}")
    if isinstance(x, (list, tuple)):
        return [_r(v) for v in x]
    if isinstance(x, dict):
        return {k: _r(v) for k, v in sorted(x.items())}
    return x


def _sha(rows) -> str:
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:16]


def digest(path: Path) -> dict:
    report = report_from_trace(load_trace(path), CEILINGS)
    s = report.summary
    by_name: dict[str, list] = {}
    for op in report.ops:
        row = by_name.setdefault(op.name, [0, 0.0, 0.0, 0.0, Counter()])
        row[0] += 1
        row[1] += op.time_s
        row[2] += op.flops
        row[3] += op.bytes
        row[4][op.bound] += 1
    ops = [[op.name, op.module, op.dtype, op.flops, op.bytes, op.time_s, op.bound, op.source, op.phase, op.step,
            op.input_shapes, op.input_dtypes, op.input_strides, op.modeled, op.kernels, op.start_s, op.cpu_time_s,
            op.external_id, op.predicted_time_s, op.efficiency, op.above_roof, op.arithmetic_intensity]
           for op in report.ops]
    kernels = [[k.name, k.start_s, k.dur_s, k.stream, k.device, k.category, k.op_index] for k in report.kernels]
    return _r({
        "summary": {"total_time_s": s.total_time_s, "total_flops": s.total_flops, "total_bytes": s.total_bytes,
                    "predicted_total_s": s.predicted_total_s, "time_by_bound_s": s.time_by_bound_s,
                    "unmodeled_time_share": s.unmodeled_time_share,
                    "kernel_time_attributed_share": s.kernel_time_attributed_share,
                    "kernel_time_total_s": s.kernel_time_total_s, "idle_time_s": s.idle_time_s,
                    "wall_time_s": s.wall_time_s, "ops_above_roof": s.ops_above_roof, "steps": report.steps,
                    "timing_method": s.timing_method, "notes": s.notes},
        "by_name": {name: [c, t, f, b, dict(bounds)] for name, (c, t, f, b, bounds) in sorted(by_name.items())},
        "ops": _sha(_r(ops)),
        "kernels": _sha(_r(kernels)),
    })


def _key(path: Path) -> str:
    return str(path.relative_to(DATA))


@pytest.fixture(scope="module")
def golden() -> dict:
    if os.environ.get("ROOFLINE_REGEN_GOLDEN"):
        GOLDEN.write_text(json.dumps({_key(p): digest(p) for p in TRACES}, indent=1, sort_keys=True) + "\n")
    return json.loads(GOLDEN.read_text())


def test_every_trace_in_tests_data_is_pinned(golden):
    assert len(TRACES) >= 8
    assert sorted(golden) == sorted(_key(p) for p in TRACES)


@pytest.mark.parametrize("path", TRACES, ids=_key)
def test_trace_report_numbers_are_pinned(path, golden):
    got, want = digest(path), golden[_key(path)]
    assert got["summary"] == want["summary"]
    moved = {n: (want["by_name"].get(n), got["by_name"].get(n)) for n in set(got["by_name"]) | set(want["by_name"])
             if want["by_name"].get(n) != got["by_name"].get(n)}
    assert not moved, f"per-name totals moved (pinned, now): {moved}"
    assert got["ops"] == want["ops"], "an op row changed (module, source, step, shapes, start...) with same totals"
    assert got["kernels"] == want["kernels"], "the kernel timeline changed"

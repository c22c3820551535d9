"""Attribution's column passes give what the per-op walks they replaced gave, to the bit, on a real H200 training
trace: every op's total_kernel_us (own kernels plus its children's totals)."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.analyze.attribution import attribute
from roofline.capture.kineto import load_trace

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


def test_op_totals_are_the_reverse_walks_sums_bit_for_bit():
    path = H200 / "llama_tiny_train_fp16_b2_s256.json.gz"
    if not path.exists():
        pytest.skip(f"fixture {path.name} not present")
    trace = load_trace(path)
    attribute(trace)
    walked = [op.self_kernel_us for op in trace.ops]
    for op in reversed(trace.ops):
        if op.parent >= 0:
            walked[op.parent] += walked[op.index]
    assert [op.total_kernel_us for op in trace.ops] == walked
    assert sum(1 for op in trace.ops if op.total_kernel_us > op.self_kernel_us) > 100  # nested kernels summed up

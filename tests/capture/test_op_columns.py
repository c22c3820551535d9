"""Trace.columns (capture/trace_model.py OpColumns): the loader's columns equal what the ops say, and ops replaced
or built by hand get columns read from them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from roofline.capture.kineto import load_trace
from roofline.capture.trace_model import CpuOp, Trace, op_columns

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


def test_the_loaders_columns_are_the_ops_own_values():
    path = H200 / "llama_tiny_train_fp16_b2_s256.json.gz"
    if not path.exists():
        pytest.skip(f"fixture {path.name} not present")
    trace = load_trace(path)
    columns = op_columns(trace)
    assert columns is trace.columns  # the loader's, not rebuilt
    assert columns.parent.tolist() == [op.parent for op in trace.ops]
    assert columns.depth.tolist() == [op.depth for op in trace.ops]
    assert columns.step.tolist() == [-1 if op.step is None else op.step for op in trace.ops]
    assert columns.ts_us.tolist() == [op.ts_us for op in trace.ops]
    assert max(columns.depth) >= 3 and set(columns.step.tolist()) >= {0, 1}
    marked = np.flatnonzero(columns.named(lambda name: name.startswith("ProfilerStep#"))).tolist()
    assert marked == [op.index for op in trace.ops if op.name.startswith("ProfilerStep#")] and len(marked) == 2


def test_replaced_or_hand_built_ops_get_columns_read_from_them():
    ops = [CpuOp(0, "ProfilerStep#3", 0.0, 10.0, 1, 1, step=0),
           CpuOp(1, "aten::mm", 1.0, 2.0, 1, 1, parent=0, depth=1, step=0),
           CpuOp(2, "aten::add", 20.0, 1.0, 1, 1)]
    trace = Trace(path="t", ops=ops)
    columns = op_columns(trace)
    assert (columns.parent.tolist(), columns.depth.tolist(), columns.step.tolist()) == ([-1, 0, -1], [0, 1, 0],
                                                                                         [0, 0, -1])
    assert columns.named(lambda name: name.startswith("aten::")).tolist() == [False, True, True]
    trace.ops = ops[:2]
    assert op_columns(trace).parent.tolist() == [-1, 0]

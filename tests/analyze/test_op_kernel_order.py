"""An op row's kernels are listed in the order they ran. A composite op's kernels are gathered over its subtree,
which is walked last child first: slice_backward's and constant_pad_nd's copy was listed before the fill that ran
before it (2,100 of the 1 M-event trace's 127,620 rows)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace
from roofline.report import Ceilings

DATA = Path(__file__).resolve().parents[1] / "data" / "h200"
CEILINGS = Ceilings(device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.8e12,
                    peak_flops_per_s={"float32": 67e12, "float16": 989.4e12, "bfloat16": 989.4e12},
                    launch_overhead_s=5e-6, source="datasheet")


@pytest.mark.parametrize("name", ["llama_tiny_train_fp16_b2_s256.json.gz", "resnet50_fwd_fp32_b32.json.gz"])
def test_each_rows_kernels_are_its_kernel_rows_by_start(name):
    report = report_from_trace(load_trace(DATA / name), CEILINGS)
    ran = defaultdict(list)
    for kernel in report.kernels:
        if kernel.op_index is not None and kernel.op_index >= 0:
            ran[kernel.op_index].append((kernel.start_s, kernel.name))
    several = [i for i, op in enumerate(report.ops) if len(op.kernels) > 1]
    assert several
    for i, op in enumerate(report.ops):
        assert op.kernels == [kernel for _, kernel in sorted(ran.get(i, []))], op.name

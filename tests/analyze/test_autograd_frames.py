"""Autograd engine frames (AddBackward0, evaluate_function wrappers, AccumulateGrad) are never report ops."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace
from roofline.capture.trace_model import is_autograd_frame

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("name,frame", [
    ("AddBackward0", True), ("autograd::engine::evaluate_function: MmBackward0", True),
    ("torch::autograd::AccumulateGrad", True), ("CudnnConvolutionBackward0", True),
    ("aten::convolution_backward", False), ("aten::add", False), ("ProfilerStep#3", False),
])
def test_autograd_frame_names(name, frame):
    assert is_autograd_frame(name) is frame


def test_residual_backward_has_no_unmodelled_autograd_rows(tmp_path, cpu_ceilings):
    torch.manual_seed(0)
    linear = nn.Linear(16, 16)
    x = torch.randn(8, 16, requires_grad=True)
    (linear(x) + x).relu().sum().backward()  # warm: a cold first call's own time is set-up, not dispatch
    with torch.profiler.profile(record_shapes=True) as prof:
        (linear(x) + x).relu().sum().backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = load_trace(str(path))
    assert any(op.name == "AddBackward0" for op in trace.ops)
    report = report_from_trace(trace, cpu_ceilings)
    names = [op.name for op in report.ops]
    assert not [n for n in names if is_autograd_frame(n)], names
    assert [op.name for op in report.ops if not op.modeled] == []
    assert names.count("aten::mm") == 2

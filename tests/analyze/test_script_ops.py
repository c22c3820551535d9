"""A TorchScript model whose graph runs ops outside the dispatcher says so (analyze/script_ops.py): sweep 8's frozen,
optimize_for_inference'd conv net ran both convolutions as prim::mkldnn_convolution, which neither the profiler nor
the counting pass sees, and its report read 134 kFLOPs of a 13 MFLOP model without a word."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from roofline.analyze.live import analyze_model
from roofline.analyze.script_ops import UNSEEN_NOTE, note_unseen_script_ops, unseen_script_ops
from roofline.report import Ceilings, Report, Timing

CPU = Ceilings(device="cpu", device_name="cpu", memory_bandwidth_bytes_per_s=3e10,
               peak_flops_per_s={"float32": 3e11}, launch_overhead_s=2e-6, source="measured")


def _convnet() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.Conv2d(8, 8, 3, padding=1), nn.ReLU()).eval()


def _optimized() -> torch.jit.ScriptModule:
    if not torch.backends.mkldnn.is_available():
        pytest.skip("no MKLDNN in this torch build: optimize_for_inference keeps aten convolutions")
    return torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(_convnet())))


def _unseen(report: Report) -> list[str]:
    return [n for n in report.summary.notes if UNSEEN_NOTE in n]


def test_only_a_graph_with_undispatched_ops_is_noted():
    assert unseen_script_ops(_optimized()) == {"prim::mkldnn_convolution": 2}
    assert not unseen_script_ops(_convnet())  # eager: every op dispatched
    assert not unseen_script_ops(torch.jit.script(_convnet()))  # scripted, not optimized: aten ops
    report = Report()
    report.summary.total_time_s, report.steps = 0.0003, 3
    report.step_time = Timing(median_s=0.0004, n=3)
    note_unseen_script_ops(report, _optimized())
    [note] = _unseen(report)
    assert "2 ops outside the dispatcher (prim::mkldnn_convolution x2" in note
    assert "holds 100 us of the 400 us step" in note


def test_analyze_of_a_frozen_optimized_model_says_its_convolutions_are_unseen():
    x = torch.randn(2, 3, 16, 16)
    report = analyze_model(_optimized(), (x,), device="cpu", ceilings=CPU, warmup=1, iters=1)
    assert not any("convolution" in op.name for op in report.ops)  # the profiler and the counting pass saw none
    [note] = _unseen(report)
    assert "prim::mkldnn_convolution x2" in note
    eager = analyze_model(_convnet(), (x,), device="cpu", ceilings=CPU, warmup=1, iters=1)
    assert not _unseen(eager) and any("convolution" in op.name for op in eager.ops)

"""Quantized linears and convolutions read back from a torch.profiler trace, whose prepacked weights it does not
record (second model sweep: 51.6% of a static-int8 trace unmodelled). A linear is counted from the output its
children allocate, as the live counting pass counts it; a convolution stays one unmodelled row that says why."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest
import torch
import torch.ao.quantization as tq

from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace

sys.path.insert(0, str(Path(__file__).parents[1] / "count"))
from count_recording import OpCollector  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.backends.quantized.supported_engines, reason="no quantized engine")


class _Static(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.conv, self.relu = torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()
        self.pool, self.fc = torch.nn.AdaptiveAvgPool2d(1), torch.nn.Linear(4, 10)

    def forward(self, x):
        return self.dequant(self.fc(self.pool(self.relu(self.conv(self.quant(x)))).flatten(1)))


@pytest.fixture(scope="module")
def models():
    engines = torch.backends.quantized.supported_engines
    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = "x86" if "x86" in engines else ("fbgemm" if "fbgemm" in engines else engines[-1])
    try:
        torch.manual_seed(0)
        static = _Static().eval()
        static.qconfig = tq.get_default_qconfig(torch.backends.quantized.engine)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tq.fuse_modules(static, [["conv", "relu"]], inplace=True)
            tq.prepare(static, inplace=True)
            static(torch.randn(2, 3, 8, 8))
            tq.convert(static, inplace=True)
            dynamic = tq.quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(16, 6)), {torch.nn.Linear},
                                          dtype=torch.qint8)
        yield static, dynamic
    finally:
        torch.backends.quantized.engine = previous


def _run(models, x_static, x_dynamic):
    static, dynamic = models
    with torch.no_grad():
        static(x_static)
        dynamic(x_dynamic)


def test_a_trace_counts_quantized_linears_as_the_live_pass_does(models, tmp_path, cpu_ceilings):
    x_static, x_dynamic = torch.randn(2, 3, 8, 8), torch.randn(3, 16)
    path = tmp_path / "quant.json"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        _run(models, x_static, x_dynamic)
    prof.export_chrome_trace(str(path))
    report = report_from_trace(load_trace(str(path)), cpu_ceilings)
    rows = {op.name: op for op in report.ops if op.name.startswith("quantized::")}
    with OpCollector() as collector:
        _run(models, x_static, x_dynamic)
    live = {op.name: op.cost() for op in collector.ops if op.name.startswith("quantized::")}

    linear, dynamic = rows["quantized::linear"], rows["quantized::linear_dynamic"]
    assert (linear.flops, dynamic.flops) == (2 * 2 * 4 * 10, 2 * 3 * 16 * 6)
    # int8 in (2x4) and out (2x10), the (10, 4) int8 weight, the float32 bias; float in and out for the dynamic one
    assert linear.bytes == 8 + 20 + 40 + 40
    assert dynamic.bytes == 3 * 16 * 4 + 3 * 6 * 4 + 6 * 16 + 6 * 4
    for name in ("quantized::linear", "quantized::linear_dynamic"):
        assert (rows[name].flops, rows[name].bytes) == (live[name].flops, live[name].bytes), name

    conv = rows["quantized::conv2d_relu"]
    assert not conv.modeled and live["quantized::conv2d_relu"].modeled
    assert not [op for op in report.ops if op.name in ("aten::_empty_affine_quantized", "aten::q_scale")]
    assert any(note.startswith("quantized::conv2d_relu unmodelled") and "kernel size" in note
               for note in report.summary.notes)

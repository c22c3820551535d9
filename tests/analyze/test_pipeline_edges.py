"""report_from_trace's smaller rules: the TF32 roof from the live run's flags (cuBLAS's for matmuls, cuDNN's for
convolutions) when no kernel name says, streams that are not numbers, and the live entry points reached lazily
from the torch-free module."""

from __future__ import annotations

import pytest

import roofline.analyze.pipeline as pipeline
from roofline.analyze.pipeline import _roof_dtype
from roofline.capture.trace_syncs import int_or_none
from roofline.capture.recording import Tf32Flags


@pytest.mark.parametrize("dtype, name, kernels, flags, on_gpu, want", [
    ("float32", "aten::mm", [], Tf32Flags(matmul=True), True, "tfloat32"),
    ("float32", "aten::mm", [], Tf32Flags(cudnn=True), True, "float32"),
    ("float32", "aten::convolution", [], Tf32Flags(cudnn=True), True, "tfloat32"),
    ("float32", "aten::convolution", [], Tf32Flags(matmul=True), True, "float32"),
    ("float32", "aten::mm", [], Tf32Flags(matmul=True), False, "float32"),  # CPU: no TF32
    ("float32", "aten::mm", ["ampere_sgemm_128x64_nn"], Tf32Flags(matmul=True), True, "float32"),  # kernels say
    ("float32", "aten::linear", ["sm80_xmma_gemm_tf32f32_tf32f32_f32"], Tf32Flags(), True, "tfloat32"),
    ("float32", "aten::add", ["x_tf32_y"], Tf32Flags(matmul=True), True, "float32"),  # not a matmul or conv
    ("float16", "aten::mm", [], Tf32Flags(matmul=True), True, "float16"),
])
def test_tf32_roof(dtype, name, kernels, flags, on_gpu, want):
    assert _roof_dtype(dtype, name, kernels, flags, on_gpu) == want


def test_streams_that_are_not_numbers_and_the_lazy_live_entry_points():
    assert int_or_none(7) == 7 and int_or_none("7") == 7 and int_or_none("s1") is None
    assert int_or_none(None) is None
    assert callable(pipeline.analyze_model) and pipeline.make_step.__module__ == "roofline.analyze.live"
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        pipeline.nope  # noqa: B018


def test_report_from_trace_takes_the_trace_and_roofs_by_name_and_its_options_by_name_only():
    from pathlib import Path

    from roofline.capture.kineto import load_trace
    from roofline.report import Ceilings

    trace = load_trace(Path(__file__).resolve().parents[1] / "data" / "h200" / "bad_syncs_fwd_fp32.json.gz")
    roofs = Ceilings(device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.8e12,
                     peak_flops_per_s={"float32": 67e12}, launch_overhead_s=5e-6)
    report = pipeline.report_from_trace(trace=trace, ceilings=roofs, workload="w")
    assert report.workload == "w" and report.kind == "trace" and report.ops
    with pytest.raises(TypeError):
        pipeline.report_from_trace(trace, roofs, None, "profile")  # kind is keyword-only

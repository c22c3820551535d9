"""Classification by the roofline itself: an op on its roof is memory- or compute-bound however short it is;
launch-bound only far above its roofline time and near the launch overhead. fp32 convs and matmuls that ran
on TF32 are judged against the TF32 roof."""

from __future__ import annotations

import pytest

from roofline.analyze.kernel_names import is_tf32_kernel
from roofline.analyze.pipeline import _roof_dtype
from roofline.analyze.roofline import ROOF_FACTOR, place_op
from roofline.capture.recording import Tf32Flags
from roofline.report import Ceilings, OpRecord

H200 = Ceilings(device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.8e12,
                peak_flops_per_s={"float32": 67e12, "tfloat32": 494.7e12, "float16": 989.4e12},
                launch_overhead_s=5e-6)


def _silu(time_s: float) -> OpRecord:
    size = 22.5e6 / 2  # bytes read + written = 22.5 MB
    return OpRecord(name="aten::silu", dtype="float16", flops=5 * size / 2, bytes=2 * size, time_s=time_s)


def test_a_short_op_at_the_memory_roof_is_memory_bound():
    op = place_op(_silu(4.7e-6), H200)
    assert op.time_s < 1.5 * H200.launch_overhead_s
    assert op.bound == "memory" and op.efficiency == pytest.approx(22.5e6 / 4.7e-6 / 4.8e12)


def test_a_short_op_far_above_its_roofline_time_is_launch_bound():
    op = OpRecord(name="aten::add", dtype="float32", flops=1024, bytes=12 * 1024, time_s=5e-6)
    assert place_op(op, H200).bound == "launch"


def test_the_factor_is_the_boundary():
    roofline = 22.5e6 / 4.8e12
    assert place_op(_silu(roofline * ROOF_FACTOR * 0.99), H200).bound == "memory"
    above = roofline * ROOF_FACTOR * 1.01
    assert H200.launch_overhead_s * 1.5 < above < H200.launch_overhead_s * 2
    assert place_op(_silu(above), H200).bound == "memory"  # far above its roof but not near the overhead
    assert place_op(_silu(above), H200, idle_before_s=1.0).bound == "launch"  # ... unless the device starved
    assert place_op(_silu(roofline * ROOF_FACTOR * 0.99), H200, idle_before_s=1.0).bound == "memory"


def test_a_long_op_far_below_its_roof_is_still_memory_or_compute():
    op = OpRecord(name="aten::mm", dtype="float32", flops=2e12, bytes=1e9, time_s=1.0)
    assert place_op(op, H200).bound == "compute"


@pytest.mark.parametrize("name,tf32", [
    ("sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x32_warpgroupsize1x1x1_g1", True),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)", True),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4", False),
    ("void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, true, false, true>", False),
    ("ampere_sgemm_128x64_nn", False),
])
def test_tf32_kernel_names(name, tf32):
    assert is_tf32_kernel(name) is tf32


def test_fp32_convs_take_the_tf32_roof_from_kernels_or_the_cudnn_flag():
    tf32_kernel = ["sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw"]
    off = Tf32Flags()
    assert _roof_dtype("float32", "aten::convolution", tf32_kernel, off, True) == "tfloat32"
    assert _roof_dtype("float32", "aten::convolution", ["implicit_convolve_sgemm"], off, True) == "float32"
    assert _roof_dtype("float32", "aten::convolution", [], Tf32Flags(cudnn=True), True) == "tfloat32"
    assert _roof_dtype("float32", "aten::convolution", [], Tf32Flags(matmul=True), True) == "float32"
    assert _roof_dtype("float32", "aten::mm", [], Tf32Flags(matmul=True), True) == "tfloat32"
    assert _roof_dtype("float32", "aten::mm", [], Tf32Flags(cudnn=True), True) == "float32"
    assert _roof_dtype("float16", "aten::convolution", tf32_kernel, off, True) == "float16"
    assert _roof_dtype("float32", "aten::add", tf32_kernel, off, True) == "float32"


def test_mobilenet_style_1x1_conv_is_not_above_the_tf32_roof():
    """A 1x1 conv at 118 TFLOP/s is 176% of the fp32 roof but well under the TF32 one."""
    op = OpRecord(name="aten::convolution", dtype="tfloat32", flops=118e12 * 1e-4, bytes=1e8, time_s=1e-4)
    place_op(op, H200)
    assert not op.above_roof
    op32 = place_op(OpRecord(name="aten::convolution", dtype="float32", flops=118e12 * 1e-4, bytes=1e8,
                             time_s=1e-4), H200)
    assert op32.above_roof


def test_live_report_records_the_tf32_flags(cpu_ceilings):
    import torch

    from roofline.analyze.live import analyze_model

    previous = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        report = analyze_model(torch.nn.Linear(8, 8), (torch.randn(4, 8),), device="cpu", ceilings=cpu_ceilings,
                               iters=1, warmup=0)
    finally:
        torch.backends.cudnn.allow_tf32 = previous
    assert report.extra["tf32"] == {"cuda_matmul": torch.backends.cuda.matmul.allow_tf32
                                    or torch.get_float32_matmul_precision() != "highest", "cudnn": False}


def test_an_fp32_cuda_graph_replay_takes_the_tf32_roof_where_its_kernels_include_a_tf32_product():
    tf32_gemm = "sm80_xmma_gemm_tf32f32_tf32f32_f32_tn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_kernel"
    replay = "CUDA graph replay #3"
    assert _roof_dtype("float32", replay, [tf32_gemm, "vectorized_elementwise_kernel"], Tf32Flags(), True) == \
        "tfloat32"
    assert _roof_dtype("float32", replay, ["ampere_sgemm_128x64_nn"], Tf32Flags(matmul=True), True) == "float32"
    assert _roof_dtype("float16", replay, [tf32_gemm], Tf32Flags(), True) == "float16"

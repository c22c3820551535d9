import pytest

from doctor_cases import ceilings, op, report
from roofline.doctor import diagnose

FP32_GEMM = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x64x8_stage3_ffma_execute_kernel__5x_cublas"
TF32_GEMM = "sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x16_stage4_execute_kernel__5x_cublas"
PEAKS = {"float32": 67e12, "tfloat32": 494.7e12, "float16": 989.4e12}


def _gpu_report(kernel: str, device_name: str = "NVIDIA H200"):
    ops = [op("aten::addmm", [([512], "float32"), ([512, 1024], "float32"), ([1024, 512], "float32")],
              out=[512, 512], flops=2 * 512 * 1024 * 512, bound="compute", time=1e-4, kernels=[kernel])]
    return report(ops, ceil=ceilings(device="cuda", device_name=device_name, bandwidth=4.8e12, peaks=PEAKS))


def test_fp32_matmul_without_tf32_on_hopper_is_found():
    findings = diagnose(_gpu_report(FP32_GEMM), rules=["tf32-off"])
    assert len(findings) == 1
    assert findings[0].estimated_savings_s == pytest.approx(1e-4 * (1 - 67 / 494.7))
    assert "allow_tf32" in findings[0].fix


def test_tf32_kernels_are_silent():
    assert diagnose(_gpu_report(TF32_GEMM), rules=["tf32-off"]) == []


def test_pre_ampere_gpus_are_silent():
    assert diagnose(_gpu_report(FP32_GEMM, device_name="Tesla V100-SXM2-16GB"), rules=["tf32-off"]) == []


def test_compute_capability_from_the_trace_decides():
    r = _gpu_report(FP32_GEMM, device_name="some gpu")
    r.extra["trace"] = {"compute_capability": [7, 5]}
    assert diagnose(r, rules=["tf32-off"]) == []
    r.extra["trace"] = {"compute_capability": [8, 6]}
    assert len(diagnose(r, rules=["tf32-off"])) == 1


def test_cpu_reports_without_kernels_are_silent():
    r = _gpu_report(FP32_GEMM)
    r.ops[0].kernels = []
    assert diagnose(r, rules=["tf32-off"]) == []

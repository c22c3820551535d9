"""A step's device time by kernel class (analyze/kernel_classes.py), pinned on the committed H200 traces of a
Llama forward, eager and compiled, and checked on hand-made kernels (overlap under PDL, class by op and name)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from roofline.analyze.kernel_classes import ATTENTION_CLASS, MATRIX, OTHER, kernel_class, kernel_classes
from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace
from roofline.device.ceilings import load_ceilings
from roofline.render.console import render_report
from roofline.report import Ceilings, KernelRecord, OpRecord, Report

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "data" / "h200"
CEILINGS = REPO / "benchmarks" / "results" / "ceilings_h200.json"


@functools.lru_cache(maxsize=None)
def _h200(name: str) -> Report:
    return report_from_trace(load_trace(str(H200 / f"{name}.json.gz")), load_ceilings(CEILINGS))


@pytest.mark.parametrize("name, matmul_us, attention_us, other_us, gaps_us, kernels, matmul_tbs", [
    # Eager HF Llama (8 layers, fp16, batch 4 x 512): cuBLAS products, cuDNN attention, 276 small other kernels.
    ("llama_tiny_fwd_fp16_b4_s512", 441.776, 68.400, 978.7335, 13046.086, 342, 1.2142),
    # The same model compiled: Inductor fuses the other kernels (41 left), the products stay extern mm kernels.
    ("llama_tiny_fwd_fp16_compiled", 531.883, 105.0395, 180.944, 6234.839, 107, 1.0085),
])
def test_h200_llama_forward_by_kernel_class(name, matmul_us, attention_us, other_us, gaps_us, kernels, matmul_tbs):
    report = _h200(name)
    kc = report.summary.kernel_classes
    assert kc is not None and kc.steps == report.steps == 2
    by = {c.name: c for c in kc.classes}
    assert [c.name for c in kc.classes] == [MATRIX, ATTENTION_CLASS, OTHER]
    assert by[MATRIX].time_s * 1e6 == pytest.approx(matmul_us, abs=1e-3)
    assert by[ATTENTION_CLASS].time_s * 1e6 == pytest.approx(attention_us, abs=1e-3)
    assert by[OTHER].time_s * 1e6 == pytest.approx(other_us, abs=1e-3)
    assert kc.gaps_s * 1e6 == pytest.approx(gaps_us, abs=1e-2)
    assert kc.kernels == kernels
    assert by[MATRIX].kernels == 58  # 7 projections x 8 layers + the output head, as two steps' mean
    assert by[MATRIX].achieved_bytes_per_s / 1e12 == pytest.approx(matmul_tbs, abs=1e-3)
    assert by[MATRIX].share_of_roof == pytest.approx(by[MATRIX].achieved_bytes_per_s / kc.bandwidth_bytes_per_s)
    # The classes and the gaps add up to the span of each step.
    assert sum(c.time_s for c in kc.classes) + kc.gaps_s == pytest.approx(kc.span_s)


def test_the_console_and_html_reports_show_the_kernel_classes():
    text = render_report(_h200("llama_tiny_fwd_fp16_compiled"))
    assert "Device time by kernel class (per step)" in text
    row = next(line for line in text.splitlines() if "matrix products" in line and "TB/s" in line)
    assert "532 us" in row and "1.01 TB/s" in row
    from roofline.render.html import report_payload

    shown = report_payload(_h200("llama_tiny_fwd_fp16_compiled"))["summary"]["kernel_classes"]  # the HTML's table
    assert [c["name"] for c in shown["classes"]] == [MATRIX, ATTENTION_CLASS, OTHER] and shown["unit"] == "step"


def _op(name: str, nbytes: float) -> OpRecord:
    return OpRecord(name=name, bytes=nbytes, time_s=1e-6)


def test_overlapping_kernels_count_once_and_known_bytes_replace_the_model():
    ops = [_op("aten::linear", 8e6), _op("aten::add", 1e6)]
    kernels = [
        KernelRecord("gemv_kernel", 0.0, 4e-6, op_index=0),
        # Launched under PDL: starts 1 us before the product ends and waits there.
        KernelRecord("decode_attention_kernel", 3e-6, 3e-6),
        KernelRecord("triton_poi_fused_add_0", 8e-6, 1e-6, op_index=1),
    ]
    report = Report(ops=ops, kernels=kernels, ceilings=Ceilings(device="cuda", memory_bandwidth_bytes_per_s=4e12))
    kc = kernel_classes(report)
    by = {c.name: c for c in kc.classes}
    assert by[MATRIX].time_s == pytest.approx(4e-6) and by[MATRIX].achieved_bytes_per_s == pytest.approx(2e12)
    assert by[ATTENTION_CLASS].time_s == pytest.approx(2e-6) and by[ATTENTION_CLASS].overlapped_s == pytest.approx(1e-6)
    assert by[ATTENTION_CLASS].bytes is None and by[ATTENTION_CLASS].achieved_bytes_per_s is None
    assert kc.kernel_time_s == pytest.approx(7e-6) and kc.span_s == pytest.approx(9e-6)
    assert kc.gaps_s == pytest.approx(2e-6) and kc.overlapped_s == pytest.approx(1e-6)
    known = kernel_classes(report, known_bytes={ATTENTION_CLASS: 4e6}, bytes_method="KV cache bytes")
    att = next(c for c in known.classes if c.name == ATTENTION_CLASS)
    assert att.achieved_bytes_per_s == pytest.approx(2e12) and att.share_of_roof == pytest.approx(0.5)
    assert known.method.endswith("KV cache bytes")


def test_an_op_s_bytes_go_to_the_class_its_kernels_spent_most_time_in_ties_to_the_first_seen():
    # op 0 (a custom op: no class of its own): 1 us of "other" then 3 us of gemm -> matrix products.
    # op 1: 2 us of attention, then 2 us of gemm -> a tie, the first class seen (attention).
    # op 2: its only kernel runs wholly under op 1's second one (no own time) -> still its class (other).
    # op 3 is unmodelled and the last kernel names an op past the table: neither moves bytes.
    ops = [_op("mylib::fused", 8e6), _op("mylib::mixed", 4e6), _op("mylib::tiny", 1e6),
           OpRecord(name="mylib::opaque", bytes=5e6, time_s=1e-6, modeled=False)]
    kernels = [
        KernelRecord("elementwise_kernel", 0.0, 1e-6, op_index=0),
        KernelRecord("gemm_kernel", 1e-6, 3e-6, op_index=0),
        KernelRecord("flash_fwd_kernel", 4e-6, 2e-6, op_index=1),
        KernelRecord("gemm_kernel", 6e-6, 2e-6, op_index=1),
        KernelRecord("elementwise_kernel", 6.5e-6, 1e-6, op_index=2),
        KernelRecord("elementwise_kernel", 8e-6, 1e-6, op_index=3),
        KernelRecord("gemm_kernel", 9e-6, 1e-6, op_index=7),
    ]
    report = Report(ops=ops, kernels=kernels, ceilings=Ceilings(device="cuda", memory_bandwidth_bytes_per_s=4e12))
    by = {c.name: c for c in kernel_classes(report).classes}
    assert by[MATRIX].bytes == pytest.approx(8e6) and by[MATRIX].bytes_time_s == pytest.approx(4e-6)
    assert by[ATTENTION_CLASS].bytes == pytest.approx(4e6) and by[ATTENTION_CLASS].bytes_time_s == pytest.approx(4e-6)
    assert by[OTHER].bytes == pytest.approx(1e6) and by[OTHER].bytes_time_s == 0.0


def test_no_kernels_no_breakdown():
    assert kernel_classes(Report(ops=[_op("aten::add", 1.0)])) is None


@pytest.mark.parametrize("name, cls", [
    ("triton_red_fused_mm_0", MATRIX), ("triton_tem_fused_mm_1", MATRIX), ("triton_per_fused__softmax_bmm_2", ATTENTION_CLASS),
    ("triton_poi_fused_add_mul_3", OTHER), ("nvjet_hsh_128x64_64x4_1x2_h_bz_coopA_NNT", MATRIX),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm>(Params)", MATRIX), ("flash_fwd_kernel", ATTENTION_CLASS),
    ("gemv_kernel", MATRIX), ("argmax_kernel", OTHER), ("void at::native::vectorized_elementwise_kernel<4>", OTHER),
])
def test_kernel_class_by_name(name, cls):
    assert kernel_class(name) == cls


def test_every_h200_trace_report_saves_and_loads_with_its_kernel_classes(tmp_path):
    """Sums of float durations can leave -1e-19 where no kernel overlapped: the schema's ``>= 0`` must hold."""
    for name in ("bad_syncs_fwd_fp32", "llama_tiny_fwd_fp16_b4_s512"):
        report = _h200(name)
        path = report.save(tmp_path / f"{name}.json")
        loaded = Report.load(path).summary.kernel_classes
        assert loaded is not None and all(c.overlapped_s >= 0 for c in loaded.classes)
        assert loaded.kernel_time_s == pytest.approx(report.summary.kernel_classes.kernel_time_s)


def test_h200_decode_loop_of_the_lab_by_kernel_class():
    """The lab's committed H200 doctor run of llama-1b's fixed generation loop (eager fp16, 2 prompts x 6 new
    tokens, under the profiler): cuBLAS's matrix-vector products at 1.89 TB/s, as issue 19 found (1.9-2.4 TB/s), and
    a loop the profiled host leaves idle 94% of its span."""
    report = Report.load(REPO / "docs" / "lab" / "h200" / "llama-1b" / "doctor" / "fixed" / "report.json.gz")
    kc = kernel_classes(report)
    by = {c.name: c for c in kc.classes}
    assert by[MATRIX].kernels == 1062 and by[ATTENTION_CLASS].kernels == 132 and by[OTHER].kernels == 4761
    assert by[MATRIX].time_s * 1e3 == pytest.approx(6.607709, abs=1e-6)
    assert by[MATRIX].achieved_bytes_per_s / 1e12 == pytest.approx(1.8890, abs=1e-4)
    assert kc.kernel_time_s * 1e3 == pytest.approx(15.018466, abs=1e-6)
    assert kc.gaps_s / kc.span_s == pytest.approx(0.9425, abs=1e-4)

"""benchmarks/decode_breakdown.py's kernel classes, on a real H200 trace of a compiled llama-tiny forward."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "tests" / "data" / "h200" / "llama_tiny_fwd_fp16_compiled.json.gz"


def _script():
    spec = importlib.util.spec_from_file_location("decode_breakdown", ROOT / "benchmarks" / "decode_breakdown.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_kernel_classes_follow_inductor_and_library_names():
    kernel_class = _script().kernel_class
    assert kernel_class("triton_tem_fused_mm_t_view_3") == "matmul"
    assert kernel_class("triton_red_fused__unsafe_view_mm_mul_silu_split_t_view_10") == "matmul"
    assert kernel_class("triton_red_fused_add_mean_mul_pow_rsqrt_4") == "other"
    assert kernel_class("triton_poi_fused__scaled_dot_product_cudnn_attention__to_copy_add_bmm_cat_cos_1") == "other"
    assert kernel_class("triton_per_fused__softmax_bmm_2") == "attention"
    assert kernel_class("nvjet_sm90_hsh_64x8_64x16_4x1_v_bz_TNT") == "matmul"
    assert kernel_class("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7") == "attention"
    assert kernel_class("void at::native::vectorized_elementwise_kernel<4, FillFunctor<int>>") == "other"


def test_breakdown_accounts_for_every_kernel_of_the_trace():
    breakdown = _script().kernel_breakdown(str(TRACE), steps=2)
    classes = breakdown["classes"]
    assert set(classes) == {"matmul", "attention", "other"}
    assert sum(c["us_per_token"] for c in classes.values()) == pytest.approx(
        breakdown["kernel_us_per_token"])
    assert sum(c["kernels_per_token"] for c in classes.values()) == breakdown["kernels_per_token"]
    assert breakdown["top_kernels"][0]["us_per_token"] >= breakdown["top_kernels"][-1]["us_per_token"]


def test_kernels_started_early_under_pdl_count_once(tmp_path):
    """A kernel launched with programmatic dependent launch starts inside the one before it and waits there:
    each counts only past the previous one's end, and the overlap is reported apart (was: negative gaps)."""
    import gzip
    import json

    def kernel(name, ts, dur, corr):
        return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                "args": {"device": 0, "stream": 7, "correlation": corr, "External id": corr}}

    events = [kernel("gemv_kernel", 0, 10, 1), kernel("decode_attention_kernel", 6, 6, 2),  # 4 us under gemv
              kernel("gemv_kernel", 12, 5, 3), kernel("void at::native::reduce_kernel", 20, 2, 4)]  # 3 us gap
    path = tmp_path / "pdl.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    breakdown = _script().kernel_breakdown(str(path), steps=1)
    classes = breakdown["classes"]
    assert classes["matmul"]["us_per_token"] == pytest.approx(15.0)
    assert classes["attention"]["us_per_token"] == pytest.approx(2.0)
    assert classes["attention"]["with_overlap_us_per_token"] == pytest.approx(6.0)
    assert breakdown["kernel_us_per_token"] == pytest.approx(19.0)  # busy time: 22 us span less the 3 us gap
    assert breakdown["overlapped_us_per_token"] == pytest.approx(4.0)

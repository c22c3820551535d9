"""Shapes read from real H200 torch.profiler traces: args_from_trace round trip, and every op that launches
a kernel has a formula (except AdamW's foreach ops, whose tensor-list shapes the profiler does not record)."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from roofline.count import TensorMeta, args_from_trace, count_op

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"
FIXTURES = sorted(H200.glob("*.json.gz"))
LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync",
            "cudaLaunchCooperativeKernel", "cuLaunchKernelEx")


def _load(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as handle:
        return json.load(handle)["traceEvents"]


def _args(event: dict) -> list:
    a = event.get("args", {})
    return args_from_trace(a.get("Input Dims"), a.get("Input type"), a.get("Input Strides"), a.get("Concrete Inputs"))


def _launching_ids(events: list[dict]) -> set:
    return {e["args"].get("External id") for e in events
            if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("name") in LAUNCHES}


@pytest.fixture(scope="module")
def traces() -> dict[str, list[dict]]:
    if not FIXTURES:
        pytest.skip("tests/data/h200 fixtures missing")
    return {path.name: _load(path) for path in FIXTURES}


def _first(events: list[dict], name: str) -> dict:
    return next(e for e in events if e.get("cat") == "cpu_op" and e["name"] == name)


def test_args_from_trace_round_trip_on_real_events(traces):
    train = traces["llama_tiny_train_fp16_b2_s256.json.gz"]
    mm = _args(_first(train, "aten::mm"))
    assert all(isinstance(a, TensorMeta) and a.dtype == "float16" for a in mm)
    assert mm[0].shape == (32000, 512) and mm[0].strides == (1, 32000) and not mm[0].is_contiguous
    to_copy = _args(_first(train, "aten::_to_copy"))
    assert to_copy[0] == TensorMeta((2, 256, 32000), "float32", (8192000, 32000, 1))
    assert to_copy[1:] == [5, 0, None, None, False, None]
    cat = _args(_first(train, "aten::cat"))
    assert [m.shape for m in cat[0]] == [(1, 256, 32), (1, 256, 32)] and cat[1] == -1
    sdpa = _args(_first(train, "aten::_scaled_dot_product_cudnn_attention"))
    assert sdpa[3] is None and sdpa[4] is True and sdpa[5] == 0.0 and sdpa[8] == 0.125
    reshape = _args(_first(train, "aten::reshape"))
    assert reshape[1] == [2, 256, 32000]
    foreach = _args(_first(train, "aten::_foreach_mul_"))
    assert foreach[0] is None  # the profiler recorded no shapes for the long list
    bert = traces["bert_base_fwd_fp32_b16_s128.json.gz"]
    layer_norm = _args(_first(bert, "aten::native_layer_norm"))
    assert layer_norm[1] == [768] and layer_norm[4] == pytest.approx(1e-12)


def test_trace_counts_match_hand_worked_values(traces):
    resnet = traces["resnet50_fwd_fp32_b32.json.gz"]
    stem = count_op("aten::cudnn_convolution", _args(_first(resnet, "aten::cudnn_convolution")))
    assert stem.flops == 2 * 32 * 64 * 3 * 7 * 7 * 112 * 112
    llama = traces["llama_tiny_fwd_fp16_b4_s512.json.gz"]
    attention = count_op("aten::_cudnn_attention_forward", _args(_first(llama, "aten::_cudnn_attention_forward")))
    assert attention.flops == pytest.approx(4 * 4 * 8 * 512 * 512 * 64 * 513 / 1024)
    assert "causal" in attention.note
    bert = traces["bert_base_fwd_fp32_b16_s128.json.gz"]
    name = "aten::_efficient_attention_forward"
    efficient = count_op(name, _args(_first(bert, name)))
    assert efficient.flops == 4 * 16 * 12 * 128 * 128 * 64


@pytest.mark.parametrize("fixture", [p.name for p in FIXTURES])
def test_no_unmodeled_kernel_launching_ops(traces, fixture):
    events = traces[fixture]
    launching = _launching_ids(events)
    unmodeled: Counter = Counter()
    notes: dict[str, str] = {}
    counted = 0
    for event in events:
        if event.get("cat") != "cpu_op":
            continue
        cost = count_op(event["name"], _args(event))
        counted += 1
        if not cost.modeled and event["args"].get("External id") in launching:
            unmodeled[event["name"]] += 1
            notes[event["name"]] = cost.note
    assert counted > 100
    unexplained = {name: notes[name] for name in unmodeled if not name.startswith("aten::_foreach_")}
    assert unexplained == {}, unexplained
    for name in unmodeled:
        assert "not recorded" in notes[name]


def test_inductor_kernels_are_estimated_and_say_so(traces):
    compiled = traces["llama_tiny_fwd_fp16_compiled.json.gz"]
    mm = count_op("triton_tem_fused_mm_t_view_7", _args(_first(compiled, "triton_tem_fused_mm_t_view_7")))
    assert mm.modeled and mm.flops == 2 * 2048 * 1376 * 512
    assert "estimated" in mm.note
    name = "triton_poi_fused__unsafe_view_mul_silu_9"
    silu = count_op(name, _args(_first(compiled, name)))
    assert silu.flops == (1 + 5) * 2048 * 1376
    assert silu.bytes == 3 * 2048 * 1376 * 2

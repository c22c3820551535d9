"""Invariants of the trace path on real traces: the report's numbers must add up, whatever the trace.

On every GPU trace (the H200 fixtures and a selection of the public HTA traces):
- the ops of each step share out exactly the kernel time attributed in that step (no kernel counted twice, none
  dropped: a chosen op's time is every kernel of its subtree, and chosen events never nest);
- every kernel on the report's timeline belongs to one op, and each op's kernels sum to its time;
- the time by bound sums to the total time.
Where an independent figure is known, total FLOPs match it (ResNet-50, BERT-base: arithmetic below).
The ceilings are fixed here (H200 datasheet figures), so device identification does not enter these tests.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace
from roofline.report import Ceilings

REPO = Path(__file__).resolve().parents[2]
H200_DIRS = [REPO / "tests" / "data" / "h200", REPO.parent / "shared" / "fixtures" / "h200-traces"]
HTA = REPO.parent / "shared" / "fixtures" / "public-traces" / "hta"
HTA_TRACES = [
    "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
    "nccl_parser_config/nccl_data.json.gz",
    "timeline_analysis/sampled_rank-0.json.gz",
    "trace_diff/test/test.json.gz",
    "triton_example/triton_example.json.gz",
    "cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "rank_non_gpu/rank_non_gpu.json.gz",
]

H200_CEILINGS = Ceilings(
    device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.8e12,
    peak_flops_per_s={"float32": 67e12, "tfloat32": 494.7e12, "float16": 989.4e12, "bfloat16": 989.4e12},
    launch_overhead_s=5e-6, source="datasheet",
)
CPU_CEILINGS = Ceilings(device="cpu", device_name="test cpu", memory_bandwidth_bytes_per_s=1e11,
                        peak_flops_per_s={"float32": 1e12}, launch_overhead_s=5e-6)


def _h200_paths() -> list[Path]:
    seen: dict[str, Path] = {}
    for folder in H200_DIRS:
        for path in sorted(folder.glob("*.json.gz")):
            seen.setdefault(path.name, path)
    return list(seen.values())


def _all_paths() -> list[Path]:
    return _h200_paths() + [HTA / rel for rel in HTA_TRACES if (HTA / rel).exists()]


_CACHE: dict[Path, tuple] = {}


def _load(path: Path):
    if path not in _CACHE:
        trace = load_trace(path)
        ceilings = H200_CEILINGS if trace.has_gpu else CPU_CEILINGS
        _CACHE[path] = (trace, report_from_trace(trace, ceilings))
    return _CACHE[path]


def _h200(name: str):
    for path in _h200_paths():
        if path.name == f"{name}.json.gz":
            return _load(path)
    pytest.fail(f"H200 fixture {name} missing from tests/data/h200")


def _id(path: Path) -> str:
    return path.name if path.parent.name in ("h200", "h200-traces") else str(path.relative_to(HTA))


@pytest.mark.parametrize("path", _all_paths(), ids=_id)
def test_op_times_share_out_the_attributed_kernel_time_of_each_step(path):
    trace, report = _load(path)
    per_op = defaultdict(float)
    for op in report.ops:
        per_op[op.step] += op.time_s
    if not trace.has_gpu:
        wall = sum(st.dur_us for st in trace.steps) / 1e6 if trace.steps else None
        assert all(0 <= op.time_s <= op.cpu_time_s + 1e-12 for op in report.ops)
        if wall is not None:
            assert sum(per_op.values()) <= wall * (1 + 1e-9)
        return
    per_kernel = defaultdict(float)
    for k in trace.kernels:
        if k.op >= 0:
            per_kernel[trace.ops[k.op].step if trace.steps else None] += k.dur_us / 1e6
    for step in set(per_op) | set(per_kernel):
        assert per_op[step] == pytest.approx(per_kernel[step], rel=1e-9, abs=1e-12), step


@pytest.mark.parametrize("path", [p for p in _all_paths() if "cpu_only" not in str(p) and "non_gpu" not in str(p)],
                         ids=_id)
def test_every_kernel_belongs_to_exactly_one_op(path):
    trace, report = _load(path)
    by_op = defaultdict(float)
    count = defaultdict(int)
    for k in report.kernels:
        assert k.op_index is not None and 0 <= k.op_index < len(report.ops)
        by_op[k.op_index] += k.dur_s
        count[k.op_index] += 1
    for i, op in enumerate(report.ops):
        assert op.time_s == pytest.approx(by_op[i], rel=1e-9, abs=1e-12), op.name
        assert len(op.kernels) == count[i], op.name
    if not trace.steps:
        assert len(report.kernels) == trace.attribution.kernels_attributed


@pytest.mark.parametrize("path", _all_paths(), ids=_id)
def test_time_by_bound_sums_to_the_total(path):
    _, report = _load(path)
    s = report.summary
    assert sum(op.time_s for op in report.ops) == pytest.approx(s.total_time_s)
    assert sum(s.time_by_bound_s.values()) == pytest.approx(s.total_time_s, rel=1e-9, abs=1e-15)
    assert {op.bound for op in report.ops} <= {"compute", "memory", "launch", "communication", "unmodeled"}
    assert sum(op.flops for op in report.ops) == pytest.approx(s.total_flops)


def test_resnet50_flops_equal_the_published_figure():
    """torchvision's ResNet-50 card: 4.09 G multiply-adds per 224x224 image, i.e. 8.18 GFLOP; batch 32.
    Batch norm, ReLU, pooling and the residual adds add under 1%."""
    trace, report = _h200("resnet50_fwd_fp32_b32")
    per_step = report.summary.total_flops / len(trace.steps)
    assert per_step == pytest.approx(2 * 4.089e9 * 32, rel=0.02)
    convs = sum(op.flops for op in report.ops if "conv" in op.name) / len(trace.steps)
    assert convs == pytest.approx(2 * 4.089e9 * 32, rel=0.01)


def test_bert_base_flops_equal_the_hand_count():
    """BERT-base, batch 16 x seq 128 = 2048 tokens: per layer 4 x 768^2 attention + 2 x 768 x 3072 FFN weights,
    2 FLOPs per weight per token; attention scores and values 2 x 2 x 128^2 x 768 per sequence; 12 layers."""
    trace, report = _h200("bert_base_fwd_fp32_b16_s128")
    tokens, d, ff, layers, seq, batch = 2048, 768, 3072, 12, 128, 16
    linear = 2 * tokens * (4 * d * d + 2 * d * ff) * layers
    attention = 2 * 2 * seq * seq * d * batch * layers
    pooler = 2 * batch * d * d
    per_step = report.summary.total_flops / len(trace.steps)
    assert per_step == pytest.approx(linear + attention + pooler, rel=0.01)


def test_repeated_layers_get_their_own_nonzero_time_in_the_trace_path():
    trace, report = _h200("bert_base_fwd_fp32_b16_s128")
    ffn = {op.module: op.time_s for op in report.ops
           if op.name == "aten::addmm" and op.step == 0 and op.module.endswith(tuple(f"Linear_{4 + 6 * i}"
                                                                                    for i in range(12)))
           and "BertIntermediate" in op.module}
    assert len(ffn) == 12
    assert all(t > 0 for t in ffn.values())


def test_named_ops_in_the_h200_traces_have_their_expected_bound():
    """Large GEMMs compute-bound; layer norms never compute-bound, memory-bound once well above the launch
    overhead; tiny elementwise ops launch-bound. Written to hold under the rule that an op near its roofline
    time is memory/compute-bound whatever its length (ops above 4x the launch overhead are never launch-bound)."""
    _, bert = _h200("bert_base_fwd_fp32_b16_s128")
    launch = H200_CEILINGS.launch_overhead_s
    gemms = [op for op in bert.ops if op.name == "aten::addmm" and op.flops > 1e9]
    assert gemms and all(op.bound == "compute" for op in gemms)
    norms = [op for op in bert.ops if "layer_norm" in op.name]
    assert norms and all(op.bound in ("memory", "launch") for op in norms)
    assert all(op.bound == "memory" for op in norms if op.time_s > 4 * launch)
    assert any(op.time_s > 4 * launch for op in norms) or any(op.bound == "memory" for op in norms)
    _, llama = _h200("llama_tiny_fwd_fp16_b4_s512")
    tiny = [op for op in llama.ops if op.name in ("aten::add", "aten::mul", "aten::rsqrt", "aten::neg")
            and op.bytes < 64 * 1024 and 0 < op.time_s < launch]
    assert len(tiny) >= 10 and all(op.bound == "launch" for op in tiny)
    for report in (bert, llama):
        slow = [op for op in report.ops if op.modeled and op.time_s > 4 * launch and (op.flops or op.bytes)]
        assert slow and all(op.bound in ("memory", "compute") for op in slow)

"""The H200 fixture traces against the H200's measured ceilings (benchmarks/results/ceilings_h200.json): convs
and matmuls that ran TF32 kernels take the TF32 roof, an Inductor kernel with a fused embedding is charged only
the rows it gathers, and what stays above the DRAM roof is an elementwise op whose data fits in the 50 MB L2."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace
from roofline.count import TensorMeta, count_op
from roofline.device.ceilings import load_ceilings

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "data" / "h200"
CEILINGS = REPO / "benchmarks" / "results" / "ceilings_h200.json"
H200_L2_BYTES = 50 * 2**20
ELEMENTWISE = {"aten::relu_", "aten::add_", "aten::add", "aten::mul"}


def _report(name: str):
    return report_from_trace(load_trace(str(H200 / f"{name}.json.gz")), load_ceilings(CEILINGS))


def test_resnet50_convs_ran_tf32_and_sit_under_that_roof():
    report = _report("resnet50_fwd_fp32_b32")
    convs = [op for op in report.ops if op.name in ("aten::convolution", "aten::conv2d", "aten::cudnn_convolution")]
    assert convs and {op.dtype for op in convs} == {"tfloat32"}
    assert not [op for op in convs if op.above_roof]


@pytest.mark.parametrize("name", ["resnet50_fwd_fp32_b32", "bert_base_fwd_fp32_b16_s128",
                                  "llama_tiny_fwd_fp16_b4_s512", "llama_tiny_fwd_fp16_compiled"])
def test_only_cache_resident_elementwise_ops_exceed_the_dram_roof(name):
    report = _report(name)
    above = [op for op in report.ops if op.above_roof]
    assert all(op.name in ELEMENTWISE for op in above), {op.name for op in above}
    for op in above:
        footprint = op.bytes / 2 if op.name.endswith("_") else op.bytes  # in place: read and written once each
        assert footprint <= H200_L2_BYTES and op.efficiency < 1.3


def test_inductor_kernel_with_a_fused_embedding_reads_gathered_rows_only():
    table, ids, out = TensorMeta((32000, 512), "float16"), TensorMeta((4, 512), "int64"), TensorMeta((4, 512, 512), "float16")
    cost = count_op("triton_per_fused__to_copy_add_embedding_mean_mul_pow_rsqrt_6", [ids, table, out])
    assert cost.bytes == ids.nbytes + 4 * 512 * 512 * 2 + out.nbytes
    assert "gathered rows" in cost.note
    plain = count_op("triton_poi_fused_add_mul_0", [table, table])
    assert plain.bytes == 2 * table.nbytes

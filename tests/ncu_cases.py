"""The H200 ncu fixture's ops (tests/data/ncu_h200/ncu_ops.py) as counted ops with their kernels, shared by the
join, doctor and view tests: a report of one step whose kernels carry the names ncu gave them."""

from __future__ import annotations

from pathlib import Path

from roofline.count.counting import count_op
from roofline.count.meta import TensorMeta
from roofline.report import KernelRecord, OpRecord, Report

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
DATA = TESTS / "data"
H200 = DATA / "h200"
NCU = DATA / "ncu_h200"
N = 16384
H = "float16"


def _t(*shape, dtype=H, strides=None):
    return TensorMeta(tuple(shape), dtype, strides)


def _dense(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


def _meta(*shape, dtype=H):
    return TensorMeta(tuple(shape), dtype, _dense(shape))


# (aten op, args, outputs, kernels it launched) per op of each case, in launch order (ncu_ops.py's cases, as the
# CUDA dispatcher runs them on the H200: MANIFEST.json's aten_ops).
CASES = {
    "add": [("aten::add", [_meta(N, N), _meta(N, N)], [_meta(N, N)], 1)],
    "gelu": [("aten::gelu", [_meta(N, N)], [_meta(N, N)], 1)],
    "layer_norm": [("aten::native_layer_norm", [_meta(65536, 4096), [4096], _meta(4096), _meta(4096), 1e-5],
                    [_meta(65536, 4096), _meta(65536, 1, dtype="float32"), _meta(65536, 1, dtype="float32")], 1)],
    "rms_norm": [("aten::_fused_rms_norm", [_meta(65536, 4096), [4096], _meta(4096), None],
                  [_meta(65536, 4096), _meta(65536, 1, dtype="float32")], 1)],
    "softmax": [("aten::_softmax", [_meta(N, N), -1, False], [_meta(N, N)], 1)],
    "sum_lastdim": [("aten::sum", [_meta(N, N), [-1]], [_meta(N)], 1)],
    "transpose_copy": [("aten::t", [_meta(N, N)], [_t(N, N, strides=(1, N))], 0),
                       ("aten::clone", [_t(N, N, strides=(1, N))], [_meta(N, N)], 1)],
    "cat": [("aten::cat", [[_meta(8192, N), _meta(8192, N)]], [_meta(N, N)], 1)],
    "embedding": [("aten::embedding", [_meta(131072, 4096), _meta(65536, dtype="int64")], [_meta(65536, 4096)], 1)],
    "sdpa_causal": [("aten::_scaled_dot_product_cudnn_attention",
                     [_meta(8, 16, 8192, 128)] * 3 + [None, False, 0.0, True, False], None, 1)],
    "depthwise_conv": [("aten::convolution", [_meta(64, 256, 128, 128), _meta(256, 1, 3, 3), None, [1, 1], [1, 1],
                                              [1, 1], False, [0, 0], 256], [_meta(64, 256, 128, 128)], 1)],
    "to_fp32": [("aten::_to_copy", [_meta(N, N)], [_meta(N, N, dtype="float32")], 1)],
}
EXCESS = {
    "cross_entropy": ([("aten::_log_softmax", [_meta(16384, 32768, dtype="float32"), 1, False],
                        [_meta(16384, 32768, dtype="float32")], 1),
                       ("aten::nll_loss_forward", [_meta(16384, 32768, dtype="float32"), _meta(16384, dtype="int64"),
                                                   None, 1, -100], None, 1)], "aten::_log_softmax", 1.46),
    "mm": ([("aten::mm", [_meta(N, N), _meta(N, N)], [_meta(N, N)], 1)], "aten::mm", 8.4),
}


def report_of(case, ncu_names):
    """A report of one step of the case's ops, with the case's kernels (named as ncu names them) on its timeline."""
    ops, kernels, names = [], [], iter(ncu_names)
    for i, (name, args, outputs, launched) in enumerate(case):
        cost = count_op(name, args, None, outputs)
        assert cost.modeled, (name, cost.note)
        ops.append(OpRecord(name=name, flops=cost.flops, bytes=cost.bytes, time_s=1e-3, index=i))
        for _ in range(launched):
            kernels.append(KernelRecord(next(names), start_s=len(kernels) * 1e-3, dur_s=1e-4, op_index=i))
    return Report(ops=ops, kernels=kernels)

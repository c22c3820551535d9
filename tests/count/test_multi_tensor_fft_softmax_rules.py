"""_foreach_* and fused optimizers, Inductor kernels, FFTs and softmax by hand (their modules' docstrings),
torch-free: per-element figures (optimizers: AdamW 14, Adam 13, SGD 3 or 5 with momentum), each list read once
and self's list written once; Inductor's 2*m*n*k for templates and summed per-op figures for fused kernels;
5 N log2 N per complex transform (half for real ones); softmax 5 forward, 4 backward."""

from __future__ import annotations

from math import log2

import pytest

from roofline.count import count_op
from roofline.count.inductor import fused_op_names, kernel_kind_and_ops
from roofline.count.meta import TensorMeta as T
from rules_helpers import cost

A, B = T((3, 4), "float32"), T((5,), "float32")  # 12 + 5 elements, 68 bytes
AH, BH = T((3, 4), "float16"), T((5,), "float16")


@pytest.mark.parametrize("base, per", [("add", 1), ("mul", 1), ("sqrt", 1), ("addcmul", 2), ("lerp", 3),
                                       ("exp", 4), ("sigmoid", 4)])
def test_foreach_per_element(base, per):
    xs, ys = [A, B], [A, B]
    assert cost(f"aten::_foreach_{base}_", xs, ys) == (per * 17, 136 + 68)  # both lists read, self written
    assert cost(f"aten::_foreach_{base}", xs, ys) == (per * 17, 136 + 68)
    assert cost(f"aten::_foreach_{base}", xs, ys, outputs=[AH, BH]) == (per * 17, 136 + 34)
    assert cost(f"aten::_foreach_{base}_", xs, ys, outputs=[AH, BH]) == (per * 17, 136 + 68)


def test_foreach_special_cases():
    xs = [A, B]
    assert cost("aten::_foreach_pow", xs, 2) == (17, 68 + 68)
    assert cost("aten::_foreach_pow", xs, 2.5) == (4 * 17, 136)
    assert cost("aten::_foreach_pow", xs, [A, B]) == (4 * 17, 204)
    assert cost("aten::_foreach_norm", xs) == (34, 68 + 2 * 4)
    assert cost("aten::_foreach_norm", xs, outputs=[T((), "float64")] * 2) == (34, 68 + 16)
    assert cost("aten::_foreach_max", xs) == (17, 68 + 8)
    assert cost("aten::_foreach_zero_", xs) == (0, 68)
    assert cost("aten::_foreach_copy_", xs, [AH, BH]) == (0, 34 + 68)
    assert cost("aten::_foreach_add_", xs, 1.0) == (17, 136)
    assert not count_op("aten::_foreach_add_", ([], 1.0)).modeled
    assert "not recorded" in count_op("aten::_foreach_add_", ([A, 3], 1.0)).note
    assert not count_op("aten::_foreach_eq", ([A], [A])).modeled  # comparisons have no foreach form
    unknown = count_op("aten::_foreach_mul_", ([T((3, 4), "unknown")], 2.0))
    assert unknown.modeled and "dtype not recorded" in unknown.note


def test_fused_optimizers_and_amp():
    p, g, m, v, vmax = [A, B], [A, B], [A, B], [A, B], [A, B]
    steps = [T((), "float32")] * 2
    assert cost("aten::_fused_adamw_", p, g, m, v, vmax, steps) == (14 * 17, 2 * 68 + 68 + 2 * 136)
    assert cost("aten::_fused_adam_", p, g, m, v, vmax, steps) == (13 * 17, 2 * 68 + 68 + 2 * 136)
    amsgrad = [p, g, m, v, vmax, steps, 1e-3, 0.9, 0.999, True]
    assert cost("aten::_fused_adamw_", *amsgrad) == (14 * 17, 2 * 68 + 68 + 2 * 204)
    gh = [AH, BH]
    assert cost("aten::_fused_adamw_", p, gh, m, v, vmax, steps)[1] == 136 + 34 + 272  # grads read at their size
    assert cost("aten::_fused_sgd_", p, g, m, 0.0, 0.9) == (5 * 17, 2 * 68 + 68 + 2 * 68)
    assert cost("aten::_fused_sgd_", p, g, [], 0.0, 0.0) == (3 * 17, 2 * 68 + 68)
    assert cost("aten::_fused_sgd_", p, g, [], kwargs={"momentum": 0.9})[0] == 5 * 17
    found, inv = T((1,), "float32"), T((), "float32")
    assert cost("aten::_amp_foreach_non_finite_check_and_unscale_", g, found, inv) == (34, 2 * 68 + 8)
    assert cost("aten::_amp_update_scale_", T((), "float32"), T((1,), "int32"), found) == (3, 2 * 12)


def test_inductor_names_and_estimates():
    assert kernel_kind_and_ops("triton_red_fused_add_mean_mul_pow_rsqrt_0") == ("red", ["add", "mean", "mul", "pow",
                                                                                      "rsqrt"])
    assert kernel_kind_and_ops("triton_poi_fused__softmax_native_layer_norm_12") == ("poi", ["_softmax",
                                                                                         "native_layer_norm"])
    assert kernel_kind_and_ops("triton_tem_fused_addmm_relu_3") == ("tem", ["addmm", "relu"])
    assert kernel_kind_and_ops("ampere_sgemm_128x64") == ("", [])
    assert fused_op_names("gelu_backward_view") == ["gelu_backward"]
    assert fused_op_names("silu_mul") == ["silu", "mul"]
    x, y = T((64, 32), "float16"), T((64, 32), "float16")
    c = count_op("triton_poi_fused_add_mul_silu_0", [x, y, T((64, 32), "float16"), 2048])
    assert (c.flops, c.bytes) == ((1 + 1 + 5) * 2048, 3 * 4096) and "7 FLOP/elt" in c.note
    a, w, out = T((16, 8), "float16"), T((8, 24), "float16"), T((16, 24), "float16")
    t = count_op("triton_tem_fused_mm_0", [a, w, out])
    assert t.flops == 2 * 16 * 24 * 8 and "2*m*n*k" in t.note
    table, idx, emb = T((1000, 16), "float32"), T((2, 5), "int64"), T((2, 5, 16), "float32")
    e = count_op("triton_poi_fused_embedding_0", [idx, table, emb])
    assert e.bytes == 80 + 10 * 16 * 4 + 640 and "gathered rows only" in e.note
    assert count_op("triton_poi_fused_embedding_0", [table, emb]).bytes == 64000 + 640  # no index buffer
    assert not count_op("triton_poi_fused_add_0", [7, 8]).modeled
    # a name not in the elementwise table takes its FLOPs from inductor's own: sum is 1 an element
    assert count_op("triton_red_fused_sum_0", [x, T((64,), "float16")]).flops == 2048


def test_ffts():
    x = T((4, 16), "complex64")  # 64 elements, 512 bytes
    assert cost("aten::_fft_c2c", x, [1], 0, True) == (pytest.approx(5 * 64 * 4), 512 + 512)
    assert cost("aten::_fft_c2c", x, [0, 1], 0, True)[0] == pytest.approx(5 * 64 * 6)
    assert cost("aten::_fft_c2c", x, [], 0, True)[0] == pytest.approx(5 * 64 * 6)  # no dims: all
    assert cost("aten::_fft_c2c", x, -1, 0, True)[0] == pytest.approx(5 * 64 * 4)
    assert cost("aten::_fft_c2c", T((4, 1), "complex64"), [1], 0, True)[0] == 0
    r = T((4, 16), "float32")
    assert cost("aten::_fft_r2c", r, [1], 0, True) == (pytest.approx(2.5 * 64 * 4), 256 + 4 * 9 * 8)
    assert cost("aten::_fft_r2c", r, [1], 0, False)[1] == 256 + 64 * 8
    assert cost("aten::_fft_r2c", T((4, 16), "float64"), [1], 0, True)[1] == 512 + 36 * 16
    half = T((4, 9), "complex64")
    assert cost("aten::_fft_c2r", half, [1], 0, 16) == (pytest.approx(2.5 * 64 * 4), 288 + 64 * 4)
    assert cost("aten::_fft_c2r", half, [1], 0) == (pytest.approx(2.5 * 64 * 4), 288 + 256)  # 2*(9-1)
    assert cost("aten::_fft_c2r", T((4, 9), "complex128"), [1], 0, 16)[1] == 576 + 64 * 8
    assert cost("aten::_fft_c2r", half, [0, 1], 0)[1] == 288 + 4 * 16 * 4  # the last transformed dim: 2*(9-1)
    assert "5 N log2 N" in count_op("aten::_fft_c2c", (x, [1], 0, True)).note


def test_softmax_family_by_hand():
    x = T((6, 7), "float16")  # 42 elements, 84 bytes
    for name in ("aten::_softmax", "aten::_log_softmax"):
        assert cost(name, x, 1, False) == (210, 168)
        assert cost(name, x, 1, True) == (210, 84 + 168)  # half_to_float
    assert cost("aten::_safe_softmax", x, 1, "float32") == (210, 84 + 168)
    assert cost("aten::_safe_softmax", x, 1) == (210, 168)
    assert cost("aten::softmax", x, 1) == (210, 168)
    assert cost("aten::log_softmax", x, 1, "float32") == (210, 84 + 168)
    assert cost("aten::_softmax", x, 1, False, outputs=[T((6, 7), "float32")]) == (210, 84 + 168)
    g = T((6, 7), "float32")
    assert cost("aten::_softmax_backward_data", g, x, 1, "float16") == (168, 168 + 84 + 84)
    assert cost("aten::_log_softmax_backward_data", g, x, 1) == (168, 168 + 84 + 168)
    mask = T((6, 7), "bool")
    assert cost("aten::_masked_softmax", x, mask, 1) == (210, 84 + 42 + 84)
    assert cost("aten::_masked_softmax", x, None, 1) == (210, 168)
    assert cost("aten::_masked_softmax_backward", g, x, mask) == (168, 168 + 84 + 42 + 168)

"""Every normalization formula by hand (count/norm.py's docstring: 5 FLOPs an element to normalise, +1 per affine
term; eval batch norm 2; rms 3 +1; backward 8/6/2 for grad_input, 2 grad_weight, 1 grad_bias), torch-free, on an
fp16 input so the float32 statistics are told apart from the output."""

from __future__ import annotations

from roofline.count.meta import TensorMeta as T
from rules_helpers import cost

N, C, H, W = 2, 3, 5, 7
E = N * C * H * W  # 210 elements
X = T((N, C, H, W), "float16")
XB = E * 2  # bytes of X


def test_layer_norm_forward():
    w, b = T((H, W), "float16"), T((H, W), "float16")
    stats = N * C * 4  # one float32 per normalised row, mean and rstd
    assert cost("aten::native_layer_norm", X, [H, W], w, b, 1e-5) == (7 * E, XB + 2 * 35 * 2 + XB + 2 * stats)
    assert cost("aten::native_layer_norm", X, [H, W], w, None, 1e-5) == (6 * E, XB + 35 * 2 + XB + 2 * stats)
    assert cost("aten::native_layer_norm", X, [H, W], None, b, 1e-5) == (6 * E, XB + 35 * 2 + XB + 2 * stats)
    one_axis = N * C * H * 4
    assert cost("aten::native_layer_norm", X, W, None, None, 1e-5) == (5 * E, 2 * XB + 2 * one_axis)
    assert cost("aten::native_layer_norm", X, [W], None, None, 1e-5, outputs=[X]) == (5 * E, 2 * XB)
    assert cost("aten::layer_norm", X, [H, W], w, b) == (7 * E, XB + 140 + XB)
    assert cost("aten::layer_norm", X, [H, W]) == (5 * E, 2 * XB)
    gw, gb = T((C,), "float16"), T((C,), "float16")
    assert cost("aten::group_norm", X, 3, gw, gb) == (7 * E, XB + 12 + XB)
    assert cost("aten::group_norm", X, 3, gw) == (6 * E, XB + 6 + XB)


def test_layer_norm_backward_by_output_mask():
    g, w, b = T((N, C, H, W), "float16"), T((W,), "float16"), T((W,), "float16")
    mean = rstd = T((N, C, H, 1), "float32")
    reads = 2 * XB + 2 * N * C * H * 4 + W * 2
    name = "aten::native_layer_norm_backward"
    assert cost(name, g, X, [W], mean, rstd, w, b, [True, True, True]) == (11 * E, reads + XB + 2 * W * 2)
    assert cost(name, g, X, [W], mean, rstd, w, b, [True, False, False]) == (8 * E, reads + XB)
    assert cost(name, g, X, [W], mean, rstd, w, b, [False, True, False]) == (2 * E, reads + W * 2)
    assert cost(name, g, X, [W], mean, rstd, w, b, [False, False, True]) == (E, reads + W * 2)
    assert cost(name, g, X, [W], mean, rstd, w, b, [True, True]) == (10 * E, reads + XB + W * 2)  # short mask
    assert cost(name, g, X, [W], mean, rstd, w, b, None) == (11 * E, reads + XB + 2 * W * 2)  # no mask: all
    assert cost(name, g, X, [W], mean, rstd, None, None, None) == (8 * E, 2 * XB + 2 * N * C * H * 4 + XB)
    assert cost(name, g, X, [W], mean, rstd, w, None, None) == (10 * E, reads + XB + W * 2)  # no bias: no grad_bias
    assert cost(name, g, X, [W], mean, rstd, None, None, [True, True, True]) == \
        (8 * E, 2 * XB + 2 * N * C * H * 4 + XB)  # no weight: no weight or bias gradient
    assert cost(name, g, X, [W], mean, rstd, w, b, [True, True, True], outputs=[X])[1] == reads + XB
    gf = T((N, C, H, W), "float32")
    assert cost(name, gf, X, [W], mean, rstd, None, None, [True, False, False])[1] == \
        E * 4 + XB + 2 * N * C * H * 4 + E * 4  # grad_input takes grad_out's dtype


def test_rms_norm():
    w = T((W,), "float16")
    rstd = N * C * H * 4
    assert cost("aten::_fused_rms_norm", X, [W], w, 1e-6) == (4 * E, XB + W * 2 + XB + rstd)
    assert cost("aten::_fused_rms_norm", X, [H, W], None, 1e-6) == (3 * E, XB + XB + N * C * 4)
    assert cost("aten::rms_norm", X, [W], w) == (4 * E, XB + W * 2 + XB)
    assert cost("aten::rms_norm", X, [W]) == (3 * E, 2 * XB)
    r = T((N, C, H, 1), "float32")
    name = "aten::_fused_rms_norm_backward"
    assert cost(name, X, X, [W], r, w, [True, True]) == (8 * E, 2 * XB + rstd + W * 2 + XB + W * 2)
    assert cost(name, X, X, [W], r, w, [True, False]) == (6 * E, 2 * XB + rstd + W * 2 + XB)
    assert cost(name, X, X, [W], r, w, [False, True]) == (2 * E, 2 * XB + rstd + W * 2 + W * 2)
    assert cost(name, X, X, [W], r, w, None) == (8 * E, 2 * XB + rstd + W * 2 + XB + W * 2)


def test_batch_norm_training_and_eval():
    w, b, rm, rv = (T((C,), "float32") for _ in range(4))
    params = 4 * C * 4
    saved = 2 * C * 4
    for name in ("aten::native_batch_norm", "aten::cudnn_batch_norm", "aten::miopen_batch_norm",
                 "aten::_native_batch_norm_legit"):
        assert cost(name, X, w, b, rm, rv, True, 0.1, 1e-5) == (7 * E, XB + params + XB + saved), name
        assert cost(name, X, w, b, rm, rv, False, 0.1, 1e-5) == (4 * E, XB + params + XB), name
    assert cost("aten::native_batch_norm", X, None, None, rm, rv, True, 0.1, 1e-5) == (5 * E, 2 * XB + 2 * C * 4 + saved)
    assert cost("aten::native_batch_norm", X, w, b, None, None, False, 0.1, 1e-5) == (4 * E, XB + 2 * C * 4 + XB)
    # one affine term per element for each of weight and bias that is there: 2 + 0, 2 + 1, 5 + 1
    assert cost("aten::native_batch_norm", X, None, None, rm, rv, False, 0.1, 1e-5) == (2 * E, XB + 2 * C * 4 + XB)
    assert cost("aten::native_batch_norm", X, w, None, rm, rv, False, 0.1, 1e-5) == (3 * E, XB + 3 * C * 4 + XB)
    assert cost("aten::native_batch_norm", X, w, None, rm, rv, True, 0.1, 1e-5) == \
        (6 * E, XB + 3 * C * 4 + XB + saved)
    assert cost("aten::native_batch_norm", X, w, b, rm, rv, kwargs={"training": True})[0] == 7 * E
    assert cost("aten::native_batch_norm", X, w, b, rm, rv)[0] == 4 * E  # training defaults to False
    assert cost("aten::_native_batch_norm_legit", X, w, b, True, 0.1, 1e-5) == (7 * E, XB + 2 * C * 4 + XB + saved)
    assert cost("aten::_native_batch_norm_legit_no_training", X, w, b, rm, rv, 0.1, 1e-5) == (4 * E, XB + params + XB)
    assert cost("aten::_batch_norm_no_update", X, w, b, rm, rv, 0.1, 1e-5) == (4 * E, XB + params + XB)
    assert cost("aten::_batch_norm_with_update", X, w, b, rm, rv, 0.1, 1e-5) == (7 * E, XB + params + XB + saved)
    assert cost("aten::batch_norm", X, w, b, rm, rv, True, 0.1, 1e-5, True) == (7 * E, XB + params + XB)
    assert cost("aten::instance_norm", X, w, b, rm, rv, True, 0.1, 1e-5, True) == (7 * E, XB + params + XB)
    flat = T((5, C), "float16")
    assert cost("aten::native_batch_norm", flat, w, b, rm, rv, True, 0.1, 1e-5)[1] == 30 + params + 30 + saved
    vec = T((7,), "float16")
    assert cost("aten::native_batch_norm", vec, None, None, None, None, True, 0.1, 1e-5)[1] == 14 + 14 + 2 * 7 * 4


def test_batch_norm_backward():
    g = X
    w = T((C,), "float16")  # 6 bytes, apart from the float32 statistics
    s = T((C,), "float32")
    name = "aten::native_batch_norm_backward"
    reads = 2 * XB + 6 + 4 * C * 4
    assert cost(name, g, X, w, s, s, s, s, True, 1e-5, [True, True, True]) == (11 * E, reads + XB + 2 * 6)
    assert cost(name, g, X, w, s, s, s, s, False, 1e-5, [True, False, False]) == (2 * E, reads + XB)
    assert cost(name, g, X, w, s, s, s, s)[0] == 11 * E  # train defaults to True, mask to all three
    assert cost("aten::batch_norm_backward", g, X, w, s, s, s, s, True, 1e-5, [True, True, False])[0] == 10 * E
    cud = "aten::cudnn_batch_norm_backward"
    assert cost(cud, X, g, w, s, s, s, s, 1e-5, T((0,), "uint8")) == (11 * E, 2 * XB + 6 + 2 * C * 4 + XB + 2 * 6)
    assert cost("aten::miopen_batch_norm_backward", X, g, w, s, s, s, s, 1e-5)[0] == 11 * E


def test_group_norm():
    w, b = T((C,), "float16"), T((C,), "float16")
    G = 3
    stats = 2 * N * G * 4
    assert cost("aten::native_group_norm", X, w, b, N, C, H * W, G, 1e-5) == (7 * E, XB + 12 + XB + stats)
    assert cost("aten::native_group_norm", X, None, None, N, C, H * W, 1, 1e-5) == (5 * E, 2 * XB + 2 * N * 4)
    assert cost("aten::native_group_norm", X, w, None, N, C, H * W, G, 1e-5) == (6 * E, XB + 6 + XB + stats)
    mean = rstd = T((N, G), "float32")
    name = "aten::native_group_norm_backward"
    reads = 2 * XB + 2 * N * G * 4 + 6
    assert cost(name, X, X, mean, rstd, w, N, C, H * W, G, [True, True, True]) == (11 * E, reads + XB + 12)
    assert cost(name, X, X, mean, rstd, w, N, C, H * W, G, [False, True, False]) == (2 * E, reads + 6)


def test_weight_norm():
    v, g = T((C, H), "float16"), T((C, 1), "float16")
    assert cost("aten::_weight_norm_interface", v, g, 0) == (3 * 15, 30 + 6 + 30 + C * 4)
    assert cost("aten::_weight_norm", v, g, 0) == (3 * 15, 30 + 6 + 30)
    norms = T((C, 1), "float32")
    assert cost("aten::_weight_norm_interface_backward", v, v, g, norms, 0) == (5 * 15, 30 + 30 + 6 + 12 + 30 + 6)
    assert cost("aten::_weight_norm_interface_backward", v, v, g, None, 0) == (5 * 15, 30 + 30 + 6 + 30 + 6)

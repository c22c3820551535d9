"""Every convolution op name by hand, torch-free: each backend's argument order (stride, padding, dilation,
groups, output_padding at different positions), output sizes from torch's documented rule, FlopCounterMode's
2 * batch * prod(weight) * prod(spatial), and the backward per output_mask. The values are worked here from
the shapes (tests/count/test_formula_values.py checks the generic ops against FlopCounterMode itself)."""

from __future__ import annotations

from roofline.count import count_op
from roofline.count.meta import TensorMeta as T
from rules_helpers import cost

X = T((2, 4, 11, 13), "float16")  # 1144 elements, 2288 bytes
WG = T((6, 2, 3, 3), "float16")  # groups=2: 108 elements, 216 bytes
W1 = T((6, 4, 3, 3), "float16")  # groups=1: 216 elements, 432 bytes
BIAS = T((6,), "float16")
# stride (2, 1), padding (1, 0), dilation (1, 2): H (11+2-2-1)//2+1 = 6, W (13-4-1)//1+1 = 9
OUT = 2 * 6 * 6 * 9
FG = 2 * 2 * 108 * 54
F1 = 2 * 2 * 216 * 54


def test_forward_argument_orders():
    s, p, d = [2, 1], [1, 0], [1, 2]
    grouped = (FG, 2288 + 216 + 12 + OUT * 2)
    assert cost("aten::convolution", X, WG, BIAS, s, p, d, False, [0, 0], 2) == grouped
    assert cost("aten::_convolution", X, WG, BIAS, s, p, d, False, [0, 0], 2, False, False, True, True) == grouped
    assert cost("aten::conv2d", X, WG, BIAS, s, p, d, 2) == grouped
    assert cost("aten::conv2d", X, W1) == (2 * 2 * 216 * 9 * 11, 2288 + 432 + 2 * 6 * 9 * 11 * 2)  # defaults
    no_bias = (FG, 2288 + 216 + OUT * 2)
    assert cost("aten::cudnn_convolution", X, WG, p, s, d, 2, False, False, True) == no_bias
    assert cost("aten::miopen_convolution", X, WG, p, s, d, 2, False, False) == no_bias
    assert cost("aten::mkldnn_convolution", X, WG, BIAS, p, s, d, 2) == grouped
    assert cost("aten::cudnn_convolution_relu", X, WG, BIAS, s, p, d, 2) == grouped
    z = T((2, 6, 6, 9), "float16")
    assert cost("aten::cudnn_convolution_add_relu", X, WG, z, 1.0, BIAS, s, p, d, 2) == \
        (FG, grouped[1] + OUT * 2)
    assert cost("aten::slow_conv_dilated2d", X, W1, [3, 3], BIAS, s, p, d) == (F1, 2288 + 432 + 12 + OUT * 2)
    # no dilation in these: W (13-2-1)//1+1 = 11
    out = 2 * 6 * 6 * 11
    assert cost("aten::_slow_conv2d_forward", X, W1, [3, 3], BIAS, s, p) == \
        (2 * 2 * 216 * 66, 2288 + 432 + 12 + out * 2)
    assert cost("aten::_nnpack_spatial_convolution", X, W1, BIAS, p, s) == (2 * 2 * 216 * 66, 2288 + 432 + 12 + out * 2)
    assert cost("aten::convolution", X, WG, BIAS, s, p, d, False, [0, 0], 2, outputs=[T((2, 6, 6, 9), "float32")]) \
        == (FG, 2288 + 216 + 12 + OUT * 4)


def test_padding_strings_unbatched_and_3d():
    assert cost("aten::conv2d", X, W1, None, 1, "same")[0] == 2 * 2 * 216 * 11 * 13
    assert cost("aten::conv2d", X, W1, None, 1, "valid")[0] == 2 * 2 * 216 * 9 * 11
    assert cost("aten::conv2d", X, W1, None, 1, [1], 1)[0] == 2 * 2 * 216 * 11 * 13  # one value for every dim
    unbatched = T((4, 11, 13), "float16")
    assert cost("aten::conv2d", unbatched, W1, None, [2, 1], [1, 0], [1, 2]) == (2 * 216 * 54, 1144 + 432 + 6 * 54 * 2)
    assert cost("aten::conv2d", unbatched, W1, outputs=[T((6, 9, 11), "float16")])[0] == 2 * 216 * 99
    vol = T((1, 2, 5, 6, 7), "float32")
    w3 = T((3, 2, 2, 2, 2), "float32")
    assert cost("aten::conv3d", vol, w3, None, 1, 0, 1, 1) == (2 * 48 * 4 * 5 * 6, 420 * 4 + 48 * 4 + 3 * 120 * 4)
    assert not count_op("aten::conv2d", (X, W1, None, [1, 1, 1])).modeled  # 3 strides for 2 spatial dims


def test_transposed_forward():
    x = T((2, 4, 5, 7), "float16")
    w = T((4, 3, 3, 3), "float16")  # (in, out / groups, kH, kW): 108
    # stride 2, padding 1, output_padding 1: H (5-1)*2-2+2+1+1 = 10, W (7-1)*2-2+2+1+1 = 14
    flops = 2 * 2 * 108 * 35  # spatial of the INPUT for a transposed conv
    out = 2 * 3 * 10 * 14
    expected = (flops, 560 + 216 + out * 2)
    assert cost("aten::convolution", x, w, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1) == expected
    assert cost("aten::conv_transpose2d", x, w, None, [2, 2], [1, 1], [1, 1], 1, [1, 1]) == expected
    assert cost("aten::cudnn_convolution_transpose", x, w, [1, 1], [1, 1], [2, 2], [1, 1], 1, False, False, True) \
        == expected
    assert cost("aten::slow_conv_transpose2d", x, w, [3, 3], None, [2, 2], [1, 1], [1, 1], [1, 1]) == expected
    # every parameter apart: padding (1, 1), output_padding (0, 1), dilation (2, 1):
    # H (5-1)*2 - 2 + 2*2 + 0 + 1 = 11, W (7-1)*2 - 2 + 2 + 1 + 1 = 14
    asym = (flops, 560 + 216 + 2 * 3 * 11 * 14 * 2)
    assert cost("aten::conv_transpose2d", x, w, None, [2, 2], [1, 1], [0, 1], 1, [2, 1]) == asym
    assert cost("aten::convolution", x, w, None, [2, 2], [1, 1], [2, 1], True, [0, 1], 1) == asym
    assert cost("aten::cudnn_convolution_transpose", x, w, [1, 1], [0, 1], [2, 2], [2, 1], 1, False, False, True) \
        == asym
    assert cost("aten::slow_conv_transpose2d", x, w, [3, 3], None, [2, 2], [1, 1], [0, 1], [2, 1]) == asym
    wg = T((4, 3, 3, 3), "float16")
    assert cost("aten::conv_transpose2d", x, wg, None, 1, 0, 0, 2)[1] == 560 + 216 + 2 * 6 * 7 * 9 * 2  # groups 2: 6 out
    dilated = cost("aten::conv_transpose2d", x, w, None, 1, 0, 0, 1, 2)
    assert dilated == (flops, 560 + 216 + 2 * 3 * 9 * 11 * 2)  # dilation 2: (5-1)+2*2+1 = 9, 11


def test_backward_per_output_mask():
    g = T((2, 6, 6, 9), "float32")  # 648 elements, 2592 bytes
    args = [[6], [2, 1], [1, 0], [1, 2], False, [0, 0], 2]
    name = "aten::convolution_backward"
    # grad_input as the transposed conv: FG; grad_weight 2*4*648*9 / groups 2 = FG
    reads_all, writes_all = 2592 + 216 + 2288, 1144 * 4 + 108 * 4 + 6 * 4
    full = count_op(name, (g, X, WG, *args, [True, True, True]))
    assert (full.flops, full.bytes) == (2 * FG, reads_all + writes_all) and "groups=2" in full.note
    assert cost(name, g, X, WG, *args, [True, False, False]) == (FG, 2592 + 216 + 1144 * 4)
    assert cost(name, g, X, WG, *args, [False, True, False]) == (FG, 2592 + 2288 + 108 * 4)
    assert cost(name, g, X, WG, *args, [False, False, True]) == (0, 2592 + 24)
    assert cost(name, g, X, WG, [6], [2, 1], [1, 0], [1, 2], False, [0, 0], 2) == (2 * FG, reads_all + writes_all)
    assert cost(name, g, X, WG, None, [2, 1], [1, 0], [1, 2], False, [0, 0], 2)[1] == reads_all + writes_all - 24
    assert cost(name, g, X, WG, *args, [True, True, True], outputs=[X])[1] == reads_all + 2288
    ungrouped = count_op(name, (g, X, W1, [6], [2, 1], [1, 0], [1, 2], False, [0, 0], 1, [False, True, False]))
    assert ungrouped.flops == 2 * 4 * 648 * 9 and ungrouped.note == ""
    assert cost("aten::_slow_conv2d_backward", g, X, W1, [3, 3], [2, 1], [1, 0], [True, True, True])[0] == \
        F1 + 2 * 4 * 648 * 9
    assert cost("aten::cudnn_convolution_backward", X, g, WG, [1, 0], [2, 1], [1, 2], 2, False, False, True,
                [True, True, False]) == (2 * FG, reads_all + 1144 * 4 + 108 * 4)
    assert cost("aten::cudnn_convolution_backward", X, g, WG, [1, 0], [2, 1], [1, 2], 2)[0] == 2 * FG


def test_transposed_backward():
    x = T((2, 4, 5, 7), "float16")
    w = T((4, 3, 3, 3), "float16")
    g = T((2, 3, 10, 14), "float16")
    name = "aten::convolution_backward"
    # grad_input: a plain conv of grad_out: 2*2*108*35; grad_weight: 2*3*prod(4,2,5,7)*9
    got = cost(name, g, x, w, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1, [True, True, False])
    assert got == (2 * 2 * 108 * 35 + 2 * 3 * 280 * 9, 840 * 2 + 216 + 280 * 2 + 280 * 2 + 216)

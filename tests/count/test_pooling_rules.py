"""Every pooling / upsampling / grid-sampling / im2col formula by hand (count/pooling.py's docstring), torch-free.
Output sizes are worked out here from torch's documented rule, floor((size + 2p - d(k-1) - 1) / s) + 1 (ceil_mode:
ceil, less one when the last window would start in the padding), on sizes where every parameter matters."""

from __future__ import annotations

from roofline.count import count_op
from roofline.count.meta import TensorMeta as T
from rules_helpers import cost

X = T((2, 3, 11, 13), "float16")  # 858 elements, 1716 bytes
XB = 1716


def test_max_pool_output_sizes_and_indices():
    # k3 s2 p1: H (11+2-2-1)//2+1 = 6, W (13+2-2-1)//2+1 = 7
    out = 2 * 3 * 6 * 7
    assert cost("aten::max_pool2d_with_indices", X, [3, 3], [2, 2], [1, 1], [1, 1], False) == \
        (out * 9, XB + out * 2 + out * 8)
    assert cost("aten::max_pool2d", X, [3, 3], [2, 2], [1, 1], [1, 1], False) == (out * 9, XB + out * 2)
    assert cost("aten::max_pool2d", X, 3, 2, 1) == (out * 9, XB + out * 2)
    assert cost("aten::mkldnn_max_pool2d", X, [3, 3], [2, 2], [1, 1], [1, 1], False) == (out * 9, XB + out * 2)
    # k2, stride defaults to the kernel: floor H 5 W 6; ceil H 6 W 7
    assert cost("aten::max_pool2d", X, [2, 2])[0] == 2 * 3 * 5 * 6 * 4
    assert cost("aten::max_pool2d", X, [2, 2], [], [0, 0], [1, 1], True)[0] == 2 * 3 * 6 * 7 * 4
    assert cost("aten::max_pool2d", X, [2, 2], [2, 2], [0, 0], [1, 1], kwargs={"ceil_mode": True})[0] == \
        2 * 3 * 6 * 7 * 4
    # dilation 2, k3, s1: H 11-4 = 7, W 13-4 = 9
    assert cost("aten::max_pool2d", X, [3, 3], [1, 1], [0, 0], [2, 2], False)[0] == 2 * 3 * 7 * 9 * 9
    # ceil_mode's last window inside the padding is dropped: size 5, k2 s2 p1 -> 3 (not 4)
    five = T((1, 1, 5), "float32")
    assert cost("aten::max_pool1d", five, [2], [2], [1], [1], True)[0] == 3 * 2
    assert cost("aten::max_pool1d_with_indices", five, [2], [2], [1], [1], False)[1] == 20 + 3 * 4 + 3 * 8
    # and kept when it starts inside the input plus left padding: size 5, k3 s5 p1 -> 2 (torch's shape too)
    assert cost("aten::max_pool1d", five, [3], [5], [1], [1], True) == (2 * 3, 20 + 2 * 4)
    # non-square: k (3, 2), s (1, 2): H 9, W 6
    assert cost("aten::max_pool2d", X, [3, 2], [1, 2])[0] == 2 * 3 * 9 * 6 * 6
    cube = T((1, 2, 5, 6, 7), "float32")
    assert cost("aten::max_pool3d_with_indices", cube, [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False) == \
        (2 * 2 * 3 * 3 * 8, 420 * 4 + 36 * 4 + 36 * 8)
    assert cost("aten::max_pool2d_with_indices", X, [3, 3], [2, 2], [1, 1], [1, 1], False, outputs=[X])[1] == 2 * XB


def test_avg_and_adaptive_pools():
    out = 2 * 3 * 6 * 7
    assert cost("aten::avg_pool2d", X, [3, 3], [2, 2], [1, 1], False, True, None) == (out * 9, XB + out * 2)
    assert cost("aten::avg_pool2d", X, [2, 2], [2, 2], [0, 0], True)[0] == 2 * 3 * 6 * 7 * 4
    assert cost("aten::avg_pool1d", T((2, 3, 11), "float32"), [3], [2], [1]) == (2 * 3 * 6 * 3, 66 * 4 + 36 * 4)
    assert cost("aten::avg_pool2d", X, [3, 3], [2, 2], [1, 1], outputs=[T((2, 3, 6, 7), "float32")])[1] == \
        XB + out * 4
    assert cost("aten::_adaptive_avg_pool2d", X, [1, 1]) == (858, XB + 6 * 2)
    assert cost("aten::adaptive_avg_pool2d", X, [4, 5]) == (858, XB + 2 * 3 * 20 * 2)
    assert cost("aten::adaptive_avg_pool2d", X, [None, 5]) == (858, XB + 2 * 3 * 11 * 5 * 2)
    assert cost("aten::adaptive_avg_pool2d", X, 3) == (858, XB + 2 * 3 * 9 * 2)
    cube = T((1, 2, 5, 6, 7), "float32")
    assert cost("aten::adaptive_avg_pool3d", cube, [None, 3, None]) == (420, 420 * 4 + 2 * 5 * 3 * 7 * 4)
    assert cost("aten::adaptive_max_pool2d", X, [4, 5]) == (858, XB + 120 * 2 + 120 * 8)
    assert cost("aten::adaptive_avg_pool1d", T((2, 3, 11), "float32"), [4]) == (66, 66 * 4 + 24 * 4)
    assert cost("aten::adaptive_avg_pool2d", X, [4, 5], outputs=[X])[1] == 2 * XB


def test_pool_backwards_read_grad_and_indices_write_self_shape():
    g = T((2, 3, 6, 7), "float16")
    idx = T((2, 3, 6, 7), "int64")
    assert cost("aten::max_pool2d_with_indices_backward", g, X, [3, 3], [2, 2], [1, 1], [1, 1], False, idx) == \
        (252, 252 * 2 + 252 * 8 + XB)
    assert cost("aten::adaptive_max_pool2d_backward", g, X, idx) == (252, 252 * 2 + 252 * 8 + XB)
    assert cost("aten::max_pool2d_with_indices_backward", g, X, kwargs={"indices": idx})[1] == 252 * 2 + 252 * 8 + XB
    gf = T((2, 3, 6, 7), "float32")
    assert cost("aten::max_pool2d_with_indices_backward", gf, X, idx)[1] == 252 * 4 + 252 * 8 + 858 * 4
    assert cost("aten::avg_pool2d_backward", g, X, [3, 3], [2, 2], [1, 1], False, True, None) == (858, 504 + XB)
    assert cost("aten::_adaptive_avg_pool2d_backward", gf, X) == (858, 1008 + 858 * 4)
    assert cost("aten::avg_pool2d_backward", g, X, outputs=[T((2, 3, 11, 13), "float32")])[1] == 504 + 858 * 4


def test_upsampling():
    assert cost("aten::upsample_nearest2d", X, [22, 26]) == (0, XB + 2 * 3 * 22 * 26 * 2)
    assert cost("aten::upsample_bilinear2d", X, [22, 26], False) == (7 * 3432, XB + 3432 * 2)
    assert cost("aten::upsample_bicubic2d", X, [22, 26], False) == (31 * 3432, XB + 3432 * 2)
    assert cost("aten::_upsample_bilinear2d_aa", X, [22, 26], False)[0] == 7 * 3432
    line = T((2, 3, 11), "float32")
    assert cost("aten::upsample_linear1d", line, [22], False) == (3 * 132, 66 * 4 + 132 * 4)
    cube = T((1, 2, 3, 4, 5), "float32")
    assert cost("aten::upsample_trilinear3d", cube, [6, 8, 10], False) == (15 * 960, 120 * 4 + 960 * 4)
    assert cost("aten::_upsample_nearest_exact2d", X, [22, 26])[0] == 0
    big = T((2, 3, 22, 26), "float16")
    assert cost("aten::upsample_bilinear2d", X, None, False, [2.0, 2.0], outputs=[big]) == (7 * 3432, XB + 3432 * 2)
    assert not count_op("aten::upsample_bilinear2d", (X, None, False, [2.0, 2.0])).modeled
    name = "aten::upsample_bilinear2d_backward"
    assert cost(name, big, [22, 26], [2, 3, 11, 13], False) == (7 * 3432, 3432 * 2 + XB)
    assert cost("aten::upsample_nearest2d_backward", big, [22, 26], [2, 3, 11, 13]) == (3432, 3432 * 2 + XB)
    assert cost(name, big, [22, 26], None, outputs=[X]) == (7 * 3432, 3432 * 2 + XB)
    assert not count_op(name, (big, [22, 26], None)).modeled


def test_grid_sampling():
    x = T((2, 3, 11, 13), "float32")  # 3432 bytes
    grid = T((2, 5, 7, 2), "float32")  # 70 locations, 560 bytes
    out = 2 * 3 * 5 * 7  # 210
    assert cost("aten::grid_sampler_2d", x, grid, 0, 0, False) == (7 * out + 4 * 70, min(3432, out * 4 * 4) + 560 + out * 4)
    assert cost("aten::grid_sampler_2d", x, grid, 1, 0, False) == (4 * 70, out * 4 + 560 + out * 4)
    assert cost("aten::grid_sampler_2d", x, grid, 2, 0, False) == (31 * out + 280, 3432 + 560 + out * 4)
    assert cost("aten::grid_sampler_2d", x, grid) == (7 * out + 280, 3360 + 560 + 840)  # bilinear by default
    vol = T((1, 2, 4, 5, 6), "float32")
    grid3 = T((1, 2, 3, 4, 3), "float32")  # 24 locations
    assert cost("aten::grid_sampler_3d", vol, grid3, 0, 0, False) == (15 * 48 + 4 * 24, min(960, 48 * 8 * 4) + 288 + 192)
    big = T((1, 2, 8, 8, 8), "float32")  # 4096 bytes: more than the 8 taps of 48 outputs gather
    assert cost("aten::grid_sampler_3d", big, grid3, 0, 0, False) == (15 * 48 + 4 * 24, 48 * 8 * 4 + 288 + 192)
    g = T((2, 3, 5, 7), "float32")
    assert cost("aten::grid_sampler_2d_backward", g, x, grid, 0, 0, False, [True, True]) == \
        (2 * (7 * out + 280), 3360 + 560 + 840 + 3432 + 560)
    assert cost("aten::grid_sampler_2d", x, grid, 0, outputs=[T((2, 3, 5, 7), "float16")])[1] == 3360 + 560 + 420


def test_affine_grid_generator():
    """Sweep 7 (a spatial transformer): affine_grid_generator had no formula, its whole time unmodelled. The base
    grid (N, H, W, 3) built, written and read, one product with theta (N, 2, 3) -> the grid (N, H, W, 2)."""
    theta = T((2, 2, 3), "float32")
    base = 2 * 5 * 7 * 3  # homogeneous coordinates per location
    assert cost("aten::affine_grid_generator", theta, [2, 4, 5, 7], False) == \
        (2 * base * 2, 2 * base * 4 + 48 + 2 * 5 * 7 * 2 * 4)
    theta3 = T((1, 3, 4), "float32")
    base3 = 2 * 3 * 4 * 4
    assert cost("aten::affine_grid_generator", theta3, [1, 1, 2, 3, 4], True) == \
        (2 * base3 * 3, 2 * base3 * 4 + 48 + 24 * 3 * 4)
    grad = T((2, 5, 7, 2), "float32")
    assert cost("aten::affine_grid_generator_backward", grad, [2, 4, 5, 7], False) == \
        (2 * base * 2, 2 * base * 4 + 560 + 48)


def test_im2col_and_col2im():
    img = T((2, 3, 5, 7), "float32")
    cols = T((2, 3 * 4, 24), "float32")  # k 2x2, 4x6 patches
    assert cost("aten::im2col", img, [2, 2], [1, 1], [0, 0], [1, 1], outputs=[cols]) == (0, 840 + 2304)
    assert not count_op("aten::im2col", (img, [2, 2], [1, 1], [0, 0], [1, 1])).modeled
    assert cost("aten::col2im", cols, [5, 7], [2, 2], [1, 1], [0, 0], [1, 1]) == (576, 2304 + 2 * 3 * 35 * 4)
    unbatched = T((12, 24), "float32")
    assert cost("aten::col2im", unbatched, [5, 7], [2, 2], [1, 1], [0, 0], [1, 1]) == (288, 1152 + 3 * 35 * 4)


def test_fractional_pooling_unpooling_and_antialiased_backward():
    """Sweep 8: fractional max pooling (and its backward), max unpooling and the antialiased bilinear upsampling's
    backward had no formula."""
    x = T((4, 8, 32, 32), "float32")
    samples = T((4, 8, 2), "float32")
    out = 4 * 8 * 16 * 16
    assert cost("aten::fractional_max_pool2d", x, [2, 2], [16, 16], samples) == \
        (out * 4, x.nbytes + samples.nbytes + out * (4 + 8))
    assert cost("aten::fractional_max_pool3d", T((1, 2, 8, 8, 8), "float32"), [2, 2, 2], [4, 4, 4],
                T((1, 2, 3), "float32"))[0] == 2 * 64 * 8
    grad, idx = T((4, 8, 16, 16), "float32"), T((4, 8, 16, 16), "int64")
    assert cost("aten::fractional_max_pool2d_backward", grad, x, [2, 2], [16, 16], idx) == \
        (out, grad.nbytes + idx.nbytes + x.nbytes)
    assert cost("aten::max_unpool2d", grad, idx, [32, 32]) == (0, grad.nbytes + idx.nbytes + x.nbytes)
    small = T((4, 8, 8, 8), "float32")  # the gradient of a 16 -> 8 downsampling
    assert cost("aten::_upsample_bilinear2d_aa_backward", small, [8, 8], [4, 8, 16, 16], False, None, None) == \
        (7 * small.numel, small.nbytes + grad.nbytes)

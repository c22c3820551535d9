"""torchvision.ops' custom ops (count/vision_ops.py's docstring) by hand, then against the real ops: the output a
formula infers when a trace records none must be the one torchvision returns."""

from __future__ import annotations

from math import log2

import pytest

from roofline.count import count_op
from roofline.count.meta import TensorMeta as T
from rules_helpers import cost

X = T((2, 3, 11, 13), "float16")  # 858 elements, 1716 bytes
ROIS = T((5, 5), "float32")  # 100 bytes


def test_roi_align_samples_per_bin_and_gathered_bytes():
    out = 5 * 3 * 4 * 3  # 180 outputs of 2 bytes
    # 2x2 samples: 8 FLOPs each; the taps (4 per sample) would be 5760 B, more than the map: the map read once
    assert cost("torchvision::roi_align", X, ROIS, 0.5, 4, 3, 2, True) == (8 * 4 * out, 1716 + 100 + 360)
    # one sample per bin: 1440 B of taps, less than the map
    assert cost("torchvision::roi_align", X, ROIS, 0.5, 4, 3, 1, True) == (8 * out, 4 * out * 2 + 100 + 360)
    adaptive = count_op("torchvision::roi_align", [X, ROIS, 0.5, 4, 3, 0, False])
    assert adaptive.flops == 8 * 4 * out and "adaptive" in adaptive.note
    quantized = cost("torchvision::qroi_align", X, ROIS, 0.1, 0, 0.1, 0, 0.5, 4, 3, 1, False)
    assert quantized == (8 * out, 4 * out * 2 + 100 + 360)


def test_position_sensitive_align_and_pools():
    x = T((2, 12, 11, 13), "float16")  # 12 channels = 3 outputs x 2x2 bins; 6864 bytes
    out = 5 * 3 * 2 * 2
    # output and its int32 channel mapping written
    assert cost("torchvision::ps_roi_align", x, ROIS, 0.5, 2, 2, 2) == (8 * 4 * out, 16 * out * 2 + 100 + out * 6)
    pooled = 5 * 3 * 4 * 3
    assert cost("torchvision::roi_pool", X, ROIS, 0.5, 4, 3) == (pooled, pooled * 2 + 100 + pooled * 6)
    assert cost("torchvision::ps_roi_pool", x, ROIS, 0.5, 2, 2) == (out, out * 2 + 100 + out * 6)


def test_backwards_write_the_whole_grad_input():
    grad = T((5, 3, 4, 3), "float32")  # 720 bytes
    assert cost("torchvision::_roi_align_backward", grad, ROIS, 0.5, 4, 3, 2, 3, 11, 13, 2, True) == \
        (8 * 4 * 180, 720 + 100 + 858 * 4)
    mapping = T((5, 3, 4, 3), "int32")
    assert cost("torchvision::_roi_pool_backward", grad, ROIS, mapping, 0.5, 4, 3, 2, 3, 11, 13) == \
        (180, 720 + 100 + 720 + 858 * 4)
    assert cost("torchvision::_ps_roi_align_backward", grad, ROIS, mapping, 0.5, 4, 3, 1, 2, 36, 11, 13) == \
        (8 * 180, 720 + 100 + 720 + 2 * 36 * 143 * 4)


def test_nms_counts_every_pair():
    dets, scores = T((100, 4), "float32"), T((100,), "float32")
    flops = 13 * 100 * 99 / 2 + 3 * 100 + 100 * log2(100)
    assert cost("torchvision::nms", dets, scores, 0.5) == pytest.approx((flops, 1600 + 400 + 800))
    assert "upper bound" in count_op("torchvision::nms", (dets, scores, 0.5), None, None).note
    assert cost("torchvision::nms", dets, scores, 0.5, outputs=[T((7,), "int64")])[1] == 1600 + 400 + 56
    assert cost("torchvision::nms", T((0, 4), "float32"), T((0,), "float32"), 0.5)[0] == 0


def test_deform_conv2d_products_and_sampling():
    x, w = T((2, 4, 9, 9), "float32"), T((6, 2, 3, 3), "float32")  # groups 2
    offset, mask, bias = T((2, 18, 9, 9), "float32"), T((2, 9, 9, 9), "float32"), T((6,), "float32")
    products = 2 * 2 * 108 * 81  # batch 2, prod(weight) 108, 9x9 outputs
    sampled = 2 * 4 * 9 * 81  # batch x C_in x taps x outputs
    read = 2592 + 432 + 11664 + 5832 + 24
    assert cost("torchvision::deform_conv2d", x, w, offset, mask, bias, 1, 1, 1, 1, 1, 1, 2, 1, True) == \
        (products + 8 * sampled, read + 972 * 4)
    assert cost("torchvision::deform_conv2d", x, w, offset, mask, bias, 1, 1, 1, 1, 1, 1, 2, 1, False) == \
        (products + 7 * sampled, read - 5832 + 972 * 4)
    # stride 2, no padding: (9 - 3) // 2 + 1 = 4 per side
    assert cost("torchvision::deform_conv2d", x, w, offset, mask, bias, 2, 2, 0, 0, 1, 1, 2, 1, False)[0] == \
        2 * 2 * 108 * 16 + 7 * 2 * 4 * 9 * 16
    grad = T((2, 6, 9, 9), "float32")
    assert cost("torchvision::_deform_conv2d_backward", grad, x, w, offset, mask, bias, 1, 1, 1, 1, 1, 1, 2, 1,
                True) == (2 * products + 2 * 8 * sampled + 972, 3888 + read - 24 + read)


def test_inferred_outputs_match_torchvision():
    """A trace records no outputs: each formula's inferred output bytes equal those torchvision returns."""
    torch = pytest.importorskip("torch")
    ops = pytest.importorskip("torchvision.ops")
    from roofline.count import to_meta

    torch.manual_seed(0)
    x = torch.randn(2, 8, 16, 16)
    xy = torch.rand(6, 2) * 10
    rois = torch.cat([torch.tensor([[0.0], [1.0], [0.0], [1.0], [0.0], [1.0]]), xy, xy + 4], 1)
    offset, mask = torch.randn(2, 18, 16, 16), torch.rand(2, 9, 16, 16)
    weight, bias = torch.randn(4, 8, 3, 3), torch.randn(4)
    tv = torch.ops.torchvision
    calls = {
        "roi_align": (tv.roi_align, (x, rois, 1.0, 2, 2, 2, True)),
        "ps_roi_align": (tv.ps_roi_align, (x, rois, 1.0, 2, 2, 2)),
        "roi_pool": (tv.roi_pool, (x, rois, 1.0, 3, 3)),
        "ps_roi_pool": (tv.ps_roi_pool, (x, rois, 1.0, 2, 2)),
        "nms": (tv.nms, (rois[:, 1:], torch.zeros(6), 1.1)),  # threshold above 1: every box kept
        "deform_conv2d": (tv.deform_conv2d, (x, weight, offset, mask, bias, 1, 1, 1, 1, 1, 1, 1, 1, True)),
    }
    assert ops.nms(rois[:, 1:], torch.zeros(6), 1.1).numel() == 6
    for name, (op, args) in calls.items():
        out = op(*args)
        live = count_op(op, to_meta(args), None, to_meta(list(out) if isinstance(out, tuple) else [out]))
        traced = count_op(f"torchvision::{name}", to_meta(args), None, None)
        assert live.modeled and traced.modeled, (live.note, traced.note)
        assert (traced.flops, traced.bytes) == (live.flops, live.bytes), name

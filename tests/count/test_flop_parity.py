"""Our FLOPs equal torch.utils.flop_counter.FlopCounterMode's wherever it counts an op (run on meta tensors,
so the CUDA-only attention kernels are checked on a CPU machine), and differ only where it is known wrong."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

from roofline.count import count_op, normalize_op_name, to_meta

aten = torch.ops.aten


def _both(op, *args, **kwargs):
    """(FlopCounterMode's FLOPs, our OpCost) for one call of ``op``."""
    with FlopCounterMode(display=False) as counter:
        out = op(*args, **kwargs)
    outputs = out if isinstance(out, (list, tuple)) else [out]
    ours = count_op(normalize_op_name(op), to_meta(args), to_meta(kwargs), to_meta(list(outputs)))
    return counter.get_total_flops(), ours


def _meta(*shape, dtype=torch.float32):
    return torch.empty(*shape, device="meta", dtype=dtype)


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (64, 32, 16), (128, 256, 512), (7, 3, 5), (4096, 4096, 1)])
def test_mm_and_addmm(m, k, n):
    expected, ours = _both(aten.mm.default, _meta(m, k), _meta(k, n))
    assert ours.modeled and ours.flops == expected == 2 * m * n * k
    expected, ours = _both(aten.addmm.default, _meta(n), _meta(m, k), _meta(k, n))
    assert ours.flops == expected


@pytest.mark.parametrize("b,m,k,n", [(1, 8, 8, 8), (12, 128, 64, 128), (3, 5, 7, 11)])
def test_bmm_and_baddbmm(b, m, k, n):
    expected, ours = _both(aten.bmm.default, _meta(b, m, k), _meta(b, k, n))
    assert ours.flops == expected == 2 * b * m * n * k
    expected, ours = _both(aten.baddbmm.default, _meta(b, m, n), _meta(b, m, k), _meta(b, k, n))
    assert ours.flops == expected


CONVS = [
    # x shape, w shape, stride, padding, dilation, transposed, output_padding, groups
    ((2, 3, 32, 32), (16, 3, 3, 3), [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
    ((2, 3, 224, 224), (64, 3, 7, 7), [2, 2], [3, 3], [1, 1], False, [0, 0], 1),
    ((1, 32, 17, 19), (64, 8, 3, 3), [2, 1], [1, 0], [1, 1], False, [0, 0], 4),
    ((1, 32, 16, 16), (32, 1, 3, 3), [1, 1], [1, 1], [2, 2], False, [0, 0], 32),
    ((2, 16, 8, 8), (16, 8, 4, 4), [2, 2], [1, 1], [1, 1], True, [0, 0], 1),
    ((2, 16, 9, 9), (16, 4, 3, 3), [2, 2], [1, 1], [1, 1], True, [1, 1], 2),
    ((2, 4, 50), (8, 4, 5), [1], [2], [1], False, [0], 1),
    ((1, 4, 6, 6, 6), (8, 4, 3, 3, 3), [1, 1, 1], [0, 0, 0], [1, 1, 1], False, [0, 0, 0], 1),
]


@pytest.mark.parametrize("x,w,stride,padding,dilation,transposed,output_padding,groups", CONVS)
def test_convolution(x, w, stride, padding, dilation, transposed, output_padding, groups):
    args = (_meta(*x), _meta(*w), None, stride, padding, dilation, transposed, output_padding, groups)
    expected, ours = _both(aten.convolution.default, *args)
    assert ours.modeled and ours.flops == expected > 0
    without_outputs = count_op("aten::convolution", to_meta(args))
    assert without_outputs.flops == expected, "the output shape inferred from the args must match the real one"


def test_conv2d_composite_in_a_trace_matches_convolution():
    x, w = _meta(2, 8, 20, 20), _meta(16, 2, 3, 3)
    expected, _ = _both(aten.convolution.default, x, w, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 4)
    ours = count_op("aten::conv2d", to_meta((x, w, None, [2, 2], [1, 1], [1, 1], 4)))
    assert ours.flops == expected


@pytest.mark.parametrize("x,w,stride,padding,dilation,transposed,output_padding,groups",
                         [c for c in CONVS if c[-1] == 1])
def test_convolution_backward_ungrouped(x, w, stride, padding, dilation, transposed, output_padding, groups):
    xt, wt = _meta(*x), _meta(*w)
    out = aten.convolution.default(xt, wt, None, stride, padding, dilation, transposed, output_padding, groups)
    args = (torch.empty_like(out), xt, wt, None, stride, padding, dilation, transposed, output_padding, groups,
            [True, True, False])
    expected, ours = _both(aten.convolution_backward.default, *args)
    assert ours.flops == expected > 0
    assert count_op("aten::convolution_backward", to_meta(args)).flops == expected


@pytest.mark.parametrize("x,w,stride,padding,dilation,transposed,output_padding,groups",
                         [c for c in CONVS if c[-1] > 1])
def test_convolution_backward_grouped_counts_true_weight_work(x, w, stride, padding, dilation, transposed,
                                                              output_padding, groups):
    """FlopCounterMode counts grouped grad_weight `groups` times over; we count the real work."""
    xt, wt = _meta(*x), _meta(*w)
    out = aten.convolution.default(xt, wt, None, stride, padding, dilation, transposed, output_padding, groups)
    grad = torch.empty_like(out)
    common = (grad, xt, wt, None, stride, padding, dilation, transposed, output_padding, groups)
    input_only, ours_input = _both(aten.convolution_backward.default, *common, [True, False, False])
    weight_only, ours_weight = _both(aten.convolution_backward.default, *common, [False, True, False])
    assert ours_input.flops == input_only
    assert ours_weight.flops == weight_only // groups
    assert "grouped" in ours_weight.note


SDPA_SHAPES = [
    # batch, q heads, kv heads, q len, kv len, head dim
    (1, 1, 1, 16, 16, 8),
    (2, 8, 8, 128, 128, 64),
    (2, 8, 2, 64, 64, 32),  # grouped-query attention
    (3, 4, 4, 32, 96, 16),  # cross attention, longer keys
]


@pytest.mark.parametrize("b,hq,hkv,sq,sk,d", SDPA_SHAPES)
def test_sdpa_fused_kernels_non_causal(b, hq, hkv, sq, sk, d):
    q = _meta(b, hq, sq, d, dtype=torch.float16)
    k, v = _meta(b, hkv, sk, d, dtype=torch.float16), _meta(b, hkv, sk, d, dtype=torch.float16)
    cases = [
        (aten._scaled_dot_product_flash_attention.default, (q, k, v, 0.0, False)),
        (aten._scaled_dot_product_efficient_attention.default, (q, k, v, None, True, 0.0, False)),
        (aten._scaled_dot_product_cudnn_attention.default, (q, k, v, None, True, 0.0, False, False)),
    ]
    for op, args in cases:
        try:
            expected, ours = _both(op, *args)
        except (AssertionError, RuntimeError):
            if hq == hkv:
                raise
            pytest.skip("this torch's FlopCounterMode does not handle grouped-query attention")
        assert ours.modeled and ours.flops == expected == 4 * b * hq * sq * sk * d, op
        assert ours.note == ""


@pytest.mark.parametrize("b,hq,hkv,sq,sk,d", SDPA_SHAPES)
def test_sdpa_backward_non_causal(b, hq, hkv, sq, sk, d):
    q, k, v = _meta(b, hq, sq, d), _meta(b, hkv, sk, d), _meta(b, hkv, sk, d)
    grad_out, out, lse = _meta(b, hq, sq, d), _meta(b, hq, sq, d), _meta(b, hq, sq)
    try:
        expected = sdpa_backward_flop_count(grad_out.shape, q.shape, k.shape, v.shape)
    except AssertionError:
        if hq == hkv:
            raise
        pytest.skip("this torch's FlopCounterMode does not handle grouped-query attention")
    args = (grad_out, q, k, v, out, lse, None, None, sq, sk, 0.0, False, _meta(2), _meta(()))
    ours = count_op("aten::_scaled_dot_product_flash_attention_backward", to_meta(args))
    assert ours.flops == expected
    efficient = (grad_out, q, k, v, None, out, lse, _meta(()), _meta(()), 0.0, [True, True, True, False], False)
    assert count_op("aten::_scaled_dot_product_efficient_attention_backward", to_meta(efficient)).flops == expected


def test_cpu_flash_attention_counts_like_the_cuda_kernels():
    """On CPU SDPA runs _scaled_dot_product_flash_attention_for_cpu, which FlopCounterMode leaves at 0."""
    q, k, v = (torch.randn(2, 4, 32, 16) for _ in range(3))
    with FlopCounterMode(display=False) as counter:
        out, lse = aten._scaled_dot_product_flash_attention_for_cpu.default(q, k, v)
    ours = count_op("aten::_scaled_dot_product_flash_attention_for_cpu", to_meta((q, k, v)), None, to_meta([out, lse]))
    assert ours.flops == sdpa_flop_count(q.shape, k.shape, v.shape)
    assert counter.get_total_flops() == 0


@pytest.mark.parametrize("s", [16, 128, 1024])
def test_causal_sdpa_counts_about_half_and_says_why(s):
    q = _meta(2, 4, s, 64, dtype=torch.bfloat16)
    full, ours = _both(aten._scaled_dot_product_flash_attention.default, q, q, q, 0.0, True)
    assert ours.flops == pytest.approx(full * (s + 1) / (2 * s))
    assert 0.5 <= ours.flops / full < 0.55
    assert "causal" in ours.note and "FlopCounterMode" in ours.note


def test_efficient_attention_kernel_reads_its_real_layout():
    """_efficient_attention_forward takes (b, s, h, d); FlopCounterMode reads it as (b, h, s, d)."""
    b, s, h, d = 2, 128, 12, 64
    q = _meta(b, s, h, d)
    ours = count_op("aten::_efficient_attention_forward",
                    to_meta((q, q, q, None, None, None, None, None, 0.0, 0, False)))
    assert ours.flops == 4 * b * h * s * s * d
    causal = count_op("aten::_efficient_attention_forward",
                      to_meta((q, q, q, None, None, None, None, None, 0.0, 1, False)))
    assert causal.flops == pytest.approx(ours.flops * (s + 1) / (2 * s))

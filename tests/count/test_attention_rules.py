"""Every attention op by hand, torch-free: each kernel's argument positions (mask, is_causal, out, logsumexp),
its layout ((b, h, s, d), (b, s, h, d), or varlen (tokens, h, d)), grouped-query heads, causal fractions top-left
and bottom-right, and the bytes (Q, K, V, mask read; output and fp32 logsumexp written). Dims: b 2, query heads
4, key/value heads 2, s_q 3, s_k 5, d_qk 8, d_v 6, all fp16."""

from __future__ import annotations

import pytest

from roofline.count import count_op
from roofline.count.meta import TensorMeta as T

Q, K, V = T((2, 4, 3, 8), "float16"), T((2, 2, 5, 8), "float16"), T((2, 2, 5, 6), "float16")
QS, KS, VS = T((2, 3, 4, 8), "float16"), T((2, 5, 2, 8), "float16"), T((2, 5, 2, 6), "float16")
MASK = T((2, 4, 3, 5), "float16")  # 240 bytes
QKV = 384 + 320 + 240
OUT, LSE = 288, 96
FWD = 2 * 120 * 8 + 2 * 120 * 6  # scores b*h_q*s_q*s_k = 120
BWD = 2 * 120 * (3 * 8 + 2 * 6)
TOP_LEFT, BOTTOM_RIGHT = 6 / 15, 12 / 15


def at(n, **pos):
    args = [None] * n
    for key, value in pos.items():
        args[int(key[1:])] = value
    return args


def cost(name, args, outputs=None):
    c = count_op(name, args, None, outputs)
    assert c.modeled, c.note
    return c.flops, c.bytes, c.note


@pytest.mark.parametrize("name, mask, causal", [
    ("aten::_scaled_dot_product_efficient_attention", 3, 6),
    ("aten::_scaled_dot_product_cudnn_attention", 3, 6),
    ("aten::_scaled_dot_product_fused_attention_overrideable", 3, 5),
    ("aten::_cudnn_attention_forward", 3, 10),
    ("aten::_scaled_dot_product_flash_attention", None, 4),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", None, 4),
])
def test_fused_forwards(name, mask, causal):
    plain = [Q, K, V] + [None] * 9
    assert cost(name, plain)[:2] == (FWD, QKV + OUT + LSE)
    on = list(plain)
    on[causal] = True
    flops, _, note = cost(name, on)
    assert flops == pytest.approx(FWD * TOP_LEFT) and "causal: only 0.400 of the 3x5" in note
    if mask is not None:
        masked = list(plain)
        masked[mask] = MASK
        assert cost(name, masked)[1] == QKV + MASK.nbytes + OUT + LSE
    assert cost(name, plain, outputs=[T((2, 4, 3, 6), "float32")])[1] == QKV + 576


def test_cpu_flash_takes_its_mask_as_a_keyword():
    c = count_op("aten::_scaled_dot_product_flash_attention_for_cpu", [Q, K, V], {"attn_mask": MASK})
    assert c.bytes == QKV + MASK.nbytes + OUT + LSE


def test_entry_points():
    assert cost("aten::scaled_dot_product_attention", [Q, K, V])[:2] == (FWD, QKV + OUT)  # no logsumexp
    assert cost("aten::scaled_dot_product_attention", [Q, K, V, MASK])[1] == QKV + 240 + OUT
    assert cost("aten::scaled_dot_product_attention", [Q, K, V, None, 0.0, True])[0] == pytest.approx(FWD * TOP_LEFT)
    assert cost("aten::_scaled_dot_product_attention_math", [Q, K, V])[1] == QKV + OUT + LSE
    unbatched = [T((4, 3, 8), "float16"), T((2, 5, 8), "float16"), T((2, 5, 6), "float16")]
    assert cost("aten::scaled_dot_product_attention", unbatched)[0] == FWD // 2
    extra = [T((2, 1, 4, 3, 8), "float16"), T((2, 1, 2, 5, 8), "float16"), T((2, 1, 2, 5, 6), "float16")]
    assert cost("aten::scaled_dot_product_attention", extra)[0] == FWD
    for bad in ([Q, T((2, 2, 5, 7), "float16"), V], [Q, K, T((2, 2, 4, 6), "float16")],
                [Q, T((2, 3, 5, 8), "float16"), T((2, 3, 5, 6), "float16")], [Q, K, T((2, 2, 6, 6), "float16")]):
        assert not count_op("aten::scaled_dot_product_attention", bad).modeled


def test_flash_and_efficient_kernels_read_b_s_h_d():
    assert cost("aten::_flash_attention_forward", [QS, KS, VS])[:2] == (FWD, QKV + OUT + LSE)
    assert cost("aten::_flash_attention_forward", at(9, a0=QS, a1=KS, a2=VS, a8=True))[0] == \
        pytest.approx(FWD * TOP_LEFT)
    varlen = at(9, a0=T((6, 4, 8), "float16"), a1=T((10, 2, 8), "float16"), a2=T((10, 2, 6), "float16"),
                a3=T((3,), "int32"))
    flops, nbytes, note = cost("aten::_flash_attention_forward", varlen)
    assert (flops, nbytes) == (FWD, QKV + OUT + LSE) and "variable-length" in note
    flops, nbytes, note = cost("aten::_efficient_attention_forward", [QS, KS, VS])
    assert (flops, nbytes) == (FWD, QKV + OUT + LSE) and "real layout" in note
    assert cost("aten::_efficient_attention_forward", at(10, a0=QS, a1=KS, a2=VS, a3=MASK))[1] == QKV + 240 + OUT + LSE
    assert cost("aten::_efficient_attention_forward", at(10, a0=QS, a1=KS, a2=VS, a9=1))[0] == \
        pytest.approx(FWD * TOP_LEFT)
    assert cost("aten::_efficient_attention_forward", at(10, a0=QS, a1=KS, a2=VS, a9=2))[0] == \
        pytest.approx(FWD * BOTTOM_RIGHT)
    packed = at(10, a0=T((1, 6, 4, 8), "float16"), a1=T((1, 10, 2, 8), "float16"), a2=T((1, 10, 2, 6), "float16"),
                a4=T((3,), "int32"))
    flops, nbytes, note = cost("aten::_efficient_attention_forward", packed)
    assert flops == FWD and "variable-length" in note


@pytest.mark.parametrize("name, out, lse, bias, causal", [
    ("aten::_scaled_dot_product_efficient_attention_backward", 5, 6, 4, 11),
    ("aten::_scaled_dot_product_flash_attention_backward", 4, 5, None, 11),
    ("aten::_scaled_dot_product_cudnn_attention_backward", 4, 5, 8, 14),
    ("aten::_scaled_dot_product_flash_attention_for_cpu_backward", 4, 5, None, 7),
    ("aten::_scaled_dot_product_fused_attention_overrideable_backward", 6, 7, 4, 13),
    ("aten::_cudnn_attention_backward", 4, 5, 8, 14),
])
def test_fused_backwards(name, out, lse, bias, causal):
    grad = T((2, 4, 3, 6), "float16")
    args = [grad, Q, K, V] + [None] * 12
    args[out], args[lse] = T((2, 4, 3, 6), "float16"), T((2, 4, 3), "float32")
    reads = 288 + QKV + 288 + 96
    assert cost(name, args)[:2] == (BWD, reads + QKV)
    if bias is not None:
        with_bias = list(args)
        with_bias[bias] = MASK
        assert cost(name, with_bias)[1] == reads + 240 + QKV
    args[causal] = True
    assert cost(name, args)[0] == pytest.approx(BWD * TOP_LEFT)
    assert cost(name, args, outputs=[Q])[1] == reads + 384


def test_flash_and_efficient_backwards():
    grad = T((2, 3, 4, 6), "float16")
    o, lse = T((2, 3, 4, 6), "float16"), T((2, 4, 3), "float32")
    reads = 288 + QKV + 288 + 96
    flash = at(12, a0=grad, a1=QS, a2=KS, a3=VS, a4=o, a5=lse)
    assert cost("aten::_flash_attention_backward", flash)[:2] == (BWD, reads + QKV)
    flash[11] = True
    assert cost("aten::_flash_attention_backward", flash)[0] == pytest.approx(BWD * TOP_LEFT)
    varlen = at(12, a0=T((6, 4, 6), "float16"), a1=T((6, 4, 8), "float16"), a2=T((10, 2, 8), "float16"),
                a3=T((10, 2, 6), "float16"), a6=T((3,), "int32"))
    flops, _, note = cost("aten::_flash_attention_backward", varlen)
    assert flops == BWD and "variable-length" in note
    eff = at(15, a0=grad, a1=QS, a2=KS, a3=VS, a4=MASK, a5=o, a10=lse)
    flops, nbytes, note = cost("aten::_efficient_attention_backward", eff)
    assert (flops, nbytes) == (BWD, reads + 240 + QKV) and "real layout" in note
    eff[14] = 2
    assert cost("aten::_efficient_attention_backward", eff)[0] == pytest.approx(BWD * BOTTOM_RIGHT)
    eff[14] = 1
    assert cost("aten::_efficient_attention_backward", eff)[0] == pytest.approx(BWD * TOP_LEFT)

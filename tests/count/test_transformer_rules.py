"""The fused transformer fast paths by hand (count/transformer.py's docstring): the unfused ops' FLOPs summed
(in-projection 2E^2 per token of q, k and v plus biases and the query scale; QK^T and PV 2*b*s_q*s_k*E each;
softmax 5 per score and head; out-projection; layer norms 7 or 5 an element; the feed-forward and its
activation; two residual adds), the op's inputs read and outputs written. E 4, 2 heads, batch 2, s_q 3, s_k 5."""

from __future__ import annotations

from roofline.count import count_op
from roofline.count.meta import TensorMeta as T
from roofline.count.transformer import attention_block_flops

E, H = 4, 2


def f32(*shape):
    return T(shape, "float32")


Q, K, V = f32(2, 3, E), f32(2, 5, E), f32(2, 5, E)
WEIGHTS = [f32(3 * E, E), f32(3 * E), f32(E, E), f32(E)]  # qkv weight and bias, out-projection weight and bias
READS = (24 + 40 + 40 + 48 + 12 + 16 + 4) * 4


def test_attention_block_by_hand():
    # in: 2*16*(6+10+10) + 4*26 + 4*6; scores 30: 4*30*4 + 5*30*2; out: 2*16*6 + 4*6
    assert attention_block_flops(Q, K, V, E, H) == 960 + 780 + 216
    q, k, v = f32(3, E), f32(5, E), f32(5, E)  # unbatched
    assert attention_block_flops(q, k, v, E, H) == 480 + 390 + 108


def test_native_multi_head_attention_outputs():
    name = "aten::_native_multi_head_attention"
    base = [Q, K, V, E, H, *WEIGHTS, None]
    assert count_op(name, base).flops == 1956
    assert count_op(name, base).bytes == READS + 96 + 2 * 3 * 5 * 4  # output and head-averaged weights
    assert count_op(name, base + [True, True]).bytes == READS + 96 + 120
    assert count_op(name, base + [False]).bytes == READS + 96
    assert count_op(name, base + [True, False]).bytes == READS + 96 + 2 * H * 3 * 5 * 4
    assert count_op("aten::_triton_multi_head_attention", base).bytes == READS + 96
    assert count_op(name, base, None, [Q]).bytes == READS + 96


def test_encoder_layer():
    src = f32(2, 3, E)
    norms = [f32(E)] * 4
    ffn = [f32(8, E), f32(8), f32(E, 8), f32(E)]
    args = [src, E, H, *WEIGHTS, False, False, 1e-5, *norms, *ffn, None, None]
    # attention 672 + 468 + 216; norms 7*24*2; ffn 4*6*4*8 + 6*(8+4) + act*6*8; residuals 2*24
    relu = count_op("aten::_transformer_encoder_layer_fwd", args)
    assert relu.flops == 1356 + 336 + 888 + 48
    assert relu.bytes == (24 + 48 + 12 + 16 + 4 + 16 + 32 + 8 + 32 + 4) * 4 + 96
    args[7] = True
    assert count_op("aten::_transformer_encoder_layer_fwd", args).flops == 1356 + 336 + 1224 + 48
    args[7] = False
    args[11] = None  # the first norm without its bias: 5 + 1 FLOPs an element
    assert count_op("aten::_transformer_encoder_layer_fwd", args).flops == 1356 + 6 * 24 + 7 * 24 + 888 + 48
    args[11] = norms[1]
    args[12] = args[13] = None
    assert count_op("aten::_transformer_encoder_layer_fwd", args).flops == 1356 + 7 * 24 + 5 * 24 + 888 + 48


def test_transform_bias_rescale_qkv():
    qkv, bias = f32(2, 3, 3 * E), f32(3 * E)
    c = count_op("aten::_transform_bias_rescale_qkv", [qkv, bias, H])
    assert (c.flops, c.bytes) == (72 + 24, 288 + 48 + 3 * 2 * H * 3 * 2 * 4)

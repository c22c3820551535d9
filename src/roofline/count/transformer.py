"""The fused transformer fast paths: _native_multi_head_attention (nn.MultiheadAttention in eval, also under
torchvision's ViT), _transformer_encoder_layer_fwd (nn.TransformerEncoderLayer in eval), and their helper
_transform_bias_rescale_qkv.

FLOPs, counted as the unfused ops they replace would be (matmul.py, softmax.py, norm.py, elementwise.py):
- in-projection: 2*E*E per token of query, key and value (one (3E, E) product when they are one tensor);
  its bias and the query's 1/sqrt(d) scale: 1 FLOP an element (_transform_bias_rescale_qkv);
- attention: Q@K^T and P@V, 2*b*s_q*s_k*E each (summed over heads, as attention.py), softmax 5 per score;
- out-projection 2*E*E per query token, plus its bias;
- encoder layer: the attention above, two layer norms (7 an element), the feed-forward 2*E*F*2 per token
  plus biases, relu (1) or gelu (8) on the hidden, two residual adds.
A nested (ragged) input, as the encoder's fast path makes of a padded batch with a padding mask, attends within
each sequence: its scores are the sum over components of s_i^2 (TensorMeta.components, seen live), not the
square of all tokens stacked into one sequence.
NB: the mask and the head-averaging of returned weights are not counted; torch's FlopCounterMode counts
nothing for these ops (it sees one op it has no formula for), so an eval-mode ViT is undercounted there.
Bytes: the op's own inputs (activations, weights, biases, mask) read once, its outputs written once (with
need_weights, the attention weights it returns). The fused kernels' intermediates (the qkv projection, the
attention output before the out-projection) are not counted: the minimum, as everywhere here.
"""

from __future__ import annotations

from roofline.count.meta import TensorMeta
from roofline.count.norm import _affine_flops
from roofline.count.registry import Call, OpCost, nbytes, register
from roofline.count.softmax import FORWARD_FLOPS_PER_ELEMENT as SOFTMAX_FLOPS

LAYER_NORM_FLOPS = 5  # per element before the affine part (norm.py's convention)
GELU_FLOPS, RELU_FLOPS = 8, 1


def _tokens_and_seq(x: TensorMeta) -> tuple[int, int, int]:
    """(batch, seq, embed) of a (b, s, E) or unbatched (s, E) tensor."""
    if x.ndim == 2:
        return 1, x.shape[0], x.shape[1]
    batch = x.numel // (x.shape[-2] * x.shape[-1]) if x.shape[-2] and x.shape[-1] else 0
    return batch, x.shape[-2], x.shape[-1]


def attention_block_flops(q: TensorMeta, k: TensorMeta, v: TensorMeta, embed: int, heads: int) -> float:
    """FLOPs of one multi-head attention with in- and out-projections, as the unfused ops would count them."""
    n_q, n_k, n_v = q.numel // embed, k.numel // embed, v.numel // embed
    in_proj = 2.0 * embed * embed * (n_q + n_k + n_v) + embed * (n_q + n_k + n_v) + embed * n_q
    scores = _score_count(q, k)
    attention = 4.0 * scores * embed + SOFTMAX_FLOPS * scores * heads
    out_proj = 2.0 * embed * embed * n_q + embed * n_q
    return in_proj + attention + out_proj


def _score_count(q: TensorMeta, k: TensorMeta) -> int:
    """batch * s_q * s_k, summed over the sequences of a nested query and key."""
    if q.components is not None and k.components is not None and len(q.components) == len(k.components):
        total = 0
        for cq, ck in zip(q.components, k.components):
            batch, s_q, _ = _tokens_and_seq(TensorMeta(cq, q.dtype))
            total += batch * s_q * _tokens_and_seq(TensorMeta(ck, k.dtype))[1]
        return total
    batch, s_q, _ = _tokens_and_seq(q)
    return batch * s_q * _tokens_and_seq(k)[1]


def _cost(call: Call, flops: float, fallback_outputs: list[TensorMeta]) -> OpCost:
    outputs = call.outputs if call.outputs is not None else fallback_outputs
    return OpCost(flops, float(nbytes(call.input_metas()) + nbytes(outputs)), True)


@register("aten::_native_multi_head_attention", "aten::_triton_multi_head_attention", composite=True)
def native_multi_head_attention(call: Call) -> OpCost:
    """(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight, proj_bias, mask,
    need_weights, average_attn_weights, mask_type). Composite in a trace: its children are the real ops."""
    q, k, v = call.tensor(0, "query"), call.tensor(1, "key"), call.tensor(2, "value")
    embed, heads = int(call.arg(3, "embed_dim")), int(call.arg(4, "num_head"))
    batch, s_q, _ = _tokens_and_seq(q)
    s_k = _tokens_and_seq(k)[1]
    outputs = [q.with_shape(q.shape)]
    if call.name == "aten::_native_multi_head_attention" and call.arg(10, "need_weights", True):
        averaged = call.arg(11, "average_attn_weights", True)
        outputs.append(q.with_shape((batch, s_q, s_k) if averaged else (batch, heads, s_q, s_k)))
    return _cost(call, attention_block_flops(q, k, v, embed, heads), outputs)


@register("aten::_transformer_encoder_layer_fwd", composite=True)
def transformer_encoder_layer(call: Call) -> OpCost:
    """(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu, norm_first, eps,
    norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2,
    mask, mask_type)."""
    src = call.tensor(0, "src")
    embed, heads = int(call.arg(1, "embed_dim")), int(call.arg(2, "num_heads"))
    ffn_hidden = call.tensor(14, "ffn_weight_1").shape[0]
    tokens = src.numel // embed
    norms = sum((LAYER_NORM_FLOPS + _affine_flops(call.maybe_tensor(w), call.maybe_tensor(b))) * src.numel
                for w, b in ((10, 11), (12, 13)))
    activation = GELU_FLOPS if call.arg(7, "use_gelu", False) else RELU_FLOPS
    ffn = 4.0 * tokens * embed * ffn_hidden + tokens * (ffn_hidden + embed) + activation * tokens * ffn_hidden
    residuals = 2.0 * src.numel
    flops = attention_block_flops(src, src, src, embed, heads) + norms + ffn + residuals
    return _cost(call, flops, [src.with_shape(src.shape)])


@register("aten::_transform_bias_rescale_qkv")
def transform_bias_rescale_qkv(call: Call) -> OpCost:
    """(qkv (b, s, 3E), qkv_bias (3E,), num_heads) -> q, k, v as (b, heads, s, E/heads): bias add on all,
    the 1/sqrt(d) scale on q."""
    qkv = call.tensor(0, "qkv")
    heads = int(call.arg(2, "num_heads"))
    batch, seq, width = _tokens_and_seq(qkv)
    part = TensorMeta((batch, heads, seq, width // 3 // max(heads, 1)), qkv.dtype)
    return _cost(call, qkv.numel + qkv.numel / 3, [part, part, part])

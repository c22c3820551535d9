"""Scaled dot-product attention: the SDPA entry point, every fused backend (flash, efficient, cudnn, the CPU
flash kernel, the math fallback, overrideable), their backwards, and the raw _flash/_efficient/_cudnn kernels.

FLOPs (torch.utils.flop_counter's sdpa_flop_count / sdpa_backward_flop_count, exactly, when not causal):
  forward  = 2 bmm: Q@K^T and P@V = 2*b*h_q*s_q*s_k*d_qk + 2*b*h_q*s_q*s_k*d_v.
  backward = 5 bmm: recompute scores, dP = dO@V^T, dV = P^T@dO, dQ = dS@K, dK = dS^T@Q.
  Softmax, scaling and masking inside the kernel are not counted (as there). Grouped-query attention
  (K/V with fewer heads than Q) counts h_q heads: each query head does the full product.
Where FlopCounterMode is known wrong we count the true work and say so in OpCost.note:
- causal attention: only the unmasked part of the score matrix is computed; we scale by the kept fraction
  (top-left aligned, as SDPA's is_causal: s*(s+1)/2 of s*s for square, about half; the efficient kernel's
  custom_mask_type=2 is bottom-right aligned). FlopCounterMode counts the full matrix.
- _efficient_attention_forward/backward take (batch, seq, heads, dim) tensors; FlopCounterMode reads them as
  (batch, heads, seq, dim). We read the real layout (as it does for _flash_attention_*).
- variable-length (packed, jagged) batches: (total_tokens, h, d) tensors split by cumulative lengths. Counted per
  sequence (sum of s_q_i * s_k_i, causal per sequence) from the lengths' values where the op is seen live; a trace
  records no values, so there the count is an estimate with the range the true one lies in (attention_varlen.py).
Bytes: Q, K, V (and a mask/bias, if any) read once; the output (b, h_q, s_q, d_v) and the fp32 logsumexp
(b, h_q, s_q) written once (flash-style kernels never write the s_q*s_k score matrix). The math fallback
(which does) appears in recordings as its own bmm/softmax ops. Backward reads dO, Q, K, V, O, logsumexp and
writes dQ, dK, dV.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.count.attention_varlen import Varlen, window_note
from roofline.count.causal_mask import causal_fraction, window_kept
from roofline.count.live import ArgValues
from roofline.count.meta import TensorMeta
from roofline.count.registry import Call, OpCost, nbytes, register


@dataclass(frozen=True, slots=True)
class _Dims:
    batch: int
    heads_q: int
    seq_q: int
    seq_k: int
    dim_qk: int
    dim_v: int


def _dims_bhsd(q: TensorMeta, k: TensorMeta, v: TensorMeta) -> _Dims:
    if q.ndim == 3:  # unbatched (h, s, d)
        q, k, v = (TensorMeta((1,) + t.shape, t.dtype) for t in (q, k, v))
    b, h_q, s_q, d_qk = q.shape[-4:] if q.ndim >= 4 else q.shape
    _, h_kv, s_k, d_k = k.shape[-4:]
    s_v, d_v = v.shape[-2], v.shape[-1]
    batch = b
    for extra in q.shape[:-4]:
        batch *= extra
    if d_k != d_qk or s_v != s_k or h_kv == 0 or h_q % h_kv:
        raise ValueError(f"attention shapes do not fit: q={q.shape} k={k.shape} v={v.shape}")
    return _Dims(batch, h_q, s_q, s_k, d_qk, d_v)


def _dims_bshd(q: TensorMeta, k: TensorMeta, v: TensorMeta) -> _Dims:
    swap = [TensorMeta((t.shape[0], t.shape[2], t.shape[1], t.shape[3]), t.dtype) for t in (q, k, v)]
    return _dims_bhsd(*swap)


def _varlen_dims(q: TensorMeta, k: TensorMeta, v: TensorMeta) -> _Dims:
    """A variable-length batch's (total_tokens, heads, dim) tensors as one sequence of all its tokens: the shape
    its output has; its FLOPs are ``Varlen``'s (per sequence)."""
    return _dims_bshd(*(TensorMeta((1,) + t.shape, t.dtype) for t in (q, k, v)))


def _flash_dims(q: TensorMeta, k: TensorMeta, v: TensorMeta, cum_seq_q: TensorMeta | None) -> _Dims:
    """Flash attention's tensors: (total_tokens, heads, dim) with cumulative lengths, else (b, s, h, d)."""
    if cum_seq_q is not None and q.ndim == 3:
        return _varlen_dims(q, k, v)
    return _dims_bshd(q, k, v)


def forward_flops(d: _Dims) -> int:
    scores = d.batch * d.heads_q * d.seq_q * d.seq_k
    return 2 * scores * d.dim_qk + 2 * scores * d.dim_v


def backward_flops(d: _Dims) -> int:
    bh = d.batch * d.heads_q
    return 2 * bh * d.seq_q * d.seq_k * (d.dim_qk + d.dim_v + d.dim_v + d.dim_qk + d.dim_qk)


def _causal_scaled(flops: float, d: _Dims, causal: bool, bottom_right: bool, notes: list[str],
                   window: tuple[int, int] | None = None) -> float:
    """``flops`` of the full score matrix, cut to the causal part (and noted) when the op is causal, or to a sliding
    window's (left, right) part (causal_mask.window_kept)."""
    if window is not None:
        fraction = window_kept(d.seq_q, d.seq_k, *window) / max(d.seq_q * d.seq_k, 1)
        notes.append(f"{window_note(window)}: only {fraction:.3f} of the {d.seq_q}x{d.seq_k} score matrix is computed")
        return flops * fraction
    if not causal:
        return flops
    fraction = causal_fraction(d.seq_q, d.seq_k, bottom_right)
    notes.append(f"causal: only {fraction:.3f} of the {d.seq_q}x{d.seq_k} score matrix is computed; "
                 "FlopCounterMode counts it all")
    return flops * fraction


def _forward_cost(call: Call, d: _Dims, q: TensorMeta, reads: list[TensorMeta | None], causal: bool,
                  bottom_right: bool = False, writes_lse: bool = True, note: str = "",
                  varlen: Varlen | None = None, window: tuple[int, int] | None = None) -> OpCost:
    notes = [note] if note else []
    if varlen is None:
        flops = _causal_scaled(float(forward_flops(d)), d, causal, bottom_right, notes, window)
    else:
        flops = varlen.flops(forward_flops, d, causal, bottom_right, notes, window)
    if call.outputs is not None:
        written = nbytes(call.outputs)
    else:
        written = d.batch * d.heads_q * d.seq_q * d.dim_v * q.itemsize
        if writes_lse:
            written += d.batch * d.heads_q * d.seq_q * 4
    return OpCost(flops, float(nbytes(reads) + written), True, note="; ".join(notes))


def _backward_cost(call: Call, d: _Dims, reads: list[TensorMeta | None], grads_like: list[TensorMeta | None],
                   causal: bool, bottom_right: bool = False, note: str = "", varlen: Varlen | None = None,
                   window: tuple[int, int] | None = None, grads_in_place: bool = False) -> OpCost:
    """``grads_in_place``: the op writes its gradients into ``grads_like`` (buffers it was given) and returns only
    the rest of its outputs."""
    notes = [note] if note else []
    if varlen is None:
        flops = _causal_scaled(float(backward_flops(d)), d, causal, bottom_right, notes, window)
    else:
        flops = varlen.flops(backward_flops, d, causal, bottom_right, notes, window)
    if grads_in_place:
        written = nbytes(grads_like) + (nbytes(call.outputs) if call.outputs is not None else 0)
    else:
        written = nbytes(call.outputs) if call.outputs is not None else nbytes(grads_like)
    return OpCost(flops, float(nbytes(reads) + written), True, note="; ".join(notes))


def _qkv(call: Call, first: int = 0) -> tuple[TensorMeta, TensorMeta, TensorMeta]:
    return call.tensor(first, "query"), call.tensor(first + 1, "key"), call.tensor(first + 2, "value")


# Forward ops laid out (batch, heads, seq, dim): name -> (mask/bias arg index or None, is_causal arg index,
# writes logsumexp)
_BHSD_FORWARD = {
    "aten::_scaled_dot_product_efficient_attention": (3, 6, True),
    "aten::_scaled_dot_product_flash_attention": (None, 4, True),
    "aten::_scaled_dot_product_cudnn_attention": (3, 6, True),
    "aten::_scaled_dot_product_flash_attention_for_cpu": (None, 4, True),
    "aten::_scaled_dot_product_fused_attention_overrideable": (3, 5, True),
    "aten::_cudnn_attention_forward": (3, 10, True),
}
_MASK_KWARGS = {"aten::_scaled_dot_product_flash_attention_for_cpu": "attn_mask"}


@register(*_BHSD_FORWARD)
def sdpa_forward(call: Call) -> OpCost:
    mask_index, causal_index, writes_lse = _BHSD_FORWARD[call.name]
    q, k, v = _qkv(call)
    mask = call.maybe_tensor(mask_index, "attn_bias") if mask_index is not None else None
    if call.name in _MASK_KWARGS:
        mask = call.maybe_tensor(5, _MASK_KWARGS[call.name])
    causal = bool(call.arg(causal_index, "is_causal", False))
    return _forward_cost(call, _dims_bhsd(q, k, v), q, [q, k, v, mask], causal, writes_lse=writes_lse)


@register("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_attention_math",
          "aten::_scaled_dot_product_attention_math_for_mps", composite=True)
def sdpa_entry(call: Call) -> OpCost:
    """Composite: dispatches to one of the fused kernels (or the math decomposition) counted above."""
    q, k, v = _qkv(call)
    mask = call.maybe_tensor(3, "attn_mask")
    causal = bool(call.arg(5, "is_causal", False))
    writes_lse = call.name != "aten::scaled_dot_product_attention"
    return _forward_cost(call, _dims_bhsd(q, k, v), q, [q, k, v, mask], causal, writes_lse=writes_lse)


_EFFICIENT_LAYOUT_NOTE = ("FlopCounterMode reads this op's (b, s, h, d) tensors as (b, h, s, d); counted with the "
                          "real layout")
# A variable-length call's (index, keyword) of its cumulative query and key lengths and longest query and key
_FLASH_FORWARD_LENGTHS = ((3, "cum_seq_q"), (4, "cum_seq_k"), (5, "max_q"), (6, "max_k"))
_EFFICIENT_FORWARD_LENGTHS = ((4, "cu_seqlens_q"), (5, "cu_seqlens_k"), (6, "max_seqlen_q"), (7, "max_seqlen_k"))
_FLASH_BACKWARD_LENGTHS = ((6, "cum_seq_q"), (7, "cum_seq_k"), (8, "max_q"), (9, "max_k"))
_EFFICIENT_BACKWARD_LENGTHS = ((6, "cu_seqlens_q"), (7, "cu_seqlens_k"), (8, "max_seqlen_q"), (9, "max_seqlen_k"))


@register("aten::_flash_attention_forward", live=ArgValues(_FLASH_FORWARD_LENGTHS[:2]))
def flash_forward(call: Call) -> OpCost:
    """Args: query, key, value, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, ... (b, s, h, d), or
    (total_tokens, h, d) with cumulative lengths."""
    q, k, v = _qkv(call)
    cum_seq_q = call.maybe_tensor(3, "cum_seq_q")
    dims = _flash_dims(q, k, v, cum_seq_q)
    varlen = Varlen.of(call, dims, _FLASH_FORWARD_LENGTHS) if q.ndim == 3 else None
    return _forward_cost(call, dims, q, [q, k, v], bool(call.arg(8, "is_causal", False)), varlen=varlen)


@register("aten::_efficient_attention_forward", live=ArgValues(_EFFICIENT_FORWARD_LENGTHS[:2]))
def efficient_forward(call: Call) -> OpCost:
    """Args: query, key, value, bias, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
    custom_mask_type (0 none, 1 causal top-left, 2 causal bottom-right), ... Tensors are (b, s, h, d)."""
    q, k, v = _qkv(call)
    bias = call.maybe_tensor(3, "bias")
    mask_type = call.arg(9, "custom_mask_type", 0)
    dims = _dims_bshd(q, k, v)
    return _forward_cost(call, dims, q, [q, k, v, bias], mask_type in (1, 2), bottom_right=mask_type == 2,
                         note=_EFFICIENT_LAYOUT_NOTE, varlen=Varlen.of(call, dims, _EFFICIENT_FORWARD_LENGTHS))


# Backward ops laid out (batch, heads, seq, dim): name -> (out index, logsumexp index, bias index, is_causal index)
_BHSD_BACKWARD = {
    "aten::_scaled_dot_product_efficient_attention_backward": (5, 6, 4, 11),
    "aten::_scaled_dot_product_flash_attention_backward": (4, 5, None, 11),
    "aten::_scaled_dot_product_cudnn_attention_backward": (4, 5, 8, 14),
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": (4, 5, None, 7),
    "aten::_scaled_dot_product_fused_attention_overrideable_backward": (6, 7, 4, 13),
    "aten::_cudnn_attention_backward": (4, 5, 8, 14),
}


@register(*_BHSD_BACKWARD)
def sdpa_backward(call: Call) -> OpCost:
    out_index, lse_index, bias_index, causal_index = _BHSD_BACKWARD[call.name]
    grad_out = call.tensor(0, "grad_out")
    q, k, v = _qkv(call, 1)
    reads = [grad_out, q, k, v, call.maybe_tensor(out_index, "out"), call.maybe_tensor(lse_index, "logsumexp")]
    if bias_index is not None:
        reads.append(call.maybe_tensor(bias_index, "attn_bias"))
    causal = bool(call.arg(causal_index, "is_causal", False))
    return _backward_cost(call, _dims_bhsd(q, k, v), reads, [q, k, v], causal)


@register("aten::_flash_attention_backward", live=ArgValues(_FLASH_BACKWARD_LENGTHS[:2]))
def flash_backward(call: Call) -> OpCost:
    """Args: grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
    is_causal, ... Tensors are (b, s, h, d), or (total_tokens, h, d) with cumulative lengths."""
    grad_out = call.tensor(0, "grad_out")
    q, k, v = _qkv(call, 1)
    cum_seq_q = call.maybe_tensor(6, "cum_seq_q")
    dims = _flash_dims(q, k, v, cum_seq_q)
    varlen = Varlen.of(call, dims, _FLASH_BACKWARD_LENGTHS) if q.ndim == 3 else None
    reads = [grad_out, q, k, v, call.maybe_tensor(4, "out"), call.maybe_tensor(5, "logsumexp")]
    return _backward_cost(call, dims, reads, [q, k, v], bool(call.arg(11, "is_causal", False)), varlen=varlen)


@register("aten::_efficient_attention_backward", live=ArgValues(_EFFICIENT_BACKWARD_LENGTHS[:2]))
def efficient_backward(call: Call) -> OpCost:
    """Args: grad_out, query, key, value, bias, out, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
    logsumexp, dropout_p, philox_seed, philox_offset, custom_mask_type, ... Tensors are (b, s, h, d)."""
    grad_out = call.tensor(0, "grad_out")
    q, k, v = _qkv(call, 1)
    mask_type = call.arg(14, "custom_mask_type", 0)
    reads = [grad_out, q, k, v, call.maybe_tensor(4, "bias"), call.maybe_tensor(5, "out"),
             call.maybe_tensor(10, "logsumexp")]
    dims = _dims_bshd(q, k, v)
    return _backward_cost(call, dims, reads, [q, k, v], mask_type in (1, 2), bottom_right=mask_type == 2,
                          note=_EFFICIENT_LAYOUT_NOTE, varlen=Varlen.of(call, dims, _EFFICIENT_BACKWARD_LENGTHS))


# The flash-attn package's ops (flash-attn 2.x, torch.library custom ops; "flash_attn::" before 2.7.1, "flashattn::"
# since), which Hugging Face models call with attn_implementation="flash_attention_2". Tensors are (b, s, h, d), or
# (total_tokens, h, d) with cumulative lengths (varlen). Causal is bottom-right aligned (flash-attn >= 2.1); a
# window_size_left/right of -1 is unbounded, causal sets the right one to 0 (as the kernel does). Name -> (index and
# keyword of is_causal, the cumulative lengths' (index, keyword) or None).
_FA2_VARLEN_FORWARD_LENGTHS = ((3, "cu_seqlens_q"), (4, "cu_seqlens_k"), (5, "max_seqlen_q"), (6, "max_seqlen_k"))
_FA2_VARLEN_BACKWARD_LENGTHS = ((9, "cu_seqlens_q"), (10, "cu_seqlens_k"), (11, "max_seqlen_q"), (12, "max_seqlen_k"))
_FA2_FORWARD = {"_flash_attn_forward": (5, None), "_flash_attn_varlen_forward": (9, _FA2_VARLEN_FORWARD_LENGTHS)}
_FA2_BACKWARD = {"_flash_attn_backward": (11, None), "_flash_attn_varlen_backward": (15, _FA2_VARLEN_BACKWARD_LENGTHS)}
_FA2_NAMESPACES = ("flash_attn::", "flashattn::")


def _fa2_window(call: Call, causal_index: int) -> tuple[bool, tuple[int, int] | None]:
    """(causal, the sliding window's (left, right) or None): flash-attn's own reading of causal, window_size_left
    and window_size_right (the two arguments after is_causal)."""
    causal = bool(call.arg(causal_index, "causal", False))
    left = call.arg(causal_index + 1, "window_size_left", -1)
    right = call.arg(causal_index + 2, "window_size_right", -1)
    left = left if isinstance(left, int) and not isinstance(left, bool) else -1
    right = 0 if causal else (right if isinstance(right, int) and not isinstance(right, bool) else -1)
    if left < 0 and (causal or right < 0):
        return causal, None
    return causal, (left, right)


def _fa2_dims(q: TensorMeta, k: TensorMeta, v: TensorMeta, lengths: tuple | None) -> _Dims:
    if lengths is not None and k.ndim == 4:  # a paged KV cache: (blocks, block size, heads, dim)
        raise ValueError("paged KV cache (block_table): which cached keys each sequence reads is not recorded")
    return _varlen_dims(q, k, v) if lengths is not None else _dims_bshd(q, k, v)


@register(*(ns + name for ns in _FA2_NAMESPACES for name in _FA2_FORWARD),
          live=ArgValues(_FA2_VARLEN_FORWARD_LENGTHS[:2]))
def flash_attn_forward(call: Call) -> OpCost:
    """Args: q, k, v, [cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,] dropout_p, softmax_scale, causal,
    window_size_left, window_size_right, softcap, alibi_slopes, return_softmax, ... Returns out, softmax_lse,
    S_dmask (empty unless asked for), rng_state."""
    causal_index, lengths = _FA2_FORWARD[call.name.split("::", 1)[1]]
    q, k, v = call.tensor(0, "q"), call.tensor(1, "k"), call.tensor(2, "v")
    dims = _fa2_dims(q, k, v, lengths)
    causal, window = _fa2_window(call, causal_index)
    varlen = Varlen.of(call, dims, lengths) if lengths is not None else None
    return _forward_cost(call, dims, q, [q, k, v], causal, bottom_right=True, varlen=varlen, window=window)


@register(*(ns + name for ns in _FA2_NAMESPACES for name in _FA2_BACKWARD),
          live=ArgValues(_FA2_VARLEN_BACKWARD_LENGTHS[:2]))
def flash_attn_backward(call: Call) -> OpCost:
    """Args: dout, q, k, v, out, softmax_lse, dq, dk, dv, [cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,]
    dropout_p, softmax_scale, causal, window_size_left, window_size_right, ... Writes dq, dk, dv in place (given, or
    shaped like q, k, v) and returns softmax_d."""
    causal_index, lengths = _FA2_BACKWARD[call.name.split("::", 1)[1]]
    dout = call.tensor(0, "dout")
    q, k, v = call.tensor(1, "q"), call.tensor(2, "k"), call.tensor(3, "v")
    dims = _fa2_dims(q, k, v, lengths)
    causal, window = _fa2_window(call, causal_index)
    varlen = Varlen.of(call, dims, lengths) if lengths is not None else None
    reads = [dout, q, k, v, call.maybe_tensor(4, "out"), call.maybe_tensor(5, "softmax_lse")]
    grads = [_given(call, 6, "dq", q), _given(call, 7, "dk", k), _given(call, 8, "dv", v)]
    return _backward_cost(call, dims, reads, grads, causal, bottom_right=True, varlen=varlen, window=window,
                          grads_in_place=True)


def _given(call: Call, index: int, name: str, like: TensorMeta) -> TensorMeta:
    """The buffer at ``index`` the op writes a gradient into, else one shaped like ``like`` (it allocates it)."""
    given = call.maybe_tensor(index, name)
    return given if given is not None else like

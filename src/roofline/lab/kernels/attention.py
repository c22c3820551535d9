"""One token's attention for a batch-1 decode step, with RoPE and the KV-cache write fused in.

Input: the stacked q/k/v projection of the token (one vector, q heads then k heads then v heads, as
model.FusedAttention splits it). Each program takes one KV head and its GROUP query heads (grouped-query
attention: the cache is read once per KV head) over one slice of the cache (flash-decoding: the sequence is
split so that many programs read it, each a few KB, all its loads issued at once); the program whose slice holds
``pos`` rotates the new key, writes it and the value into the cache there and adds the token itself to its
softmax (so no program reads a slot that is being written). ``pos`` is a device tensor: the same launch serves
every step of a CUDA graph, so the grid covers the whole cache (max_seq slots) and the cost follows ``pos``
instead: slices past it return as soon as they have read it, the slice holding it reads only its blocks before
``pos``, and the last program of a head to arrive merges only the live slices' partial softmaxes, in split order,
a block of slices (every column of the group) per L2 round trip. Under programmatic dependent launch (``pdl``)
the first block of the cache is read before waiting for the previous kernel, q/k/v after.
"""

from __future__ import annotations

import math

import torch

from roofline.lab.kernels import interpreting, triton_available
from roofline.lab.kernels.gemv import Scratch
from roofline.lab.kernels.l2_prefetch import CHUNK_BYTES, MAX_RANGES, prefetch_programs
from roofline.models.llama import apply_rope, attention


def attention_torch(qkv, k_cache, v_cache, cos, sin, pos, out, *, n_heads: int, n_kv_heads: int) -> torch.Tensor:
    """The torch twin: models/llama.py's ops for one token at slot ``pos`` (batch 1, no padding)."""
    head_dim = k_cache.shape[-1]
    q, k, v = qkv.split([n_heads * head_dim, n_kv_heads * head_dim, n_kv_heads * head_dim])
    q = q.view(1, 1, n_heads, head_dim)
    k = k.view(1, 1, n_kv_heads, head_dim)
    c, s = cos[pos][None], sin[pos][None]
    q, k = apply_rope(q, c, s), apply_rope(k, c, s)
    k_cache[:1, :, pos] = k.transpose(1, 2)
    v_cache[:1, :, pos] = v.view(1, 1, n_kv_heads, head_dim).transpose(1, 2)
    mask = (torch.arange(k_cache.shape[2], device=qkv.device) <= pos)[None, None, None]
    y = attention(q.transpose(1, 2), k_cache[:1], v_cache[:1], mask)
    return out.copy_(y.transpose(1, 2).reshape(-1))


def splits_for(max_seq: int, t_per_split: int) -> int:
    return -(-max_seq // t_per_split)


def scratch_floats(n_kv_heads: int, n_heads: int, head_dim: int, splits: int) -> int:
    return n_kv_heads * splits * (n_heads // n_kv_heads) * (2 + head_dim)


V2_BLOCK_ELEMENTS = 256 * 64  # version 2's widest block of K (and of V): 256 slots at head dim 64, 64 KB of fp16
# K and V (64 registers a thread at 8 warps); 128 slots at head dim 128 (256 spilled there on sm_90)


def v2_block_t(t_per_split: int, head_dim: int) -> int:
    """Version 2's cache slots loaded at once: the whole slice, up to V2_BLOCK_ELEMENTS // head_dim."""
    return min(t_per_split, max(16, V2_BLOCK_ELEMENTS // head_dim))


def v2_warps(block_t: int) -> int:
    """Version 2's warps: 4 up to 64-slot blocks (as version 1), 8 above."""
    return 4 if block_t <= 64 else 8


def live_split_block(position: int, t_per_split: int) -> int:
    """The merge's splits per step for a decode around cache slot ``position``: the live slices there (a power of
    two, 2 to 16), not the cache's. launch_constants' default follows the cache's splits (8 for 256-slot slices of
    a 2,048-slot cache, 2 of a 328-slot one), and the lab's 2,048-slot row paid for it (issue 19): its attention v2
    tuning at slot 288 timed 256-slot slices at 8.2 us against 6.4 us in the shorter cache, and kept 32-slot
    slices, version 1's. Any value is correct: the merge loops over the live slices in blocks of this many."""
    return min(16, max(2, _pow2(position // t_per_split + 1)))


COMBINE_FLOATS = 8192  # partials the combine loads at once: 64 registers a thread at 4 warps


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def launch_constants(n_heads: int, n_kv_heads: int, head_dim: int, max_seq: int, t_per_split: int,
                     block_t: int, split_block: int | None = None) -> dict:
    """The kernel's compile-time constants (shared with benchmarks/decode_kernels_sm90.py's compile check).

    The combine reads the partials of ``split_block`` splits (every column of the group) at a time: by default
    16, fewer where that would be more than COMBINE_FLOATS floats, never more than the splits there are."""
    group = n_heads // n_kv_heads
    splits = splits_for(max_seq, t_per_split)
    group_pow2 = max(2, _pow2(group))
    if split_block is None:
        split_block = min(16, _pow2(splits), max(2, COMBINE_FLOATS // (group_pow2 * head_dim)))
    return dict(Q_HEADS=n_heads, KV_HEADS=n_kv_heads, GROUP=group, GROUP_PAD=max(16, _pow2(group)),
                HEAD_DIM=head_dim, HALF=head_dim // 2, BLOCK_T=block_t, T_PER_SPLIT=t_per_split, SPLITS=splits,
                GROUP_POW2=group_pow2, SPLIT_BLOCK=max(2, _pow2(split_block)))


def decode_attention(qkv: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, cos: torch.Tensor,
                     sin: torch.Tensor, pos: torch.Tensor, out: torch.Tensor, *, n_heads: int, n_kv_heads: int,
                     scratch: Scratch, t_per_split: int = 32, block_t: int | None = None, num_warps: int | None = None,
                     pdl: bool = False, split_block: int | None = None, version: int = 1,
                     early_launch: bool = False, l2_prefetch: list[tuple[torch.Tensor, int]] = (),
                     l2_chunk: int = CHUNK_BYTES) -> torch.Tensor:
    """The Triton kernel, launched once: out (n_heads * head_dim,) for the token whose q/k/v is ``qkv``.

    ``block_t``: cache slots loaded at once (default: the whole slice up to 64, so a program makes one pass;
    version 2: v2_block_t's). ``split_block``: splits the combine merges per step (default: launch_constants').
    ``version`` 2: triton_attention_v2's kernel (a lone live slice writes the output itself, no merge phase).
    ``early_launch`` (version 2, under ``pdl``): the next kernel may start when this one starts, not after its wait.
    ``l2_prefetch`` (version 2): up to three (tensor, bytes from its start) ranges (l2_prefetch.prefetch_ranges)
    that extra programs ask the L2 to fetch while attention runs, ``l2_chunk`` bytes a request, one request a
    thread; under Triton's interpreter the programs are launched but issue nothing."""
    if not triton_available():
        raise RuntimeError("decode_attention: Triton is not installed (use attention_torch)")
    if version == 2:
        from roofline.lab.kernels.triton_attention_v2 import decode_attention_v2_kernel as decode_attention_kernel
    elif version == 1:
        from roofline.lab.kernels.triton_attention import decode_attention_kernel
    else:
        raise ValueError(f"decode_attention: version {version} (1 or 2)")
    if early_launch and version != 2:
        raise ValueError("decode_attention: early_launch is version 2's")
    if l2_prefetch and version != 2:
        raise ValueError("decode_attention: l2_prefetch is version 2's")

    head_dim = k_cache.shape[-1]
    max_seq = k_cache.shape[2]
    block_t = block_t or (min(t_per_split, 64) if version == 1 else v2_block_t(t_per_split, head_dim))
    if num_warps is None:
        num_warps = 4 if version == 1 else v2_warps(block_t)
    if not (k_cache.is_contiguous() and v_cache.is_contiguous()) or t_per_split % block_t or block_t < 16:
        raise ValueError("decode_attention: contiguous caches, block_t >= 16 and t_per_split a multiple of it needed")
    consts = launch_constants(n_heads, n_kv_heads, head_dim, max_seq, t_per_split, block_t, split_block)
    splits = consts["SPLITS"]
    if scratch.partial.numel() < scratch_floats(n_kv_heads, n_heads, head_dim, splits):
        raise ValueError("decode_attention: Scratch too small for the partial softmaxes")
    extra, prefetch = 0, {}
    if l2_prefetch:
        lanes = 32 * num_warps  # one prefetch a thread: a smaller block would be repeated across threads
        if l2_chunk <= 0 or l2_chunk % 16:
            raise ValueError(f"decode_attention: l2_chunk {l2_chunk} is not a positive multiple of 16")
        extra = -(-prefetch_programs(list(l2_prefetch), lanes, l2_chunk) // splits)
        if len(l2_prefetch) > MAX_RANGES:
            raise ValueError(f"decode_attention: at most {MAX_RANGES} L2-prefetch ranges")
        prefetch = {}
        for name, (t, nbytes) in zip("ABC", list(l2_prefetch) + [(None, 0)] * MAX_RANGES):
            prefetch.update({f"PF_{name}": 0 if t is None else t.data_ptr(), f"PF_{name}_BYTES": nbytes})
        prefetch.update(L2_PREFETCH=True, L2_ISSUE=not interpreting(), PF_CHUNK=l2_chunk,
                        PF_LANES=lanes)
    decode_attention_kernel[(n_kv_heads + extra, splits)](
        qkv, k_cache, v_cache, cos, sin, pos, out, scratch.partial, scratch.counters, 1.0 / math.sqrt(head_dim),
        max_seq, **consts, PDL=pdl, num_warps=num_warps, **({"launch_pdl": True} if pdl else {}),
        **({"EARLY_LAUNCH": early_launch} if version == 2 else {}), **prefetch,
    )
    return out

"""Which weight bytes a kernel asks the L2 to fetch ahead (Hopper's ``cp.async.bulk.prefetch.L2``), host side.

Issue 19: llama-1b's attention takes ~7 us a layer on ~260 KB of cache, latency while the memory bus is idle,
and the products after it (wo, then the stacked gate/up w13) read 8.4 and 46 MB from DRAM. Extra programs of the
attention kernel (triton_attention_v2's ``L2_PREFETCH``) ask the L2 for the first bytes of those weights at once,
so the products find them there. The instruction wants a 16-byte aligned address and a size that is a multiple
of 16 (a 32-bit operand); the plan below keeps both, and the kernel issues one prefetch of at most CHUNK_BYTES a
lane. Nothing here needs Triton or a GPU.
"""

from __future__ import annotations

import torch

CHUNK_BYTES = 32 * 1024  # bytes one lane asks for at once (the L2 sees 32-byte sectors; any multiple of 16 is valid)
# The chunk sizes tried: one SM's copy engine may take its requests one after another, so smaller chunks spread
# the same bytes over more programs (SMs); 32 KB chunks put 8 MB on one 8-warp program.
CHUNK_CANDIDATES = (4 * 1024, CHUNK_BYTES)
MAX_RANGES = 3  # byte ranges one launch prefetches (the kernel's A, B and C)


def prefetch_ranges(tensors: list[torch.Tensor], nbytes: int) -> list[tuple[torch.Tensor, int]]:
    """The first ``nbytes`` of ``tensors`` read in order, as (tensor, bytes from its start): each a multiple of 16,
    the tensors contiguous with a 16-byte aligned start (else left out, with every tensor after it)."""
    ranges = []
    left = max(0, int(nbytes))
    for t in tensors[:MAX_RANGES]:
        if left < 16 or not t.is_contiguous() or t.data_ptr() % 16:
            break
        size = min(left, t.numel() * t.element_size()) // 16 * 16
        if size:
            ranges.append((t, size))
        left -= size
    return ranges


def next_weights_ranges(wo: torch.Tensor, w13: torch.Tensor, nbytes: int) -> list[tuple[torch.Tensor, int]]:
    """The ranges of ``nbytes`` of the products after attention: wo's first bytes, then what is left split evenly
    between the first rows of w13's gate half and of its up half (its first programs read row r of both, so a
    prefix of the stacked tensor would give them only half their bytes from the L2)."""
    ranges = prefetch_ranges([wo], nbytes)
    left = max(0, int(nbytes) - sum(n for _, n in ranges))
    half = w13.shape[0] // 2
    for part in (w13[:half], w13[half:]):
        ranges += prefetch_ranges([part], left // 2)
    return ranges


def chunks(nbytes: int, chunk: int = CHUNK_BYTES) -> int:
    return -(-nbytes // chunk)


def prefetch_programs(ranges: list[tuple[torch.Tensor, int]], lanes: int, chunk: int = CHUNK_BYTES) -> int:
    """Programs that issue every chunk of ``ranges`` with one prefetch a lane each (``lanes`` a program)."""
    return -(-max((chunks(n, chunk) for _, n in ranges), default=0) // lanes)


def chunk_plan(nbytes: int, program: int, programs: int, lanes: int, chunk: int = CHUNK_BYTES) -> list[tuple[int, int]]:
    """(byte offset, size) of each prefetch ``program`` of ``programs`` issues over a range of ``nbytes``: the
    kernel's loop (triton_l2.prefetch_range) in Python. A lane past the last chunk repeats the last one (a size of
    0 is not a valid prefetch, and a repeat costs the L2 nothing it has not done)."""
    n = chunks(nbytes, chunk)
    plan = []
    for first in range(program * lanes, n, programs * lanes):
        for c in range(first, first + lanes):
            c = min(c, n - 1)
            plan.append((c * chunk, min(nbytes - c * chunk, chunk)))
    return plan

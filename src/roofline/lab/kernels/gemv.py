"""y = W x for one token (W [rows, K] as nn.Linear stores it), with the decode step's neighbours fused in.

Prologue: the RMSNorm that feeds the product (``norm_weight``): every program reads the whole input vector (a
few KB, from L2) for its mean square, so no kernel of its own writes the normed vector. Epilogue: the residual
add after ``wo`` and ``w2`` (``residual``), or SiLU(gate) * up after the stacked gate/up weight (``halves=2``:
rows [0, N) are the gate, [N, 2N) the up projection, and each program reads both for its N-range).

Split-K for short outputs (``wo`` and ``w2`` have only ``dim`` rows): the K range is cut into ``split_k`` parts,
each program writes an fp32 partial sum, and the last program of each row block to arrive (an atomic counter
per block, reset by that program) adds the partials in a fixed order and runs the epilogue, so the result does
not depend on the order the programs ran in and no second kernel is launched.

Roundings follow the eager model's fp16/bf16 ops (the norm's square, mean, rsqrt and products, the product's
output, SiLU and the add each rounded to the model dtype), so tokens match the eager model's wherever the
fp32 sums inside the products agree.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

from roofline.lab.kernels import triton_available


@dataclass(frozen=True)
class GemvConfig:
    block_n: int = 8
    block_k: int = 512
    split_k: int = 1
    num_warps: int = 4
    reduce_each: bool = False  # sum every tile at once (fewer registers, more programs resident) or at the end
    unroll: int = 1  # iterations unrolled, so that ptxas can issue their loads together
    stages: int = 1  # > 1: the K loop software-pipelined that deep (cp.async copies of the next tiles)
    prefetch: int = 1  # > 1: that many tiles of K (one load) read before the wait for the previous kernel (PDL)
    early_launch: bool = False  # PDL: let the next kernel start when this one starts, not after this one's wait
    evict_first: bool = False  # weight loads marked first to leave the L2 (keep lines another kernel prefetched)

    def as_dict(self) -> dict:
        return asdict(self)


# (rows per program, K per iteration, warps, sum each tile at once, unroll, stages): chosen from sm_90 builds:
# with a [rows, K] accumulator the 4x512 and 8x512 tiles take 96-104 registers and unrolled by 2 ptxas issues
# both iterations' loads before the first FMA (two tiles in flight); summing each tile at once takes 48-56
# registers (more programs resident) but keeps one tile in flight. 16x256 unrolled and 16x1024 spill, so they
# are left out. Without ``stages`` Triton does not pipeline these loops (no cp.async in the PTX): each iteration
# waits for its own tiles, a DRAM round trip, so a 2048-wide row in 512-wide tiles costs four in a row.
# The entries after the first ten are for 1-46 MB weights, where every first H200 tuning chose 4-row tiles:
# 2 rows per program and tiles as wide as 2048 (a row pair in one pass: each thread's 16-byte loads all
# issued at once, no loop), 8 warps where a tile is 4096+ elements, and loops pipelined 3 deep.
TILES = (
    (4, 512, 4, False, 1, 1), (8, 512, 4, False, 1, 1), (16, 512, 8, False, 1, 1),
    (4, 256, 4, False, 2, 1), (4, 512, 4, False, 2, 1), (8, 256, 4, False, 2, 1),
    (4, 1024, 4, False, 1, 1), (8, 1024, 4, False, 1, 1),
    (8, 512, 4, True, 1, 1), (8, 1024, 4, True, 1, 1),
    (2, 1024, 4, False, 1, 1), (4, 1024, 8, False, 1, 1), (2, 2048, 8, False, 1, 1), (4, 2048, 8, False, 1, 1),
    (2, 4096, 8, False, 1, 1), (4, 512, 4, False, 1, 3), (8, 512, 4, False, 1, 3), (4, 1024, 8, False, 1, 3),
)


def candidate_configs(rows: int, k: int, sm_count: int = 132, halves: int = 1) -> list[GemvConfig]:
    """The tiles of TILES that suit a (rows, K) product (each is a compile, so few).

    Each tile gets the smallest split-K that gives about two programs per multiprocessor (``wo`` and ``w2``
    have few rows), and the 4-row tiles are also tried unsplit. The 4-warp 1024-wide tiles only where K >= 4096
    and the 8-warp and 2-row wide tiles where K >= their width (they are for 2048-4096-wide rows); pipelined
    tiles only where their loop has two or more iterations; with ``halves=2`` (gate and up rows: two
    accumulators) no tile above 32 elements per thread per accumulator or unrolled 8-row tile (they spill or
    nearly)."""
    found: list[GemvConfig] = []
    for block_n, block_k, warps, reduce_each, unroll, stages in TILES:
        if block_k >= 1024 and (k < block_k if (warps == 8 or block_n == 2) else k < 4096):
            continue
        if stages > 1 and k < 3 * block_k:
            continue
        per_thread = block_n * block_k // (32 * warps)
        if halves == 2 and not reduce_each and (per_thread > 32 or block_n > 8 or (unroll > 1 and block_n > 4)):
            continue
        block_k = min(block_k, max(256, _pow2_at_least(k)))
        blocks = -(-rows // block_n)
        split = 1
        while blocks * split < 2 * sm_count and k // (2 * split) >= block_k:
            split *= 2
        found.append(GemvConfig(block_n, block_k, split, warps, reduce_each, unroll, stages))
        if split > 1 and block_n <= 4:
            found.append(GemvConfig(block_n, block_k, 1, warps, reduce_each, unroll, stages))
    return list(dict.fromkeys(found))


# Deep prefetch under PDL (issue 19): (rows per program, K per tile, warps). A program reads its first
# ``prefetch`` tiles at once before waiting for the previous kernel, at most PREFETCH_ELEMENTS a thread (and half
# that per accumulator for the stacked gate/up weight), so that its whole share of a 1-2k-wide row block sits in
# registers while the previous kernel drains; the candidates' depths run from 2 tiles to the whole row.
PREFETCH_TILES = ((2, 512, 4), (2, 1024, 4), (4, 512, 4), (4, 1024, 8), (8, 512, 8), (2, 1024, 8), (2, 2048, 8))
PREFETCH_ELEMENTS = 64  # fp16 weights a thread holds before the wait: 32 registers (the one-tile 2x2048 at 8 warps)


def prefetch_configs(rows: int, k: int, sm_count: int = 132, halves: int = 1) -> list[GemvConfig]:
    """Tiles for the PDL step with deep prefetch: each PREFETCH_TILES tile at every power-of-two depth from 2
    tiles up to the whole row (or PREFETCH_ELEMENTS a thread), unsplit (a row block's K in one program: the
    merge of split-K would wait on every split's load), widest first."""
    found: list[GemvConfig] = []
    limit = PREFETCH_ELEMENTS // halves
    for block_n, block_k, warps in PREFETCH_TILES:
        if block_k > k:
            continue
        tiles = -(-k // block_k)
        depth = 2
        while depth <= tiles and block_n * block_k * depth // (32 * warps) <= limit:
            found.append(GemvConfig(block_n, block_k, 1, warps, prefetch=depth))
            depth *= 2
    return list(dict.fromkeys(found))


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


class Scratch:
    """fp32 partial sums and zeroed arrival counters that split-K products share (kernels run one at a time)."""

    def __init__(self, device: torch.device, floats: int = 1 << 20, counters: int = 1 << 14) -> None:
        self.partial = torch.empty(floats, dtype=torch.float32, device=device)
        self.counters = torch.zeros(counters, dtype=torch.int32, device=device)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """models/llama.py's RMSNorm, op for op (so in the model's dtype)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def gemv_torch(w, x, out, *, halves=1, norm_weight=None, eps=1e-5, residual=None, scale=None) -> torch.Tensor:
    """The torch twin: the eager model's ops in the model's dtype (with ``scale``: FP8 weights, fp32 sums scaled)."""
    if norm_weight is not None:
        x = rms_norm(x, norm_weight, eps)
    y = F.linear(x, w) if scale is None else fp8_linear(x, w, scale)
    if halves == 2:
        gate, up = y.chunk(2, dim=-1)
        y = F.silu(gate) * up
    if residual is not None:
        y = residual + y
    return out.copy_(y)


def fp8_linear(x: torch.Tensor, w8: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """x @ (scale * w8)^T for e4m3 weights ``w8`` [rows, K] and fp32 per-row ``scale`` [rows], in x's dtype.

    Every e4m3 value is exact in fp16/bf16/fp32, so upcasting the weights loses nothing; the product is summed in
    fp32 and each output row multiplied by its scale before the one rounding to x's dtype (as the kernel does)."""
    return (F.linear(x.float(), w8.float()) * scale).to(x.dtype)


def gemv(w: torch.Tensor, x: torch.Tensor, out: torch.Tensor, *, config: GemvConfig, scratch: Scratch | None = None,
         halves: int = 1, norm_weight: torch.Tensor | None = None, eps: float = 1e-5,
         residual: torch.Tensor | None = None, pdl: bool = False, scale: torch.Tensor | None = None) -> torch.Tensor:
    """out = epilogue(W prologue(x)), x (K,), out (rows // halves,); the Triton kernel, launched once.

    ``scale`` (fp32, one per row of W): W holds e4m3 weights, each row's sum is multiplied by its scale.

    ``pdl``: launched with programmatic dependent launch (Hopper on): its first weight tile (``config.prefetch``
    tiles at once where > 1) is read while the previous kernel finishes, and it waits for that kernel before reading
    anything else."""
    rows, k = w.shape
    n = rows // halves
    if x.numel() != k or out.numel() != n or not w.is_contiguous():
        raise ValueError(f"gemv: W {tuple(w.shape)} x {tuple(x.shape)} -> out {tuple(out.shape)} (halves={halves})")
    split = config.split_k
    blocks = -(-n // config.block_n)
    per_split = -(-(-(-k // split)) // config.block_k) * config.block_k
    prefetch = config.prefetch
    if prefetch > 1 and (prefetch & (prefetch - 1) or prefetch * config.block_k > per_split):
        raise ValueError(f"gemv: prefetch {prefetch} (a power of two) tiles of {config.block_k} must fit the "
                         f"{per_split} elements of K a program reads")
    if split > 1:
        if scratch is None or scratch.partial.numel() < split * rows or scratch.counters.numel() < blocks:
            raise ValueError("gemv: split-K needs a Scratch big enough for its partial sums and counters")
    partial = scratch.partial if scratch is not None else out
    counters = scratch.counters if scratch is not None else out
    _kernel()[(blocks, split)](
        w, x, out, residual if residual is not None else out, norm_weight if norm_weight is not None else x,
        partial, counters, scale if scale is not None else out, n, k, eps,
        HALVES=halves, NORM=norm_weight is not None, RESIDUAL=residual is not None,
        SPLIT_K=split, BLOCK_N=config.block_n, BLOCK_K=config.block_k, K_PER_SPLIT=per_split,
        EVEN_K=k % config.block_k == 0 and per_split * split == k, EVEN_N=n % config.block_n == 0,
        NORM_BLOCK=_pow2_at_least(k), PDL=pdl, REDUCE_EACH=config.reduce_each, UNROLL=config.unroll,
        STAGES=config.stages if config.stages > 1 else None, num_warps=config.num_warps, SCALED=scale is not None,
        PREFETCH=prefetch, EARLY_LAUNCH=config.early_launch, EVICT_FIRST=config.evict_first,
        **({"launch_pdl": True} if pdl else {}),
    )
    return out


def _kernel():
    """The jitted kernel, imported on first use so that importing this module never needs Triton."""
    if not triton_available():
        raise RuntimeError("gemv: Triton is not installed (use gemv_torch)")
    from roofline.lab.kernels.triton_gemv import gemv_kernel

    return gemv_kernel

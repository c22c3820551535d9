"""The Triton source of argmax.py's kernel (importing it needs Triton)."""

import triton
import triton.language as tl

from roofline.lab.kernels.triton_gemv import gdc_wait


@triton.jit
def argmax_kernel(X, OUT, N, BLOCK: tl.constexpr, PDL: tl.constexpr):
    if PDL:
        gdc_wait()
    lanes = tl.arange(0, BLOCK)
    best = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    where = tl.full([BLOCK], 0, dtype=tl.int32)
    for start in tl.range(0, N, BLOCK, loop_unroll_factor=2):
        i = start + lanes
        x = tl.load(X + i, mask=i < N, other=float("-inf")).to(tl.float32)
        better = x > best  # strictly: a lane keeps its earliest index among equal values
        best = tl.where(better, x, best)
        where = tl.where(better, i, where)
    top = tl.max(best, axis=0)
    first = tl.min(tl.where(best == top, where, N), axis=0)
    tl.store(OUT, first.to(tl.int64))

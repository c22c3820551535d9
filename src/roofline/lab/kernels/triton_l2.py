"""L2 prefetch in Triton kernels (Hopper's bulk prefetch; see l2_prefetch.py for the byte ranges)."""

import triton
import triton.language as tl


@triton.jit
def bulk_prefetch_l2(addr, nbytes):
    """cp.async.bulk.prefetch.L2.global: ask the L2 for ``nbytes`` (int32, a multiple of 16) from ``addr`` (int64,
    16-byte aligned), one request per element; it returns at once (no register holds the data, nothing waits)."""
    tl.inline_asm_elementwise("cp.async.bulk.prefetch.L2.global [$1], $2;\n\tmov.u32 $0, 0;", "=r,l,r",
                              [addr, nbytes], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def prefetch_range(addr, nbytes, program, programs, CHUNK: tl.constexpr, LANES: tl.constexpr):
    """This program's share of ``nbytes`` from ``addr``: chunks program * LANES + i, then every programs * LANES
    (l2_prefetch.chunk_plan in Python); a lane past the last chunk repeats it."""
    n = tl.cdiv(nbytes, CHUNK)
    for first in range(program * LANES, n, programs * LANES):
        c = tl.minimum(first + tl.arange(0, LANES), n - 1).to(tl.int64)
        off = c * CHUNK
        size = tl.minimum(nbytes - off, CHUNK).to(tl.int32)
        bulk_prefetch_l2(addr + off, size)


@triton.jit
def l2_prefetch_kernel(ADDR, nbytes, CHUNK: tl.constexpr, LANES: tl.constexpr):
    """A kernel that only prefetches (benchmarks/l2_prefetch_smoke.py: does the instruction compile and help)."""
    prefetch_range(ADDR, nbytes, tl.program_id(0), tl.num_programs(0), CHUNK, LANES)

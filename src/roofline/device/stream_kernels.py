"""Streaming kernels written in Triton, as extra bandwidth candidates on CUDA beside torch's copy/sum/fill.

The memory roof is the best rate any kernel reaches, so it pays to offer kernels shaped for streaming: each
program moves ``BLOCK * ITERS`` contiguous elements with wide loads and stores. When Triton is absent or fails
to compile, the torch kernels alone set the roof and the method says so.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

BLOCK = 2048
ITERS = 8


def triton_stream_kernels(src: torch.Tensor, dst: torch.Tensor) -> dict[str, tuple[Callable[[], object], int]]:
    """name -> (launch, bytes moved) for Triton write-only, read-only and copy kernels over ``src``/``dst``."""
    import triton
    import triton.language as tl

    @triton.jit
    def write_kernel(out_ptr, n, BLOCK: tl.constexpr, ITERS: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * BLOCK * ITERS
        value = tl.zeros((BLOCK,), tl.float32) + 1.5
        for i in tl.static_range(ITERS):
            offs = base + i * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, value, mask=offs < n)

    @triton.jit
    def read_kernel(in_ptr, partial_ptr, n, BLOCK: tl.constexpr, ITERS: tl.constexpr):
        pid = tl.program_id(0)
        base = pid.to(tl.int64) * BLOCK * ITERS
        acc = tl.zeros((BLOCK,), tl.float32)
        for i in tl.static_range(ITERS):
            offs = base + i * BLOCK + tl.arange(0, BLOCK)
            acc += tl.load(in_ptr + offs, mask=offs < n, other=0.0)
        tl.store(partial_ptr + pid, tl.sum(acc, axis=0))

    @triton.jit
    def copy_kernel(in_ptr, out_ptr, n, BLOCK: tl.constexpr, ITERS: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * BLOCK * ITERS
        for i in tl.static_range(ITERS):
            offs = base + i * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=mask), mask=mask)

    n = src.numel()
    grid = (triton.cdiv(n, BLOCK * ITERS),)
    partial = torch.empty(grid[0], device=src.device, dtype=torch.float32)
    nbytes = n * src.element_size()
    return {
        "triton-write": (lambda: write_kernel[grid](dst, n, BLOCK=BLOCK, ITERS=ITERS, num_warps=8), nbytes),
        "triton-read": (lambda: read_kernel[grid](src, partial, n, BLOCK=BLOCK, ITERS=ITERS, num_warps=8), nbytes),
        "triton-copy": (lambda: copy_kernel[grid](src, dst, n, BLOCK=BLOCK, ITERS=ITERS, num_warps=8), 2 * nbytes),
    }


def check_stream_kernels(device: torch.device) -> None:
    """Correctness of the Triton kernels on a small buffer (they must move what they claim)."""
    src = torch.rand(3 * BLOCK * ITERS + 17, device=device)
    dst = torch.full_like(src, -7.0)
    kernels = triton_stream_kernels(src, dst)
    kernels["triton-copy"][0]()
    torch.cuda.synchronize(device)
    assert torch.equal(dst, src), "triton-copy wrote wrong data"
    kernels["triton-write"][0]()
    torch.cuda.synchronize(device)
    assert bool((dst == 1.5).all()), "triton-write missed elements"

"""The Triton source of gemv.py's kernel (a module of its own: Triton resolves a kernel's helpers by global name,
and importing it needs Triton)."""

import triton
import triton.language as tl


@triton.jit
def _finish(y, y2, rows, row_mask, OUT, RES, HALVES: tl.constexpr, RESIDUAL: tl.constexpr):
    dt = OUT.dtype.element_ty
    if HALVES == 2:
        gate = y.to(dt).to(tl.float32)
        up = y2.to(dt).to(tl.float32)
        silu = (gate / (1.0 + tl.exp(-gate))).to(dt).to(tl.float32)
        y = silu * up
    if RESIDUAL:
        res = tl.load(RES + rows, mask=row_mask, other=0.0).to(tl.float32)
        y = y.to(dt).to(tl.float32) + res
    tl.store(OUT + rows, y.to(dt), mask=row_mask)

@triton.jit
def gemv_kernel(W, X, OUT, RES, GAMMA, PARTIAL, COUNTERS, N, K, eps,
                HALVES: tl.constexpr, NORM: tl.constexpr, RESIDUAL: tl.constexpr, SPLIT_K: tl.constexpr,
                BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, K_PER_SPLIT: tl.constexpr,
                EVEN_K: tl.constexpr, EVEN_N: tl.constexpr, NORM_BLOCK: tl.constexpr):
    dt = OUT.dtype.element_ty
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    row_mask = rows < N
    if EVEN_N:
        w_rows = rows
    else:
        w_rows = tl.where(row_mask, rows, 0)
    inv = 1.0
    if NORM:
        ks_all = tl.arange(0, NORM_BLOCK)
        xa = tl.load(X + ks_all, mask=ks_all < K, other=0.0).to(tl.float32)
        sq = (xa * xa).to(dt).to(tl.float32)
        mean = (tl.sum(sq, axis=0) / K).to(dt).to(tl.float32)
        inv = (1.0 / tl.sqrt((mean + eps).to(dt).to(tl.float32))).to(dt).to(tl.float32)
    acc = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
    k_start = pid_k * K_PER_SPLIT
    for k0 in range(0, K_PER_SPLIT, BLOCK_K):
        ks = k_start + k0 + tl.arange(0, BLOCK_K)
        w_ptrs = W + w_rows[:, None].to(tl.int64) * K + ks[None, :]
        if EVEN_K:
            x = tl.load(X + ks).to(tl.float32)
            w = tl.load(w_ptrs)
        else:
            k_mask = ks < K
            x = tl.load(X + ks, mask=k_mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptrs, mask=k_mask[None, :], other=0.0)
        if NORM:
            if EVEN_K:
                g = tl.load(GAMMA + ks).to(tl.float32)
            else:
                g = tl.load(GAMMA + ks, mask=ks < K, other=0.0).to(tl.float32)
            x = ((x * inv).to(dt).to(tl.float32) * g).to(dt).to(tl.float32)
        acc += w.to(tl.float32) * x[None, :]
        if HALVES == 2:
            w2_ptrs = W + (w_rows[:, None].to(tl.int64) + N) * K + ks[None, :]
            if EVEN_K:
                w2 = tl.load(w2_ptrs)
            else:
                w2 = tl.load(w2_ptrs, mask=(ks < K)[None, :], other=0.0)
            acc2 += w2.to(tl.float32) * x[None, :]
    y = tl.sum(acc, axis=1)
    y2 = tl.sum(acc2, axis=1)
    if SPLIT_K == 1:
        _finish(y, y2, rows, row_mask, OUT, RES, HALVES, RESIDUAL)
    else:
        base = PARTIAL + pid_k * (HALVES * N)
        tl.store(base + rows, y, mask=row_mask)
        if HALVES == 2:
            tl.store(base + N + rows, y2, mask=row_mask)
        tl.debug_barrier()
        arrived = tl.atomic_add(COUNTERS + pid_n, 1, sem="acq_rel")
        if arrived == SPLIT_K - 1:
            tl.debug_barrier()
            y = tl.zeros([BLOCK_N], dtype=tl.float32)
            y2 = tl.zeros([BLOCK_N], dtype=tl.float32)
            for s in tl.static_range(SPLIT_K):
                part = PARTIAL + s * (HALVES * N)
                y += tl.load(part + rows, mask=row_mask, other=0.0, cache_modifier=".cg")
                if HALVES == 2:
                    y2 += tl.load(part + N + rows, mask=row_mask, other=0.0, cache_modifier=".cg")
            _finish(y, y2, rows, row_mask, OUT, RES, HALVES, RESIDUAL)
            tl.atomic_xchg(COUNTERS + pid_n, 0)

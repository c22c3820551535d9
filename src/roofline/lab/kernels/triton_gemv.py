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
def gdc_wait():
    """griddepcontrol.wait: under programmatic dependent launch, block until the previous kernel is done.

    The PTX Triton's own gdc_wait emits, written here so that every Triton 3 version compiles it."""
    tl.inline_asm_elementwise("griddepcontrol.wait; // dummy $0", "=r", [], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def gdc_launch_dependents():
    """griddepcontrol.launch_dependents: let the next kernel's programs start (they run up to their wait)."""
    tl.inline_asm_elementwise("griddepcontrol.launch_dependents; // dummy $0", "=r", [], dtype=tl.int32,
                              is_pure=False, pack=1)


@triton.jit
def _load_w(W, w_rows, ks, K, ROW_OFFSET, EVEN_K: tl.constexpr, EVICT_FIRST: tl.constexpr):
    """EVICT_FIRST: the weights (read once a step) marked first to leave the L2, so that their stream does not push
    out lines another kernel prefetched there (attention v2's L2_PREFETCH)."""
    ptrs = W + (w_rows[:, None].to(tl.int64) + ROW_OFFSET) * K + ks[None, :]
    if EVICT_FIRST:
        if EVEN_K:
            return tl.load(ptrs, eviction_policy="evict_first")
        return tl.load(ptrs, mask=(ks < K)[None, :], other=0.0, eviction_policy="evict_first")
    if EVEN_K:
        return tl.load(ptrs)
    return tl.load(ptrs, mask=(ks < K)[None, :], other=0.0)


@triton.jit
def _rms_inv(X, K, eps, NORM_BLOCK: tl.constexpr, dt: tl.constexpr):
    """RMSNorm's 1 / sqrt(mean(x^2) + eps) over x's K values, rounded to the model dtype as models/llama.py's."""
    ks_all = tl.arange(0, NORM_BLOCK)
    xa = tl.load(X + ks_all, mask=ks_all < K, other=0.0).to(tl.float32)
    sq = (xa * xa).to(dt).to(tl.float32)
    mean = (tl.sum(sq, axis=0) / K).to(dt).to(tl.float32)
    return (1.0 / tl.sqrt((mean + eps).to(dt).to(tl.float32))).to(dt).to(tl.float32)


@triton.jit
def _load_x(X, GAMMA, ks, K, inv, NORM: tl.constexpr, EVEN_K: tl.constexpr, dt: tl.constexpr):
    if EVEN_K:
        x = tl.load(X + ks).to(tl.float32)
    else:
        x = tl.load(X + ks, mask=ks < K, other=0.0).to(tl.float32)
    if NORM:
        if EVEN_K:
            g = tl.load(GAMMA + ks).to(tl.float32)
        else:
            g = tl.load(GAMMA + ks, mask=ks < K, other=0.0).to(tl.float32)
        x = ((x * inv).to(dt).to(tl.float32) * g).to(dt).to(tl.float32)
    return x


@triton.jit
def _first_tiles(W, X, GAMMA, w_rows, ks, K, N, eps, dt: tl.constexpr, HALVES: tl.constexpr, NORM: tl.constexpr,
                 EVEN_K: tl.constexpr, NORM_BLOCK: tl.constexpr, PDL: tl.constexpr, EARLY_LAUNCH: tl.constexpr,
                 EVICT_FIRST: tl.constexpr):
    """(w, w2, inv, x) at the columns ``ks``: the weights (both halves' rows) loaded before the wait for the previous
    kernel, whose output x is, then RMSNorm's 1/rms and x itself (normed) after it."""
    w = _load_w(W, w_rows, ks, K, 0, EVEN_K, EVICT_FIRST)
    w2 = w
    if HALVES == 2:
        w2 = _load_w(W, w_rows, ks, K, N, EVEN_K, EVICT_FIRST)
    if PDL:
        gdc_wait()
        if not EARLY_LAUNCH:
            gdc_launch_dependents()
    inv = 1.0
    if NORM:
        inv = _rms_inv(X, K, eps, NORM_BLOCK, dt)
    x = _load_x(X, GAMMA, ks, K, inv, NORM, EVEN_K, dt)
    return w, w2, inv, x


@triton.jit
def _prefetched(W, X, GAMMA, w_rows, k_start, K, N, eps, dt: tl.constexpr, HALVES: tl.constexpr, NORM: tl.constexpr,
                EVEN_K: tl.constexpr, NORM_BLOCK: tl.constexpr, PDL: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr, K_PER_SPLIT: tl.constexpr, PREFETCH: tl.constexpr, EARLY_LAUNCH: tl.constexpr,
                EVICT_FIRST: tl.constexpr):
    """The row block's sums when its first PREFETCH tiles (one load PREFETCH * BLOCK_K wide) are read before the
    wait for the previous kernel: the weights do not depend on it, only x does, so with PREFETCH * BLOCK_K >=
    K_PER_SPLIT a program holds its whole share of the weights in registers before that kernel has finished.
    The rest of the row (if any) is read after the wait, BLOCK_K at a time. Each part's products are summed at once
    (fp32), in K order; the sums are not bit for bit the one-tile kernel's (another order of the fp32 adds)."""
    ks = k_start + tl.arange(0, PREFETCH * BLOCK_K)
    w, w2, inv, x = _first_tiles(W, X, GAMMA, w_rows, ks, K, N, eps, dt, HALVES, NORM, EVEN_K, NORM_BLOCK, PDL,
                                 EARLY_LAUNCH, EVICT_FIRST)
    y = tl.sum(w.to(tl.float32) * x[None, :], axis=1)
    y2 = y
    if HALVES == 2:
        y2 = tl.sum(w2.to(tl.float32) * x[None, :], axis=1)
    if PREFETCH * BLOCK_K < K_PER_SPLIT:
        acc = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
        acc2 = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
        for k0 in range(PREFETCH * BLOCK_K, K_PER_SPLIT, BLOCK_K):
            kt = k_start + k0 + tl.arange(0, BLOCK_K)
            wt = _load_w(W, w_rows, kt, K, 0, EVEN_K, EVICT_FIRST)
            xt = _load_x(X, GAMMA, kt, K, inv, NORM, EVEN_K, dt)
            acc += wt.to(tl.float32) * xt[None, :]
            if HALVES == 2:
                wt2 = _load_w(W, w_rows, kt, K, N, EVEN_K, EVICT_FIRST)
                acc2 += wt2.to(tl.float32) * xt[None, :]
        y += tl.sum(acc, axis=1)
        if HALVES == 2:
            y2 += tl.sum(acc2, axis=1)
    return y, y2


@triton.jit
def gemv_kernel(W, X, OUT, RES, GAMMA, PARTIAL, COUNTERS, SCALE, N, K, eps,
                HALVES: tl.constexpr, NORM: tl.constexpr, RESIDUAL: tl.constexpr, SPLIT_K: tl.constexpr,
                BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, K_PER_SPLIT: tl.constexpr,
                EVEN_K: tl.constexpr, EVEN_N: tl.constexpr, NORM_BLOCK: tl.constexpr, PDL: tl.constexpr,
                REDUCE_EACH: tl.constexpr, UNROLL: tl.constexpr, STAGES: tl.constexpr, SCALED: tl.constexpr,
                PREFETCH: tl.constexpr = 1, EARLY_LAUNCH: tl.constexpr = False, EVICT_FIRST: tl.constexpr = False):
    dt = OUT.dtype.element_ty
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    row_mask = rows < N
    if EVEN_N:
        w_rows = rows
    else:
        w_rows = tl.where(row_mask, rows, 0)
    k_start = pid_k * K_PER_SPLIT
    # EARLY_LAUNCH: the next kernel may start as soon as every program of this one has started, not once each has
    # passed its wait: its programs read their weights (nothing this kernel writes) while this one waits and runs,
    # and its own wait still orders it after this kernel's end (which follows the previous kernel's).
    if PDL and EARLY_LAUNCH:
        gdc_launch_dependents()
    if PREFETCH > 1:
        y, y2 = _prefetched(W, X, GAMMA, w_rows, k_start, K, N, eps, dt, HALVES, NORM, EVEN_K, NORM_BLOCK, PDL,
                            BLOCK_N, BLOCK_K, K_PER_SPLIT, PREFETCH, EARLY_LAUNCH, EVICT_FIRST)
    else:
        # The first tile of weights is loaded before anything the previous kernel writes is read: under
        # programmatic dependent launch these loads overlap that kernel's tail.
        ks = k_start + tl.arange(0, BLOCK_K)
        w, w2, inv, x = _first_tiles(W, X, GAMMA, w_rows, ks, K, N, eps, dt, HALVES, NORM, EVEN_K, NORM_BLOCK, PDL,
                                     EARLY_LAUNCH, EVICT_FIRST)
        # REDUCE_EACH: sum each tile's products at once (a [BLOCK_N] accumulator; registers free for more loads in
        # flight) instead of keeping a [BLOCK_N, BLOCK_K] accumulator and summing once at the end.
        if REDUCE_EACH:
            y = tl.sum(w.to(tl.float32) * x[None, :], axis=1)
            y2 = tl.sum(w2.to(tl.float32) * x[None, :], axis=1)
        else:
            acc = w.to(tl.float32) * x[None, :]
            acc2 = w2.to(tl.float32) * x[None, :]
        # STAGES (None: Triton's default, no pipelining of these loads): the loop's weight tiles copied ahead into
        # shared memory (cp.async), so a program has STAGES - 1 tiles in flight while it multiplies one.
        for k0 in tl.range(BLOCK_K, K_PER_SPLIT, BLOCK_K, loop_unroll_factor=UNROLL, num_stages=STAGES):
            ks = k_start + k0 + tl.arange(0, BLOCK_K)
            w = _load_w(W, w_rows, ks, K, 0, EVEN_K, EVICT_FIRST)
            if HALVES == 2:
                w2 = _load_w(W, w_rows, ks, K, N, EVEN_K, EVICT_FIRST)
            x = _load_x(X, GAMMA, ks, K, inv, NORM, EVEN_K, dt)
            if REDUCE_EACH:
                y += tl.sum(w.to(tl.float32) * x[None, :], axis=1)
                if HALVES == 2:
                    y2 += tl.sum(w2.to(tl.float32) * x[None, :], axis=1)
            else:
                acc += w.to(tl.float32) * x[None, :]
                if HALVES == 2:
                    acc2 += w2.to(tl.float32) * x[None, :]
        if not REDUCE_EACH:
            y = tl.sum(acc, axis=1)
            y2 = tl.sum(acc2, axis=1)
    # FP8 weights (e4m3, upcast exactly on load) with one fp32 scale per output row: the row's sum times its
    # scale. Partial sums of split-K are scaled too (the scale is linear, so their total is the scaled total).
    if SCALED:
        y = y * tl.load(SCALE + rows, mask=row_mask, other=0.0)
        if HALVES == 2:
            y2 = y2 * tl.load(SCALE + N + rows, mask=row_mask, other=0.0)
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

"""The Triton source of persistent_mlp.py's kernel: wo -> RMSNorm -> w13 (SiLU*mul) -> w2 in one launch.

A module of its own (Triton resolves a kernel's helpers by global name, and importing it needs Triton). The
epilogues and the norm are triton_gemv's own helpers, so the roundings are the three-kernel path's."""

import triton
import triton.language as tl

from roofline.lab.kernels.triton_gemv import _finish, _load_w, _load_x, _rms_inv, gdc_launch_dependents, gdc_wait


@triton.jit
def _unit_weights(W, u, pid, P, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, K_TILES: tl.constexpr,
                  HALVES: tl.constexpr, EVEN_K: tl.constexpr, EVICT_FIRST: tl.constexpr):
    """The weights of this program's unit ``u``: row block pid + (u // K_TILES) * P, K chunk u % K_TILES (both
    halves' rows for the stacked gate/up weight). Rows past N read row 0 (never stored)."""
    rows = (pid + (u // K_TILES) * P) * BLOCK_N + tl.arange(0, BLOCK_N)
    w_rows = tl.where(rows < N, rows, 0)
    ks = (u % K_TILES) * BLOCK_K + tl.arange(0, BLOCK_K)
    w = _load_w(W, w_rows, ks, K, 0, EVEN_K, EVICT_FIRST)
    w2 = w
    if HALVES == 2:
        w2 = _load_w(W, w_rows, ks, K, N, EVEN_K, EVICT_FIRST)
    return w, w2


@triton.jit
def _x_whole(X, GAMMA, inv, K, dt: tl.constexpr, BLOCK_K: tl.constexpr, K_TILES: tl.constexpr, NORM: tl.constexpr,
             EVEN_K: tl.constexpr):
    """The whole (normed) input vector where a row block's K is one chunk (loaded once a phase, not once a unit);
    else a placeholder (each unit loads its chunk)."""
    x = tl.zeros([BLOCK_K], dtype=tl.float32)
    if K_TILES == 1:
        x = _load_x(X, GAMMA, tl.arange(0, BLOCK_K), K, inv, NORM, EVEN_K, dt)
    return x


@triton.jit
def _consume(w, w2, y, y2, u, pid, P, X, GAMMA, inv, xw, OUT, RES, N, K, dt: tl.constexpr, BLOCK_N: tl.constexpr,
             BLOCK_K: tl.constexpr, K_TILES: tl.constexpr, HALVES: tl.constexpr, NORM: tl.constexpr,
             RESIDUAL: tl.constexpr, EVEN_K: tl.constexpr):
    """Unit ``u``'s products added to the row block's sums (fp32, one K chunk at a time, in K order, as gemv's
    prefetch path sums them); after the block's last chunk its epilogue is stored and the sums start again.
    ``xw``: _x_whole's vector (used where K is one chunk)."""
    if K_TILES == 1:
        x = xw
    else:
        ks = (u % K_TILES) * BLOCK_K + tl.arange(0, BLOCK_K)
        x = _load_x(X, GAMMA, ks, K, inv, NORM, EVEN_K, dt)
    y += tl.sum(w.to(tl.float32) * x[None, :], axis=1)
    if HALVES == 2:
        y2 += tl.sum(w2.to(tl.float32) * x[None, :], axis=1)
    if u % K_TILES == K_TILES - 1:
        rows = (pid + (u // K_TILES) * P) * BLOCK_N + tl.arange(0, BLOCK_N)
        _finish(y, y2, rows, rows < N, OUT, RES, HALVES, RESIDUAL)
        y = tl.zeros([BLOCK_N], dtype=tl.float32)
        y2 = tl.zeros([BLOCK_N], dtype=tl.float32)
    return y, y2


@triton.jit
def _units(pid, P, N, BLOCK_N: tl.constexpr, K_TILES: tl.constexpr):
    """How many units (row block x K chunk) program ``pid`` of ``P`` owns in a phase: blocks pid, pid + P, ..."""
    blocks = tl.cdiv(N, BLOCK_N)
    return tl.maximum(tl.cdiv(blocks - pid, P), 0) * K_TILES


@triton.jit
def _stream(W, w, w2, n, pid, P, X, GAMMA, inv, OUT, RES, N, K, dt: tl.constexpr, BLOCK_N: tl.constexpr,
            BLOCK_K: tl.constexpr, K_TILES: tl.constexpr, HALVES: tl.constexpr, NORM: tl.constexpr,
            RESIDUAL: tl.constexpr, EVEN_K: tl.constexpr, EVICT_FIRST: tl.constexpr):
    """The ``n`` units of a phase, each one's successor loaded before its own products are summed (``w``, ``w2``:
    unit 0, loaded by the caller), every row block's epilogue stored."""
    y = tl.zeros([BLOCK_N], dtype=tl.float32)
    y2 = tl.zeros([BLOCK_N], dtype=tl.float32)
    xw = _x_whole(X, GAMMA, inv, K, dt, BLOCK_K, K_TILES, NORM, EVEN_K)
    for u in range(0, n - 1):
        nw, nw2 = _unit_weights(W, u + 1, pid, P, N, K, BLOCK_N, BLOCK_K, K_TILES, HALVES, EVEN_K, EVICT_FIRST)
        y, y2 = _consume(w, w2, y, y2, u, pid, P, X, GAMMA, inv, xw, OUT, RES, N, K, dt, BLOCK_N, BLOCK_K, K_TILES,
                         HALVES, NORM, RESIDUAL, EVEN_K)
        w = nw
        w2 = nw2
    if n > 0:
        _consume(w, w2, y, y2, n - 1, pid, P, X, GAMMA, inv, xw, OUT, RES, N, K, dt, BLOCK_N, BLOCK_K, K_TILES, HALVES,
                 NORM, RESIDUAL, EVEN_K)


@triton.jit
def _arrive(SYNC):
    """This program's arrival at a grid-wide barrier: a release add after the CTA barrier, so every thread's stores
    before it are visible to whoever acquires the count. Split from the wait so that the next phase's weight loads
    are issued between the two: a release waits for the arriving warp's earlier memory operations, so loads issued
    before it would hold the arrival back by a DRAM round trip, where after it they land while the program waits."""
    tl.debug_barrier()
    tl.atomic_add(SYNC, 1, sem="release", scope="gpu")


@triton.jit
def _wait(SYNC, target, ERR, spin_limit):
    """Wait until ``target`` programs have arrived (acquire reads; the CTA barrier after them orders every thread's
    later loads). After ``spin_limit`` reads without reaching it the program sets ERR and goes on (wrong results,
    flagged, instead of a hang: the host checks ERR)."""
    seen = tl.atomic_add(SYNC, 0, sem="acquire", scope="gpu")
    spins = tl.full([], 0, tl.int32)
    while (seen < target) & (spins < spin_limit):
        seen = tl.atomic_add(SYNC, 0, sem="acquire", scope="gpu")
        spins += 1
    if seen < target:
        tl.atomic_xchg(ERR, 1, sem="relaxed", scope="gpu")
    tl.debug_barrier()


@triton.jit
def persistent_gemv_kernel(WO, W13, W2, O, H, M, GAMMA, SYNC, ERR, DIM, OK, FFN, eps, spin_limit,
                          PHASE: tl.constexpr, PDL: tl.constexpr, NORM_BLOCK: tl.constexpr,
                          BN1: tl.constexpr, BK1: tl.constexpr, KT1: tl.constexpr, EK1: tl.constexpr,
                          BN2: tl.constexpr, BK2: tl.constexpr, KT2: tl.constexpr, EK2: tl.constexpr,
                          BN3: tl.constexpr, BK3: tl.constexpr, KT3: tl.constexpr, EK3: tl.constexpr,
                          EVICT_FIRST: tl.constexpr):
    """h += wo o; m = SiLU(gate) * up of w13 RMSNorm(h); h += w2 m. DIM: h's length, OK: o's, FFN: m's.

    PHASE 0: the three phases in one launch, every program walking its row blocks of each, a grid-wide barrier
    (SYNC, this launch's own counter, 0 at the start) between them: the grid must be co-resident (the host sizes it).
    Each program issues the loads of its first weights of the next phase between its arrival at the barrier and its
    wait there (the weights never depend on the previous phase; only o/h/m and the norm do, read after it). The
    counter goes to P and 2P at the barriers; past the second each program adds once more and the last (3P) sets it
    back to 0, so a CUDA graph replays it as it was captured. PHASE 1, 2 or 3: that phase alone, no barrier (one
    launch each, in order: Triton's interpreter runs programs one after another, so a barrier cannot run there)."""
    dt = H.dtype.element_ty
    pid = tl.program_id(0)
    P = tl.num_programs(0)
    n1 = _units(pid, P, DIM, BN1, KT1)
    n2 = _units(pid, P, FFN, BN2, KT2)
    n3 = _units(pid, P, DIM, BN3, KT3)
    if PHASE == 0 or PHASE == 1:
        w, w2 = _unit_weights(WO, 0, pid, P, DIM, OK, BN1, BK1, KT1, 1, EK1, EVICT_FIRST)
        if PDL:
            gdc_wait()
            if PHASE == 1:
                gdc_launch_dependents()
        _stream(WO, w, w2, n1, pid, P, O, O, 1.0, H, H, DIM, OK, dt, BN1, BK1, KT1, 1, False, True, EK1, EVICT_FIRST)
        if PHASE == 0:
            _arrive(SYNC)
            g, g2 = _unit_weights(W13, 0, pid, P, FFN, DIM, BN2, BK2, KT2, 2, EK2, EVICT_FIRST)
            _wait(SYNC, P, ERR, spin_limit)
    if PHASE == 0 or PHASE == 2:
        if PHASE == 2:
            g, g2 = _unit_weights(W13, 0, pid, P, FFN, DIM, BN2, BK2, KT2, 2, EK2, EVICT_FIRST)
            if PDL:
                gdc_wait()
                gdc_launch_dependents()
        inv = _rms_inv(H, DIM, eps, NORM_BLOCK, dt)
        _stream(W13, g, g2, n2, pid, P, H, GAMMA, inv, M, M, FFN, DIM, dt, BN2, BK2, KT2, 2, True, False, EK2,
                EVICT_FIRST)
        if PHASE == 0:
            _arrive(SYNC)
            v, v2 = _unit_weights(W2, 0, pid, P, DIM, FFN, BN3, BK3, KT3, 1, EK3, EVICT_FIRST)
            _wait(SYNC, 2 * P, ERR, spin_limit)
            # Every program is resident now (all passed the barrier): the next kernel's programs may take free
            # slots without keeping one of this grid's from starting.
            if PDL:
                gdc_launch_dependents()
            if tl.atomic_add(SYNC, 1, sem="relaxed", scope="gpu") == 3 * P - 1:
                tl.atomic_xchg(SYNC, 0, sem="relaxed", scope="gpu")
    if PHASE == 0 or PHASE == 3:
        if PHASE == 3:
            v, v2 = _unit_weights(W2, 0, pid, P, DIM, FFN, BN3, BK3, KT3, 1, EK3, EVICT_FIRST)
            if PDL:
                gdc_wait()
                gdc_launch_dependents()
        _stream(W2, v, v2, n3, pid, P, M, M, 1.0, H, H, DIM, FFN, dt, BN3, BK3, KT3, 1, False, True, EK3, EVICT_FIRST)

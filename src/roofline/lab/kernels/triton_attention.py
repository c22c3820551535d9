"""The Triton source of attention.py's kernel (importing it needs Triton)."""

import triton
import triton.language as tl

from roofline.lab.kernels.triton_gemv import gdc_launch_dependents, gdc_wait


@triton.jit
def _rope(x1, x2, c, s, dt: tl.constexpr):
    """models/llama.py's apply_rope with its roundings: each product and each sum rounded to the model dtype."""
    r1 = ((x1 * c).to(dt).to(tl.float32) - (x2 * s).to(dt).to(tl.float32)).to(dt)
    r2 = ((x2 * c).to(dt).to(tl.float32) + (x1 * s).to(dt).to(tl.float32)).to(dt)
    return r1, r2


@triton.jit
def _load_qkv(QKV, kh, c, s, Q_HEADS: tl.constexpr, KV_HEADS: tl.constexpr, GROUP: tl.constexpr,
              GROUP_PAD: tl.constexpr, HEAD_DIM: tl.constexpr, HALF: tl.constexpr, dt: tl.constexpr):
    """This step's q (the KV head's group of query heads) and k, rotated (cos ``c``, sin ``s``), and its v, from
    the fused q/k/v projection's output."""
    g = tl.arange(0, GROUP_PAD)
    g_mask = g < GROUP
    d1 = tl.arange(0, HALF)
    d = tl.arange(0, HEAD_DIM)
    q_rows = (kh * GROUP + g)[:, None] * HEAD_DIM
    q1 = tl.load(QKV + q_rows + d1[None, :], mask=g_mask[:, None], other=0.0).to(tl.float32)
    q2 = tl.load(QKV + q_rows + HALF + d1[None, :], mask=g_mask[:, None], other=0.0).to(tl.float32)
    r1, r2 = _rope(q1, q2, c, s, dt)
    k_off = Q_HEADS * HEAD_DIM + kh * HEAD_DIM
    v_off = (Q_HEADS + KV_HEADS) * HEAD_DIM + kh * HEAD_DIM
    k1n = tl.load(QKV + k_off + d1).to(tl.float32)
    k2n = tl.load(QKV + k_off + HALF + d1).to(tl.float32)
    rk1, rk2 = _rope(k1n, k2n, c, s, dt)
    v_new = tl.load(QKV + v_off + d)
    return r1, r2, rk1, rk2, v_new


@triton.jit
def _load_kv(KC, VC, cache, t, pos, HEAD_DIM: tl.constexpr, HALF: tl.constexpr):
    """One block of cache slots (only those before ``pos``: the slot at ``pos`` is this step's to write)."""
    d1 = tl.arange(0, HALF)
    d = tl.arange(0, HEAD_DIM)
    t_mask = (t < pos)[:, None]
    rows = cache + t[:, None].to(tl.int64) * HEAD_DIM
    k1 = tl.load(KC + rows + d1[None, :], mask=t_mask, other=0.0)
    k2 = tl.load(KC + rows + HALF + d1[None, :], mask=t_mask, other=0.0)
    v = tl.load(VC + rows + d[None, :], mask=t_mask, other=0.0)
    return k1, k2, v


@triton.jit
def _attend(r1, r2, k1, k2, v, t, pos, m, l, acc, scale, dt: tl.constexpr):
    """Online softmax over one block of slots for the group's query heads."""
    t_mask = t < pos
    scores = (tl.dot(r1, tl.trans(k1)) + tl.dot(r2, tl.trans(k2))) * scale
    scores = tl.where(t_mask[None, :], scores, -1.0e30)
    m_new = tl.maximum(m, tl.max(scores, axis=1))
    p = tl.where(t_mask[None, :], tl.exp(scores - m_new[:, None]), 0.0)
    alpha = tl.exp(m - m_new)
    l = l * alpha + tl.sum(p, axis=1)
    acc = acc * alpha[:, None] + tl.dot(p.to(dt), v).to(tl.float32)
    return m_new, l, acc


@triton.jit
def _add_token(KC, VC, cache, pos, r1, r2, rk1, rk2, v_new, m, l, acc, scale, HEAD_DIM: tl.constexpr,
               HALF: tl.constexpr):
    """This step's token: its rotated k and its v written to cache slot ``pos``, and added to the softmax."""
    d1 = tl.arange(0, HALF)
    d = tl.arange(0, HEAD_DIM)
    tl.store(KC + cache + pos * HEAD_DIM + d1, rk1)
    tl.store(KC + cache + pos * HEAD_DIM + HALF + d1, rk2)
    tl.store(VC + cache + pos * HEAD_DIM + d, v_new)
    current = (tl.sum(r1.to(tl.float32) * rk1.to(tl.float32)[None, :], axis=1)
               + tl.sum(r2.to(tl.float32) * rk2.to(tl.float32)[None, :], axis=1)) * scale
    m_new = tl.maximum(m, current)
    p_cur = tl.exp(current - m_new)
    alpha = tl.exp(m - m_new)
    l = l * alpha + p_cur
    acc = acc * alpha[:, None] + p_cur[:, None] * v_new.to(tl.float32)[None, :]
    return m_new, l, acc


@triton.jit
def _publish(PARTIAL, OUT, COUNTERS, kh, sp, own, m, l, acc, KV_HEADS: tl.constexpr, SPLITS: tl.constexpr,
             GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, GROUP_POW2: tl.constexpr, HEAD_DIM: tl.constexpr,
             SPLIT_BLOCK: tl.constexpr, dt: tl.constexpr):
    """A split's partial softmax to L2, then its arrival; the last of the ``own + 1`` live splits merges them.
    Partials: m and l [KV_HEADS, SPLITS, GROUP], then acc [KV_HEADS, SPLITS, GROUP * HEAD_DIM]."""
    g = tl.arange(0, GROUP_PAD)
    g_mask = g < GROUP
    d = tl.arange(0, HEAD_DIM)
    slot = kh * SPLITS + sp
    tl.store(PARTIAL + slot * GROUP + g, m, mask=g_mask)
    tl.store(PARTIAL + KV_HEADS * SPLITS * GROUP + slot * GROUP + g, l, mask=g_mask)
    acc_base = PARTIAL + 2 * KV_HEADS * SPLITS * GROUP + slot * (GROUP * HEAD_DIM)
    tl.store(acc_base + g[:, None] * HEAD_DIM + d[None, :], acc, mask=g_mask[:, None])
    tl.debug_barrier()
    arrived = tl.atomic_add(COUNTERS + kh, 1, sem="acq_rel")
    if arrived == own:
        tl.debug_barrier()
        _combine(PARTIAL, OUT, kh, own + 1, KV_HEADS, SPLITS, GROUP, GROUP_POW2, HEAD_DIM, SPLIT_BLOCK, dt)
        tl.atomic_xchg(COUNTERS + kh, 0)


@triton.jit
def _first_block(KC, VC, COS, SIN, kh, sp, pos, max_seq, HEAD_DIM: tl.constexpr, HALF: tl.constexpr,
                 BLOCK_T: tl.constexpr, T_PER_SPLIT: tl.constexpr):
    """What a program reads before the wait for q/k/v: its slice's first block of cache slots and the rotation's
    cos/sin at ``pos`` (neither written by the kernel before this one). Returns the KV head's cache offset too."""
    d1 = tl.arange(0, HALF)
    cache = kh.to(tl.int64) * max_seq * HEAD_DIM
    t = sp * T_PER_SPLIT + tl.arange(0, BLOCK_T)
    k1, k2, v = _load_kv(KC, VC, cache, t, pos, HEAD_DIM, HALF)
    c = tl.load(COS + pos * HALF + d1).to(tl.float32)
    s = tl.load(SIN + pos * HALF + d1).to(tl.float32)
    return cache, t, k1, k2, v, c, s


@triton.jit
def _slice_softmax(QKV, KC, VC, kh, sp, own, pos, cache, t, k1, k2, v, c, s, scale, Q_HEADS: tl.constexpr,
                   KV_HEADS: tl.constexpr, GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, HEAD_DIM: tl.constexpr,
                   HALF: tl.constexpr, BLOCK_T: tl.constexpr, T_PER_SPLIT: tl.constexpr, dt: tl.constexpr):
    """After the wait: q/k/v, then the online softmax over the program's slice (the first block already loaded,
    then only the blocks with a slot before ``pos``: a masked block would change nothing), and this step's token
    when the slice holds ``pos``. Returns the slice's (max, sum, weighted values)."""
    r1, r2, rk1, rk2, v_new = _load_qkv(QKV, kh, c, s, Q_HEADS, KV_HEADS, GROUP, GROUP_PAD, HEAD_DIM, HALF, dt)

    m = tl.full([GROUP_PAD], -1.0e30, dtype=tl.float32)
    l = tl.zeros([GROUP_PAD], dtype=tl.float32)
    acc = tl.zeros([GROUP_PAD, HEAD_DIM], dtype=tl.float32)
    m, l, acc = _attend(r1, r2, k1, k2, v, t, pos, m, l, acc, scale, dt)
    if T_PER_SPLIT > BLOCK_T:
        t_start = sp * T_PER_SPLIT
        for t0 in range(t_start + BLOCK_T, tl.minimum(t_start + T_PER_SPLIT, pos), BLOCK_T):
            t = t0 + tl.arange(0, BLOCK_T)
            k1, k2, v = _load_kv(KC, VC, cache, t, pos, HEAD_DIM, HALF)
            m, l, acc = _attend(r1, r2, k1, k2, v, t, pos, m, l, acc, scale, dt)
    if sp == own:
        m, l, acc = _add_token(KC, VC, cache, pos, r1, r2, rk1, rk2, v_new, m, l, acc, scale, HEAD_DIM, HALF)
    return m, l, acc


@triton.jit
def _write_out(OUT, kh, l, acc, GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, HEAD_DIM: tl.constexpr,
               dt: tl.constexpr):
    """The KV head's group of output rows from a softmax no other program shares (no partials to merge)."""
    g = tl.arange(0, GROUP_PAD)
    d = tl.arange(0, HEAD_DIM)
    out_ptrs = OUT + (kh * GROUP + g)[:, None] * HEAD_DIM + d[None, :]
    tl.store(out_ptrs, (acc / l[:, None]).to(dt), mask=(g < GROUP)[:, None])


@triton.jit
def decode_attention_kernel(QKV, KC, VC, COS, SIN, POS, OUT, PARTIAL, COUNTERS, scale, max_seq,
                            Q_HEADS: tl.constexpr, KV_HEADS: tl.constexpr, GROUP: tl.constexpr,
                            GROUP_PAD: tl.constexpr, HEAD_DIM: tl.constexpr, HALF: tl.constexpr, BLOCK_T: tl.constexpr,
                            T_PER_SPLIT: tl.constexpr, SPLITS: tl.constexpr, GROUP_POW2: tl.constexpr,
                            SPLIT_BLOCK: tl.constexpr, PDL: tl.constexpr):
    dt = KC.dtype.element_ty
    kh = tl.program_id(0)
    sp = tl.program_id(1)
    pos = tl.load(POS)
    own = pos // T_PER_SPLIT  # the split whose slots hold pos: it writes the token and adds it to its softmax
    if sp > own:  # the grid covers the whole cache (one launch for every step); a split past pos has nothing to do
        return
    # The first block of the cache is read before the wait: slots before pos were written by earlier steps'
    # kernels, done before the previous kernel could start, so under PDL this overlaps that kernel's tail.
    cache, t, k1, k2, v, c, s = _first_block(KC, VC, COS, SIN, kh, sp, pos, max_seq, HEAD_DIM, HALF, BLOCK_T,
                                             T_PER_SPLIT)
    if PDL:  # q/k/v were written by the kernel before this one
        gdc_wait()
        gdc_launch_dependents()
    m, l, acc = _slice_softmax(QKV, KC, VC, kh, sp, own, pos, cache, t, k1, k2, v, c, s, scale, Q_HEADS, KV_HEADS,
                               GROUP, GROUP_PAD, HEAD_DIM, HALF, BLOCK_T, T_PER_SPLIT, dt)
    if SPLITS == 1:
        _write_out(OUT, kh, l, acc, GROUP, GROUP_PAD, HEAD_DIM, dt)
    else:
        _publish(PARTIAL, OUT, COUNTERS, kh, sp, own, m, l, acc, KV_HEADS, SPLITS, GROUP, GROUP_PAD, GROUP_POW2,
                 HEAD_DIM, SPLIT_BLOCK, dt)


@triton.jit
def _combine(PARTIAL, OUT, kh, live, KV_HEADS: tl.constexpr, SPLITS: tl.constexpr, GROUP: tl.constexpr,
             GROUP_POW2: tl.constexpr, HEAD_DIM: tl.constexpr, SPLIT_BLOCK: tl.constexpr, dt: tl.constexpr):
    """Merge the ``live`` splits' partial softmaxes of one KV head, SPLIT_BLOCK splits at a time in split order.

    A block's partials of every column of the group are loaded at once (one round trip to L2 per block, and only
    as many blocks as there are live splits, whatever the cache's length); each block rescales what the blocks
    before it summed when its maximum is higher (the online softmax's merge). With one block, the sums are the
    one-shot merge's: the running maximum starts at -1e30, so the first block's rescale factor is exactly 0."""
    g = tl.arange(0, GROUP_POW2)
    d = tl.arange(0, HEAD_DIM)
    g_ok = g < GROUP
    top = tl.full([GROUP_POW2], -1.0e30, dtype=tl.float32)
    total_l = tl.zeros([GROUP_POW2], dtype=tl.float32)
    total = tl.zeros([GROUP_POW2, HEAD_DIM], dtype=tl.float32)
    for s0 in range(0, live, SPLIT_BLOCK):
        sp = s0 + tl.arange(0, SPLIT_BLOCK)
        mask = (sp < live)[:, None] & g_ok[None, :]
        rows = (kh * SPLITS + sp)[:, None] * GROUP + g[None, :]
        m = tl.load(PARTIAL + rows, mask=mask, other=-1.0e30, cache_modifier=".cg")
        l = tl.load(PARTIAL + KV_HEADS * SPLITS * GROUP + rows, mask=mask, other=0.0, cache_modifier=".cg")
        a = tl.load(PARTIAL + 2 * KV_HEADS * SPLITS * GROUP + rows[:, :, None] * HEAD_DIM + d[None, None, :],
                    mask=mask[:, :, None], other=0.0, cache_modifier=".cg")
        new_top = tl.maximum(top, tl.max(m, axis=0))
        alpha = tl.exp(top - new_top)
        weight = tl.exp(m - new_top[None, :])
        total_l = total_l * alpha + tl.sum(weight * l, axis=0)
        total = total * alpha[:, None] + tl.sum(weight[:, :, None] * a, axis=0)
        top = new_top
    out_ptrs = OUT + (kh * GROUP + g)[:, None] * HEAD_DIM + d[None, :]
    tl.store(out_ptrs, (total / total_l[:, None]).to(dt), mask=g_ok[:, None])

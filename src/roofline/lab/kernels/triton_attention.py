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
def decode_attention_kernel(QKV, KC, VC, COS, SIN, POS, OUT, PARTIAL, COUNTERS, scale, max_seq,
                            Q_HEADS: tl.constexpr, KV_HEADS: tl.constexpr, GROUP: tl.constexpr,
                            GROUP_PAD: tl.constexpr, HEAD_DIM: tl.constexpr, HALF: tl.constexpr, BLOCK_T: tl.constexpr,
                            T_PER_SPLIT: tl.constexpr, SPLITS: tl.constexpr, PDL: tl.constexpr):
    dt = KC.dtype.element_ty
    kh = tl.program_id(0)
    sp = tl.program_id(1)
    pos = tl.load(POS)
    g = tl.arange(0, GROUP_PAD)
    g_mask = g < GROUP
    d1 = tl.arange(0, HALF)
    d = tl.arange(0, HEAD_DIM)
    c = tl.load(COS + pos * HALF + d1).to(tl.float32)
    s = tl.load(SIN + pos * HALF + d1).to(tl.float32)
    if PDL:  # pos and the tables were written two kernels back or never; q/k/v by the kernel before this one
        gdc_wait()
        gdc_launch_dependents()
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
    cache = kh.to(tl.int64) * max_seq * HEAD_DIM

    m = tl.full([GROUP_PAD], -1.0e30, dtype=tl.float32)
    l = tl.zeros([GROUP_PAD], dtype=tl.float32)
    acc = tl.zeros([GROUP_PAD, HEAD_DIM], dtype=tl.float32)
    t_start = sp * T_PER_SPLIT
    for t0 in range(0, T_PER_SPLIT, BLOCK_T):
        t = t_start + t0 + tl.arange(0, BLOCK_T)
        t_mask = t < pos
        rows = cache + t[:, None].to(tl.int64) * HEAD_DIM
        k1 = tl.load(KC + rows + d1[None, :], mask=t_mask[:, None], other=0.0)
        k2 = tl.load(KC + rows + HALF + d1[None, :], mask=t_mask[:, None], other=0.0)
        scores = (tl.dot(r1, tl.trans(k1)) + tl.dot(r2, tl.trans(k2))) * scale
        scores = tl.where(t_mask[None, :], scores, -1.0e30)
        m_new = tl.maximum(m, tl.max(scores, axis=1))
        p = tl.where(t_mask[None, :], tl.exp(scores - m_new[:, None]), 0.0)
        alpha = tl.exp(m - m_new)
        l = l * alpha + tl.sum(p, axis=1)
        v = tl.load(VC + rows + d[None, :], mask=t_mask[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(dt), v).to(tl.float32)
        m = m_new
    if sp == 0:
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
        m = m_new
    out_ptrs = OUT + (kh * GROUP + g)[:, None] * HEAD_DIM + d[None, :]
    if SPLITS == 1:
        tl.store(out_ptrs, (acc / l[:, None]).to(dt), mask=g_mask[:, None])
    else:
        slot = kh * SPLITS + sp
        ml = PARTIAL + slot * (2 * GROUP_PAD)
        tl.store(ml + g, m)
        tl.store(ml + GROUP_PAD + g, l)
        acc_base = PARTIAL + KV_HEADS * SPLITS * 2 * GROUP_PAD + slot * (GROUP_PAD * HEAD_DIM)
        tl.store(acc_base + g[:, None] * HEAD_DIM + d[None, :], acc)
        tl.debug_barrier()
        arrived = tl.atomic_add(COUNTERS + kh, 1, sem="acq_rel")
        if arrived == SPLITS - 1:
            tl.debug_barrier()
            top = tl.full([GROUP_PAD], -1.0e30, dtype=tl.float32)
            for i in tl.static_range(SPLITS):
                part = PARTIAL + (kh * SPLITS + i) * (2 * GROUP_PAD)
                top = tl.maximum(top, tl.load(part + g, cache_modifier=".cg"))
            total_l = tl.zeros([GROUP_PAD], dtype=tl.float32)
            total = tl.zeros([GROUP_PAD, HEAD_DIM], dtype=tl.float32)
            for i in tl.static_range(SPLITS):
                part = PARTIAL + (kh * SPLITS + i) * (2 * GROUP_PAD)
                weight = tl.exp(tl.load(part + g, cache_modifier=".cg") - top)
                total_l += weight * tl.load(part + GROUP_PAD + g, cache_modifier=".cg")
                part_acc = PARTIAL + KV_HEADS * SPLITS * 2 * GROUP_PAD + (kh * SPLITS + i) * (GROUP_PAD * HEAD_DIM)
                total += weight[:, None] * tl.load(part_acc + g[:, None] * HEAD_DIM + d[None, :], cache_modifier=".cg")
            tl.store(out_ptrs, (total / total_l[:, None]).to(dt), mask=g_mask[:, None])
            tl.atomic_xchg(COUNTERS + kh, 0)

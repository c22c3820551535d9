"""How much of an attention score matrix a causal mask (or a sliding window) keeps: the fused kernels skip the
masked part."""

from __future__ import annotations


def _clamped_sum(lo: int, hi: int, cap: int) -> int:
    """sum(clamp(x, 0, cap) for x in range(lo, hi + 1))."""
    if hi < lo:
        return 0
    total = 0
    a, b = max(lo, 1), min(hi, cap)
    if b >= a:
        total += (a + b) * (b - a + 1) // 2
    above_lo = max(lo, cap + 1)
    if hi >= above_lo:
        total += cap * (hi - above_lo + 1)
    return total


def causal_kept(seq_q: int, seq_k: int, bottom_right: bool = False) -> int:
    """Entries of the seq_q x seq_k score matrix a causal mask keeps (row i keeps keys j <= i, shifted by
    seq_k - seq_q when bottom-right aligned)."""
    if seq_q <= 0 or seq_k <= 0:
        return 0
    return _on_or_below(seq_q, seq_k, seq_k - seq_q if bottom_right else 0)


def _on_or_below(seq_q: int, seq_k: int, diagonal: int) -> int:
    """Entries (i, j) of the seq_q x seq_k matrix with j - i <= ``diagonal`` (row i keeps clamp(i + 1 + diagonal))."""
    return _clamped_sum(1 + diagonal, seq_q + diagonal, seq_k)


def window_kept(seq_q: int, seq_k: int, left: int, right: int) -> int:
    """Entries of the seq_q x seq_k score matrix a sliding window keeps, flash-attn's (bottom-right aligned): query
    i sees keys j with -left <= j - (i + seq_k - seq_q) <= right; a negative bound is no bound (causal: right 0)."""
    if seq_q <= 0 or seq_k <= 0:
        return 0
    offset = seq_k - seq_q
    kept = _on_or_below(seq_q, seq_k, offset + right) if right >= 0 else seq_q * seq_k
    if left >= 0:
        kept -= _on_or_below(seq_q, seq_k, offset - left - 1)
    return max(kept, 0)


def causal_fraction(seq_q: int, seq_k: int, bottom_right: bool = False) -> float:
    """Share of the seq_q x seq_k score matrix a causal mask keeps (``causal_kept`` of all)."""
    if seq_q <= 0 or seq_k <= 0:
        return 0.0
    return causal_kept(seq_q, seq_k, bottom_right) / (seq_q * seq_k)

"""Arithmetic on time intervals (start, end): unions, their lengths, intersections, clipping to a window."""

from __future__ import annotations

import numpy as np


def union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for lo, hi in sorted(i for i in intervals if i[1] > i[0]):
        if merged and lo <= merged[-1][1]:
            if hi > merged[-1][1]:
                merged[-1] = (merged[-1][0], hi)
        else:
            merged.append((lo, hi))
    return merged


def length(intervals: list[tuple[float, float]]) -> float:
    return sum(hi - lo for lo, hi in intervals)


def intersection(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Of two unions (sorted, disjoint), the stretches in both."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def clip(intervals: list[tuple[float, float]], lo: float, hi: float) -> list[tuple[float, float]]:
    return [(max(a, lo), min(b, hi)) for a, b in intervals if b > lo and a < hi]


def union_arrays(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``union`` of the intervals ``zip(starts, ends)``, as the (starts, ends) of its stretches: the same floats."""
    keep = ends > starts
    lo, hi = starts[keep], ends[keep]
    order = np.lexsort((hi, lo))
    lo, hi = lo[order], hi[order]
    if not len(lo):
        return lo, hi
    reach = np.maximum.accumulate(hi)
    opens = np.flatnonzero(np.concatenate(([True], lo[1:] > reach[:-1])))
    return lo[opens], reach[np.append(opens[1:] - 1, len(lo) - 1)]


def clip_arrays(lo: np.ndarray, hi: np.ndarray, start: float, end: float) -> tuple[np.ndarray, np.ndarray]:
    """``clip`` of a union held as arrays (``union_arrays``) to the window [start, end], its stretches found by
    bisection: a trace's union has tens of thousands."""
    first = max(int(np.searchsorted(lo, start, side="right")) - 1, 0)
    last = int(np.searchsorted(lo, end, side="left"))
    lo, hi = lo[first:last], hi[first:last]
    keep = (hi > start) & (lo < end)
    return np.maximum(lo[keep], start), np.minimum(hi[keep], end)


def in_order_sum(values: np.ndarray, empty: float = 0) -> float:
    """``sum(values)`` added left to right, as a loop adds (``np.sum`` adds pairwise: other floats); ``empty`` for
    none (0 as ``sum`` gives it, or 0.0 for a float total)."""
    return float(np.cumsum(values)[-1]) if len(values) else empty


class Coverage:
    """A union of intervals asked, for many windows at once, how much of each it leaves uncovered: by the union's
    running length (a bisection per window, vectorised), not by clipping it to each window (a trace's ops times its
    kernels). Times are kept from the union's first start, where float64 keeps a microsecond trace's fractions."""

    def __init__(self, intervals: list[tuple[float, float]]):
        spans = union(intervals)
        self._origin = spans[0][0] if spans else 0.0
        self._starts = np.array([lo - self._origin for lo, _ in spans], dtype=np.float64)
        self._ends = np.array([hi - self._origin for _, hi in spans], dtype=np.float64)
        self._before = np.concatenate(([0.0], np.cumsum(self._ends - self._starts)[:-1])) if spans else self._starts

    def _covered_until(self, t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(self._starts, t, side="right") - 1
        j = np.maximum(i, 0)
        return np.where(i >= 0, self._before[j] + np.minimum(t, self._ends[j]) - self._starts[j], 0.0)

    def uncovered(self, lo, hi) -> np.ndarray:
        """Of each window [lo, hi) (scalars or arrays), the length no interval covers."""
        lo = np.asarray(lo, dtype=np.float64) - self._origin
        hi = np.maximum(np.asarray(hi, dtype=np.float64) - self._origin, lo)
        if not len(self._starts):
            return hi - lo
        return np.clip((hi - lo) - (self._covered_until(hi) - self._covered_until(lo)), 0.0, hi - lo)

"""The column forms of the interval arithmetic (attribution's per-step device activity) give the tuple forms'
stretches and sums exactly: the same floats, touching and nested intervals, empty windows."""

import random

import numpy as np
import pytest

from roofline.intervals import clip, clip_arrays, in_order_sum, length, union, union_arrays


def _random_intervals(rng: random.Random, n: int) -> list[tuple[float, float]]:
    out = []
    for _ in range(n):
        start = rng.choice([rng.uniform(0, 1000), float(rng.randint(0, 50) * 10)])  # some shared and touching ends
        out.append((start, start + rng.choice([0.0, -1.0, rng.uniform(0, 40), 10.0])))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_union_arrays_is_union(seed):
    rng = random.Random(seed)
    spans = _random_intervals(rng, rng.randint(0, 300))
    lo, hi = union_arrays(np.array([s for s, _ in spans], dtype=float), np.array([e for _, e in spans], dtype=float))
    assert list(zip(lo.tolist(), hi.tolist())) == union(spans)


@pytest.mark.parametrize("seed", range(40))
def test_clip_arrays_and_its_length_are_clip_and_length(seed):
    rng = random.Random(seed)
    spans = _random_intervals(rng, rng.randint(1, 300))
    merged = union(spans)
    lo = np.array([s for s, _ in merged], dtype=float)
    hi = np.array([e for _, e in merged], dtype=float)
    for _ in range(20):
        start = rng.uniform(-50, 1050)
        end = start + rng.choice([0.0, rng.uniform(0, 300)])
        clipped_lo, clipped_hi = clip_arrays(lo, hi, start, end)
        expected = clip(merged, start, end)
        assert list(zip(clipped_lo.tolist(), clipped_hi.tolist())) == expected
        got = in_order_sum(clipped_hi - clipped_lo)
        assert got == length(expected) and type(got) is type(length(expected))


def test_in_order_sum_adds_left_to_right_not_pairwise():
    values = np.array([1e16, 1.0, -1e16, 1.0] * 50)
    assert in_order_sum(values) == sum(values.tolist())
    assert in_order_sum(values) != float(np.sum(values))  # numpy's pairwise sum gives other floats here
    assert in_order_sum(np.zeros(0)) == 0 and type(in_order_sum(np.zeros(0))) is int
    assert type(in_order_sum(np.zeros(0), 0.0)) is float

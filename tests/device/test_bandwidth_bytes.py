"""The bytes each bandwidth kernel is credited with: copy moves its buffer twice (read + write), the others once.
Timing is replaced by a fixed second, so the rates are the credited bytes themselves."""

from __future__ import annotations

import pytest

from roofline.device import measure


def test_each_bandwidth_kernel_is_credited_its_minimum_traffic(monkeypatch, one_thread):
    monkeypatch.setattr(measure, "_bandwidth_buffer_elems", lambda device, quick: 4096)
    monkeypatch.setattr(measure, "time_fn", lambda fn, dev, warmup, repeats: [1.0])
    result = measure.measure_peak_bandwidth("cpu", quick=True)
    nbytes = 4096 * 4
    assert result.buffer_bytes == nbytes
    rates = result.by_kernel_bytes_per_s
    assert rates["copy"] == pytest.approx(2 * nbytes)
    for name in ("read", "write", "write-bytes", "zero"):
        assert rates[name] == pytest.approx(nbytes), name
    assert result.best_bytes_per_s == pytest.approx(2 * nbytes)

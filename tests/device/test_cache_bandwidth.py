"""The cache roof's arithmetic, on a simulated GPU (no GPU here): the slope over two footprints removes the fixed
per-kernel gap; a noisy or flat slope falls back to bytes over time per call."""

from __future__ import annotations

import types

import pytest

from roofline.device import cache_bandwidth as cb

GAP_S = 1.0e-6
L2 = 60 * 2**20


def _simulated_gpu(monkeypatch, seconds):
    fake = types.SimpleNamespace(type="cuda")
    monkeypatch.setattr(cb, "resolve_device", lambda device: fake)
    monkeypatch.setattr(cb, "last_level_cache_bytes", lambda device: L2)
    monkeypatch.setattr(cb, "_kernels", lambda footprint, device: {
        "copy": ((footprint, 1), footprint), "inplace": ((footprint, 2), 2 * footprint)})
    monkeypatch.setattr(cb, "_gpu_seconds_per_call", lambda fn, device: seconds(*fn))


def test_the_slope_removes_the_per_kernel_gap(monkeypatch):
    rate = {1: 8e12, 2: 6e12}
    _simulated_gpu(monkeypatch, lambda footprint, k: GAP_S + (footprint * k) / rate[k])
    result = cb.measure_cache_bandwidth("cuda")
    assert result.cache_bytes == L2
    assert result.by_kernel_bytes_per_s["copy (slope)"] == pytest.approx(8e12)
    assert result.best_bytes_per_s == pytest.approx(8e12)
    assert all(v < 8e12 for k, v in result.by_kernel_bytes_per_s.items() if "slope" not in k)
    assert "slope between the smallest and largest footprint" in result.method and "30 MiB" in result.method


def test_a_flat_or_implausible_slope_falls_back_to_the_per_call_rate(monkeypatch):
    _simulated_gpu(monkeypatch, lambda footprint, k: 5e-6)  # every size takes the same time: no slope
    flat = cb.measure_cache_bandwidth("cuda")
    assert not any("slope" in k for k in flat.by_kernel_bytes_per_s)
    assert flat.best_bytes_per_s == pytest.approx(2 * 30 * 2**20 / 5e-6)
    assert "no usable slope" in flat.method
    # the largest footprint only a hair slower than the smallest: a slope of many times the per-call rate is noise
    _simulated_gpu(monkeypatch, lambda footprint, k: 5e-6 + footprint * 1e-18)
    noisy = cb.measure_cache_bandwidth("cuda")
    assert not any("slope" in k for k in noisy.by_kernel_bytes_per_s)

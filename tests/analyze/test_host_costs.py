"""The host side of the predictor measured for real on this machine's CPU: every figure present, positive where
it must be, and cached so a second call measures nothing. No timing value is asserted (noisy machines)."""

from __future__ import annotations

import pytest

from roofline.analyze import host_costs
from roofline.analyze.host_costs import get_host_costs, host_costs_path


@pytest.mark.slow
def test_host_costs_are_measured_once_then_read_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(host_costs, "CALLS", 20)  # the figures' precision is not under test
    monkeypatch.setattr(host_costs, "PASSES", 3)
    costs = get_host_costs("cpu")
    assert set(costs.dispatch_s) >= {"mm", "add", "layer_norm", "scaled_dot_product_attention"}
    assert all(v > 0 for v in costs.dispatch_s.values())
    assert costs.backward_per_op_s > 0 and costs.module_call_s >= 0 and costs.python_per_op_s >= 0
    assert 0 <= costs.spread and "autograd chain" in costs.method and costs.device == "cpu"
    assert host_costs_path(__import__("torch").device("cpu")).exists()

    def no_measuring(device):
        raise AssertionError("measured again despite the cache")

    monkeypatch.setattr(host_costs, "measure_host_costs", no_measuring)
    assert get_host_costs("cpu") == costs

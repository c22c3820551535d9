"""The host-cost measurement's arithmetic with its clock replaced (no timing is asserted): per-call time of a loop,
median and relative IQR of the passes, Python per op, module call and backward op from the figures fed in, and the
cache file per device and torch version."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import roofline.analyze.host_costs as hc
from roofline.report import HostCosts


def test_a_loop_is_timed_per_call(monkeypatch):
    clock = iter([10.0, 12.0])
    monkeypatch.setattr(hc.time, "perf_counter", lambda: next(clock))
    called = []
    assert hc._timed(lambda: called.append(1), 4) == 0.5 and len(called) == 4


def test_median_and_relative_iqr_of_the_passes(monkeypatch):
    samples = iter([1.0, 5.0, 3.0, 2.0, 4.0])
    monkeypatch.setattr(hc, "_timed", lambda fn, calls: next(samples))
    warm = []
    assert hc._median_and_spread(lambda: warm.append(1), torch.device("cpu")) == (3.0, pytest.approx((4 - 2) / 3))
    assert warm == [1]  # one call before the passes
    monkeypatch.setattr(hc, "PASSES", 1)
    monkeypatch.setattr(hc, "_timed", lambda fn, calls: 2.0)
    assert hc._median_and_spread(lambda: None, torch.device("cpu")) == (2.0, 0.0)


class _Ops(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.n += 1
        return func(*args, **(kwargs or {}))


def test_python_per_op_module_call_and_backward_op_from_the_figures_fed_in(monkeypatch):
    """Every probe 1 us, a module call 3 us against 1 us for forward alone, the block 1 ms, the 64-op chain 1 ms
    forward and 1.65 ms with its backward."""
    block, h = hc._Block(), torch.randn(2, 8, 16)
    with torch.no_grad(), _Ops() as ops:
        block(h)
    n = ops.n  # aten calls of one block forward, counted here
    probes = len(hc._kind_probes(torch.device("cpu")))
    figures = [(1e-6, 0.1)] * probes + [(3e-6, 0.2), (1e-6, 0.0), (1e-3, 0.3), (1e-3, 0.0), (1.65e-3, 0.4)]
    fed = iter(figures)

    def fake(fn, device, calls=hc.CALLS):
        fn()  # every probe and the block still run once
        return next(fed)

    monkeypatch.setattr(hc, "_median_and_spread", fake)
    # 3 us per top-level event, 1 us per nested one; the third did not slow down
    refs = {"tiny add": [1e-6, 4e-6, 1.0, 0.0, 1.0, 0.0], "linear": [2e-6, 10e-6, 6.0, 0.0, 1.0, 0.0],
            "views": [2e-6, 2e-6, 3.0, 0.0, 3.0, 0.0]}
    monkeypatch.setattr(hc, "_profiler_references", lambda device, block, h: refs)
    monkeypatch.setattr(hc, "_profiler_step_cost", lambda device: 4e-6)
    costs = hc.measure_host_costs(torch.device("cpu"))
    assert costs.profiler_per_step_s == 4e-6 and "profiler cost per step" in costs.method
    assert costs.profiler_per_top_level_s == pytest.approx(3e-6)
    assert costs.profiler_per_nested_event_s == pytest.approx(1e-6) and costs.profiler_per_runtime_call_s == 0
    assert costs.profiler_references == refs and costs.profiler_fit_residual == pytest.approx(0, abs=1e-9)
    assert costs.profiler_left_out == {"views": "the profiler did not slow it down"}
    assert costs.profiler_model == hc.PROFILER_MODEL and "tiny add, linear)" in costs.method
    assert costs.dispatch_s == {kind: 1e-6 for kind in hc._kind_probes(torch.device("cpu"))}
    assert costs.module_call_s == pytest.approx(2e-6)
    modules = 7  # the block, two norms, four linears
    assert costs.python_per_op_s == pytest.approx((1e-3 - n * 1e-6 - modules * 2e-6) / n)
    assert costs.backward_per_op_s == pytest.approx(0.65e-3 / 65)  # 64 multiplies and the sum
    assert costs.spread == 0.1 and costs.device == "cpu"


def test_host_costs_are_cached_per_device_and_torch_version(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    measured = []
    monkeypatch.setattr(hc, "measure_host_costs",
                        lambda device: measured.append(device) or HostCosts(device=str(device), python_per_op_s=1e-6,
                                                                            profiler_references={"r": [0, 0, 1, 0]},
                                                                            profiler_model=hc.PROFILER_MODEL))
    monkeypatch.setattr(hc, "_device_name", lambda device: "Some CPU 9000")
    first = hc.get_host_costs("cpu")
    path = hc.host_costs_path(torch.device("cpu"))
    assert path.parent == tmp_path and path.name.startswith("host-costs-") and path.suffix == ".json"
    assert path.read_text().endswith("}\n")
    assert hc.get_host_costs("cpu") == first and len(measured) == 1  # the second read is the cache's
    hc.get_host_costs("cpu", remeasure=True)
    assert len(measured) == 2
    # a cache written before the profiler's cost was measured, or fitted with another model, is measured again
    path.write_text('{"device": "cpu", "python_per_op_s": 1e-6}')
    hc.get_host_costs("cpu")
    assert len(measured) == 3
    path.write_text('{"device": "cpu", "profiler_per_event_s": 1e-6, "profiler_references": {"r": [0, 0, 1, 0]}}')
    hc.get_host_costs("cpu")
    assert len(measured) == 4


# Measured for real on this machine's CPU: every figure present and cached; no value asserted (noisy machines).
@pytest.mark.slow
def test_host_costs_measured_for_real_have_every_figure(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(hc, "CALLS", 20)  # the figures' precision is not under test
    monkeypatch.setattr(hc, "PASSES", 3)
    monkeypatch.setattr(hc, "PROFILED_CALLS", 8)
    monkeypatch.setattr(hc, "PROFILED_PASSES", 2)
    costs = hc.get_host_costs("cpu")
    assert set(costs.dispatch_s) >= {"mm", "add", "layer_norm", "scaled_dot_product_attention"}
    assert all(v > 0 for v in costs.dispatch_s.values())
    assert costs.backward_per_op_s > 0 and costs.module_call_s >= 0 and costs.python_per_op_s >= 0
    assert 0 <= costs.spread and "autograd chain" in costs.method and costs.device == "cpu"
    assert hc.host_costs_path(torch.device("cpu")).exists()
    # the references as counted in their own CPU profile: no runtime calls or kernels; one aten event, top-level,
    # per tiny add; the views chain's six calls are its top-level events; a linear holds nested ones
    refs = costs.profiler_references
    assert set(refs) == {"tiny add", "views", "linear", "conv2d", "layer norm", "embedding", "transformer block",
                         "mlp backward"}
    assert refs["tiny add"][2:] == [1.0, 0.0, 1.0, 0.0]
    assert 0 <= costs.profiler_per_step_s < 1e-3
    assert refs["views"][4] == 6.0 and refs["linear"][4] == 1.0 and refs["linear"][2] > 2
    assert refs["mlp backward"][4] > 3  # the forward's calls and autograd's engine frames
    assert all(r[3] == 0 and r[5] == 0 for r in refs.values()) and costs.profiler_per_runtime_call_s == 0

    def no_measuring(device):
        raise AssertionError("measured again despite the cache")

    monkeypatch.setattr(hc, "measure_host_costs", no_measuring)
    assert hc.get_host_costs("cpu") == costs


@pytest.mark.cuda
def test_on_a_gpu_the_references_count_runtime_calls_and_device_time(tmp_path, monkeypatch):
    """The views chain launches nothing, the add one kernel; each launching reference has device time. Each profiled
    loop also holds runtime calls that are no op's (its closing synchronize, the profiler's own at start-up), spread
    over the loop's calls: a third of a call each in these 9-call loops on the H200, so the views count is below one
    and the add's exceeds the views' by the one launch."""
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(hc, "CALLS", 20)
    monkeypatch.setattr(hc, "PASSES", 3)
    monkeypatch.setattr(hc, "PROFILED_CALLS", 8)
    monkeypatch.setattr(hc, "PROFILED_PASSES", 2)
    refs = hc.get_host_costs("cuda").profiler_references
    views, add = refs["views"], refs["tiny add"]
    assert views[3] < 0.5 and views[5] == 0 and views[4] == 6.0
    assert add[3] - views[3] == pytest.approx(1.0, abs=0.2) and add[5] > 0
    assert all(r[5] > 0 for name, r in refs.items() if name != "views")

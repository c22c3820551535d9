"""The live join: every recorded op finds its own timed event, so repeated layers each get their own time."""

from __future__ import annotations

import pytest
import torch

from roofline.analyze.live import analyze_model


@pytest.fixture(scope="module")
def stacked_report(cpu_ceilings):
    torch.manual_seed(0)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.Linear(96, 128), torch.nn.Linear(128, 32))
        return analyze_model(model, (torch.randn(16, 64),), device="cpu", ceilings=cpu_ceilings, warmup=1, iters=2)
    finally:
        torch.set_num_threads(previous)


def test_each_repeated_layer_gets_its_own_nonzero_time(stacked_report):
    gemms = [op for op in stacked_report.ops if op.name in ("aten::addmm", "aten::linear") and op.bound != "launch"]
    by_module = {op.module: op for op in gemms}
    assert sorted(by_module) == ["0", "1", "2"]
    for module, (k, n) in {"0": (64, 96), "1": (96, 128), "2": (128, 32)}.items():
        op = by_module[module]
        assert op.flops == 2 * 16 * k * n
        assert op.time_s > 0, module
        assert op.cpu_time_s > 0, module
    # each layer is timed by its own event: their start times differ and follow the layer order
    starts = [by_module[m].start_s for m in ("0", "1", "2")]
    assert None not in starts and starts == sorted(starts) and len(set(starts)) == 3
    assert not any("found no event" in note for note in stacked_report.summary.notes)
    # each linear's own host time (its dispatch into addmm) is a row of its layer's
    dispatch = [op.module for op in stacked_report.ops if op.name == "aten::linear" and op.bound == "launch"]
    assert sorted(dispatch) == ["0", "1", "2"]
    assert "perf_counter" in stacked_report.step_time.method and "CUDA" not in stacked_report.step_time.method


def test_identical_repeated_layers_each_get_their_own_event(cpu_ceilings, one_thread):
    """Same op, same shapes, three times: only the order tells the events apart, so the k-th event must go to the
    k-th recorded op (pairing every event with the first recorded one leaves layers 1 and 2 without time)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(*(torch.nn.Linear(64, 64) for _ in range(3)))
    report = analyze_model(model, (torch.randn(16, 64),), device="cpu", ceilings=cpu_ceilings, warmup=1, iters=2)
    gemms = {op.module: op for op in report.ops
             if op.name in ("aten::addmm", "aten::linear") and op.bound != "launch"}
    assert sorted(gemms) == ["0", "1", "2"]
    starts = [gemms[m].start_s for m in ("0", "1", "2")]
    assert all(gemms[m].time_s > 0 for m in gemms)
    assert None not in starts and starts == sorted(starts) and len(set(starts)) == 3

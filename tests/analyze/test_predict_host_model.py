"""The profiled host model (analyze/predict.py ``host_model="profiled"``) by value: each op's host time is its
profiled span and gap less the profiler's cost per aten event and runtime call, floored at its dispatch cost; a
sync op counts its dispatch and gap; on a CPU the cost the gap cannot absorb comes off the op's span. And the
profiler-cost fit of analyze/host_costs.py on synthetic timings."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.analyze.efficiency import EfficiencyTable
from roofline.analyze.host_costs import fit_profiler_costs, profiled_counts
from roofline.analyze.predict import predict
from roofline.errors import RooflineError
from roofline.report import Ceilings, HostCosts, OpRecord, Report

GPU = Ceilings(device="cuda", device_name="GPU X", memory_bandwidth_bytes_per_s=1e12,
               peak_flops_per_s={"float32": 1e13}, launch_overhead_s=5e-6)
CPU = Ceilings(device="cpu", device_name="CPU Y", memory_bandwidth_bytes_per_s=1e10,
               peak_flops_per_s={"float32": 1e11}, launch_overhead_s=2e-6)
COSTS = HostCosts(device="cuda", dispatch_s={"mul": 5e-6, "add": 7e-6}, profiler_per_event_s=2e-6,
                  profiler_per_runtime_call_s=3e-6, profiler_references={"tiny add": [1e-6, 6e-6, 1.0, 1.0]})
US = 1e-6


def _op(name: str, device_us: float, cpu_us: float, gap_us: float, events: int, calls: int) -> OpRecord:
    return OpRecord(name=name, dtype="float32", flops=64.0, bytes=768.0, time_s=device_us * US,
                    cpu_time_s=cpu_us * US, host_gap_s=gap_us * US, profiled_events=events, runtime_calls=calls,
                    start_s=0.0, input_shapes=[[8, 8], [8, 8]], output_shapes=[[8, 8]])


def _predict(ops, ceilings=GPU, model="profiled", costs=COSTS):
    return predict(Report(ceilings=ceilings, ops=ops), table=EfficiencyTable(), host_costs=costs, host_model=model)


def test_each_ops_host_time_is_its_span_and_gap_less_the_profilers_cost_floored_at_dispatch():
    ops = [_op("aten::mul", 10, 30, 10, 2, 4),   # 40 - (2 x 2 + 4 x 3) = 24 us
           _op("aten::add", 10, 6, 1, 1, 1),     # 7 - 5 = 2 us: floored at add's dispatch, 7 us
           _op("aten::item", 0, 500, 4, 3, 2)]   # a sync: median dispatch 6 us + its 4 us gap = 10 us
    p = _predict(ops)
    # host issues mul at 24, device runs it to 34; add issued at 31, runs 34-44; item issued at 41 waits to 44
    assert p.host_time_s == pytest.approx(41 * US) and p.device_time_s == pytest.approx(20 * US)
    assert p.step_time_s == pytest.approx(44 * US) and p.bound == "host" and p.syncs == 1
    assert [g.host_time_s for g in sorted(p.dominant, key=lambda g: g.name)] == [
        pytest.approx(7 * US), pytest.approx(10 * US), pytest.approx(24 * US)]
    assert "profiled step less the profiler's cost" in p.method
    dispatch = _predict(ops, model="dispatch")
    assert dispatch.host_time_s == pytest.approx((5 + 7 + 6) * US)  # no Python or module costs in COSTS


def test_on_a_cpu_the_cost_the_gap_cannot_absorb_comes_off_the_span():
    ops = [_op("aten::mul", 50, 50, 3, 4, 0),   # cost 8 us: host 0, the span 50 -> 45
           _op("aten::add", 10, 10, 20, 1, 0)]  # cost 2 us: host 18, span kept
    p = _predict(ops, ceilings=CPU)
    assert p.host_time_s == pytest.approx(18 * US) and p.device_time_s == pytest.approx(55 * US)
    assert p.step_time_s == pytest.approx(73 * US) and p.bound == "serial"


def test_without_event_counts_or_profiler_costs_the_dispatch_model_is_used_and_said():
    old = [_op("aten::mul", 10, 30, 10, 0, 0)]
    p = _predict(old)
    assert p.host_time_s == pytest.approx(5 * US)
    assert any("predates the profiler event counts" in n for n in p.notes)
    p = _predict([_op("aten::mul", 10, 30, 10, 2, 4)], costs=HostCosts(dispatch_s={"mul": 5e-6}))
    assert p.host_time_s == pytest.approx(5 * US)
    assert any("host costs predate the profiler's cost" in n for n in p.notes)
    with pytest.raises(RooflineError, match="host model"):
        _predict(old, model="guess")


def test_the_fit_recovers_the_costs_per_event_and_per_runtime_call():
    per_event, per_call = 1.5e-6, 4e-6
    counts = [(1, 1), (8, 6), (8, 1), (108, 40)]
    refs = [[1e-5, 1e-5 + e * per_event + c * per_call, e, c] for e, c in counts]
    (a, b), residual = fit_profiler_costs(refs)
    assert a == pytest.approx(per_event) and b == pytest.approx(per_call) and residual == pytest.approx(0, abs=1e-9)


def _events_only(refs):
    """The relative least-squares cost per event: minimises the sum of ((e a - y) / y)^2."""
    return sum(e / y for e, y in refs) / sum((e / y) ** 2 for e, y in refs)


def test_the_fit_without_runtime_calls_and_when_one_cost_would_be_negative():
    refs = [[1e-6, 3e-6, 1, 0], [1e-5, 1.8e-5, 4, 0], [0, 2.2e-5, 10, 0]]  # 2, 2, 2.2 us per event
    (a, b), residual = fit_profiler_costs(refs)
    assert b == 0 and a == pytest.approx(_events_only([(1, 2e-6), (4, 8e-6), (10, 22e-6)]))
    assert residual == pytest.approx((sum((e * a / y - 1) ** 2 for e, y in [(1, 2e-6), (4, 8e-6), (10, 22e-6)])
                                      / 3) ** 0.5) and residual > 0
    # more calls with less added time: the joint fit's call cost is negative, so events alone explain it
    refs = [[0, 4e-6, 1, 1], [0, 2e-6, 1, 5], [0, 8e-6, 2, 1]]
    (a, b), _ = fit_profiler_costs(refs)
    assert b == 0 and a == pytest.approx(_events_only([(1, 4e-6), (1, 2e-6), (2, 8e-6)]))
    # a reference the profiler did not slow down says nothing; no reference, no cost
    assert fit_profiler_costs([[1e-6, 1e-6, 1, 1]]) == ((0.0, 0.0), 0.0) == fit_profiler_costs([])


def test_profiled_counts_reads_aten_events_and_runtime_and_driver_calls():
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::add"}, {"ph": "X", "cat": "cuda_runtime"},
              {"ph": "X", "cat": "cuda_driver"}, {"ph": "X", "cat": "kernel"}, {"ph": "i", "cat": "cpu_op"},
              {"ph": "X", "cat": "user_annotation"}, "junk"]
    assert profiled_counts(events) == (1, 2)


def test_cli_predict_takes_the_host_model_and_says_when_it_cannot_use_it(tmp_path, capsys):
    import msgspec

    from roofline.cli import main

    report = next(Path(__file__).resolve().parents[2].glob("benchmarks/results/h200/**/report.json"))
    out = tmp_path / "p.json"
    assert main(["predict", str(report), "--host-model", "profiled", "--json", str(out)]) == 0
    notes = msgspec.json.decode(out.read_bytes())["notes"]
    # a report committed before the counts (and, on a machine without CUDA, host costs without the profiler's)
    assert any(n.startswith("profiled host model not used (") for n in notes)
    assert main(["predict", str(report), "--host-model", "guess"]) == 2
    assert "--host-model" in capsys.readouterr().err

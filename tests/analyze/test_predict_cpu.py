"""The predictor on a CPU (analyze/predict.py): one thread runs the ops, so the step is the ops' own time plus the
Python between them; the calibrated model scales that whole replayed step by the one factor that makes the unchanged
step replay at its time measured without the profiler, and a factor outside ``CALIBRATION_RANGE`` is refused, said
why (a GPU's profiler-cost factor too, above its ceiling). Before, a CPU report's calibration scaled the profiler's
fitted cost per event (under a microsecond) by thousands, calling most of an op's own time the profiler's: "host 0 ns,
the profiler's fitted cost per op times 1884.99"."""

from __future__ import annotations

import json

import pytest
import torch

from roofline.analyze.efficiency import EfficiencyTable
from roofline.analyze.predict import CALIBRATION_RANGE, CALIBRATION_TOLERANCE, predict
from roofline.render.prediction import render_prediction
from roofline.report import Ceilings, HostCosts, OpRecord, Report, Timing

CPU = Ceilings(device="cpu", device_name="CPU Y", memory_bandwidth_bytes_per_s=1e10,
               peak_flops_per_s={"float32": 1e11}, launch_overhead_s=2e-6)
GPU = Ceilings(device="cuda", device_name="GPU X", memory_bandwidth_bytes_per_s=1e12,
               peak_flops_per_s={"float32": 1e13}, launch_overhead_s=5e-6)
US = 1e-6
# A CPU's host costs as this 2-core machine fitted them (2026-12-02): 0.6 us per profiled event, nothing per runtime
# call (a CPU has none), a few us per step.
CPU_COSTS = HostCosts(device="cpu", device_name="CPU Y", dispatch_s={"mul": 2e-6, "add": 2e-6},
                      python_per_op_s=4e-6, module_call_s=0.7e-6, profiler_per_top_level_s=0.6e-6,
                      profiler_per_nested_event_s=0.6e-6, profiler_per_step_s=0.0,
                      profiler_references={f"r{i}": [1e-6, 2e-6, 1, 0, 1, 0.0] for i in range(5)},
                      profiler_model="m")


N = 8 * 131072  # elements of each operand: 12.6 MB moved per op, 1.26 ms at the CPU's 1e10 B/s


def _op(name: str, span_us: float, gap_us: float, events: int, start_us: float) -> OpRecord:
    return OpRecord(name=name, dtype="float32", flops=float(N), bytes=12.0 * N, time_s=span_us * US,
                    cpu_time_s=span_us * US, host_gap_s=gap_us * US, profiled_events=events, profiled_top_level=1,
                    runtime_calls=0, start_s=start_us * US, input_shapes=[[8, 131072], [8, 131072]],
                    input_dtypes=["float32"] * 2, output_shapes=[[8, 131072]], output_dtypes=["float32"])


def _cpu_report(measured_us: float) -> Report:
    """Two ops profiled at 1000 us and 500 us of their own, 100 us and 50 us of Python before them; less the
    profiler's fitted cost (7 events: 4.2 us; 1 event: 0.6 us), the step replays at 95.8 + 1000 + 49.4 + 500 =
    1645.2 us."""
    ops = [_op("aten::mul", 1000, 100, 7, 0), _op("aten::add", 500, 50, 1, 1200)]
    return Report(ceilings=CPU, ops=ops, step_time=Timing.from_samples([measured_us * US], "timed"))


def test_a_cpu_step_is_calibrated_as_a_whole_the_ops_own_time_with_the_python_between_them():
    p = predict(_cpu_report(822.6), table=EfficiencyTable(), host_costs=CPU_COSTS)
    # 822.6 / 1645.2 = 0.5 on everything: 72.6 us of Python, 750 us of the ops' own time
    assert p.bound == "serial" and p.step_time_s == pytest.approx(822.6 * US)
    assert p.host_time_s == pytest.approx(72.6 * US) and p.device_time_s == pytest.approx(750 * US)
    assert [(g.name, round(g.device_time_s / US, 3), round(g.host_time_s / US, 3)) for g in p.dominant] == [
        ("aten::mul", 500.0, 47.9), ("aten::add", 250.0, 24.7)]
    assert any(n.startswith("calibrated on a CPU: each op's own time and the Python between ops times 0.50, so that "
                            "the unchanged step replays at the 0.823 ms measured without the profiler (as profiled, "
                            "less the profiler's fitted cost: 1.65 ms)") for n in p.notes)
    assert not any("profiler's fitted cost per op times" in n for n in p.notes)
    assert "the profiled step scaled by 0.50" in p.method and "no device stream" in p.method
    text = render_prediction(p)
    assert "one thread, no device stream: ops 750 us + Python between them 72.6 us over 2 ops, 0 syncs" in text
    assert "serial-bound" not in text and f"{'op':>10} {'Python':>10}" in text


def test_a_cpu_calibration_factor_outside_the_range_is_not_used_and_says_why():
    lo, hi = CALIBRATION_RANGE
    for measured_us in (1645.2 * hi * 1.01, 1645.2 * lo * 0.99):
        p = predict(_cpu_report(measured_us), table=EfficiencyTable(), host_costs=CPU_COSTS)
        # the profiled step as it was: 95.8 + 49.4 us of Python, 1500 us of the ops' own
        assert p.step_time_s == pytest.approx(1645.2 * US) and p.host_time_s == pytest.approx(145.2 * US)
        assert any(n.startswith("calibration not used: the unchanged step replays at 1.65 ms from the profile and "
                                "measured") and "a factor outside 0.01-100" in n for n in p.notes)
        assert "the profiled step as it was" in p.method


def test_a_cpu_calibration_factor_at_either_end_of_the_range_is_used():
    # 16.452 us and 164.52 ms against the 1645.2 us replayed: factors of exactly 0.01 and 100
    for measured_us, factor in ((16.452, "0.01"), (164520.0, "100.00")):
        p = predict(_cpu_report(measured_us), table=EfficiencyTable(), host_costs=CPU_COSTS)
        assert p.step_time_s == pytest.approx(measured_us * US)
        assert any(n.startswith(f"calibrated on a CPU: each op's own time and the Python between ops times {factor},")
                   for n in p.notes), p.notes


def test_a_cpu_projection_keeps_the_factor_of_its_unchanged_step():
    from roofline.analyze.project import Change

    p = predict(_cpu_report(822.6), table=EfficiencyTable(), host_costs=CPU_COSTS, change=Change(batch=(8, 16)))
    # each op twice the bytes at its measured efficiency (no table entry): 3000 us of the ops' own time as profiled,
    # times the unchanged step's 0.5, with the same 72.6 us of Python
    assert p.device_time_s == pytest.approx(1500 * US) and p.host_time_s == pytest.approx(72.6 * US)
    assert p.step_time_s == pytest.approx(1572.6 * US) and p.scenario == {"batch": "8 -> 16"}


def test_a_cpu_hosts_speed_scales_the_ops_own_time_too():
    p = predict(_cpu_report(822.6), table=EfficiencyTable(), host_costs=CPU_COSTS, host_speed=2.0)
    assert p.step_time_s == pytest.approx(1645.2 * US) and p.device_time_s == pytest.approx(1500 * US)
    assert any(n.startswith("each op's own time and the Python between ops times 2 (on a CPU the ops run on the host)")
               for n in p.notes)


def test_a_gpu_profiler_cost_factor_above_the_ceiling_is_not_used():
    # 10 ms of host span, 1 top-level event: closing 10 ms down to the 100 us measured would take the profiler's
    # 4 us per event times 2480
    op = OpRecord(name="aten::mul", dtype="float32", flops=64.0, bytes=768.0, time_s=10 * US, cpu_time_s=10000 * US,
                  host_gap_s=10 * US, profiled_events=1, profiled_top_level=1, runtime_calls=0, start_s=0.0,
                  input_shapes=[[8, 8], [8, 8]], output_shapes=[[8, 8]])
    costs = HostCosts(device="cuda", dispatch_s={"mul": 5e-6}, profiler_per_top_level_s=4e-6,
                      profiler_references={f"r{i}": [1e-5, 2e-5, 1, 0, 1, 0.0] for i in range(5)}, profiler_model="m")
    p = predict(Report(ceilings=GPU, ops=[op], step_time=Timing.from_samples([100 * US], "timed")),
                table=EfficiencyTable(), host_costs=costs)
    assert p.host_time_s == pytest.approx(10006 * US) and p.bound == "host"
    assert any(n.startswith("calibrated host model not used: replaying the unchanged step at the 0.1 ms measured "
                            "without the profiler would take the profiler's fitted cost per op times 2.48e+03, over "
                            "100") for n in p.notes)


class _Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = torch.nn.Linear(64, 256), torch.nn.Linear(256, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


def test_a_real_cpu_report_predicts_its_measured_step_with_a_believable_split(cpu_ceilings, tmp_path, capsys,
                                                                             monkeypatch, one_thread):
    from roofline.analyze.live import analyze_model
    from roofline.cli import main

    torch.manual_seed(0)
    report = analyze_model(_Tiny(), (torch.randn(32, 64),), device="cpu", ceilings=cpu_ceilings, iters=3, warmup=1)
    report.save(tmp_path / "report.json")
    monkeypatch.setattr("roofline.analyze.whatif.host_costs_for", lambda ceilings: CPU_COSTS)
    assert main(["predict", str(tmp_path / "report.json"), "--json", str(tmp_path / "p.json")]) == 0
    text = capsys.readouterr().out
    p = json.loads((tmp_path / "p.json").read_text())
    measured = report.step_time.median_s
    (note,) = [n for n in p["notes"] if "calibrat" in n]
    factor = float(note.split(" times ")[1].split(",")[0]) if note.startswith("calibrated on a CPU") else 1.0
    assert CALIBRATION_RANGE[0] <= factor <= CALIBRATION_RANGE[1]
    if note.startswith("calibrated on a CPU"):
        # a factor within the tolerance of 1 is taken as 1 (the step replays as profiled, within that tolerance)
        snapped = CALIBRATION_TOLERANCE / (1 - CALIBRATION_TOLERANCE)
        assert p["step_time_s"] == pytest.approx(measured, rel=snapped if factor == 1.0 else 1e-6)
    # every op of the step had Python before it: the split keeps some, never "host 0 ns"
    assert p["bound"] == "serial" and p["host_time_s"] > 0 and p["device_time_s"] > p["host_time_s"]
    assert p["step_time_s"] == pytest.approx(p["host_time_s"] + p["device_time_s"])
    assert "one thread, no device stream: ops" in text and "host 0 ns" not in text

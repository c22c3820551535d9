"""The host's speed at a moment (device/host.py ``host_probe_us``), recorded with a report's step time by
``analyze_model``, and ``predict``'s ``host_speed`` factor on the host stream (issue 21: on the lent H200 the host's
CPU speed moved ~1.8x for tens of seconds, and host-bound steps with it)."""

from __future__ import annotations

import math

import pytest
import torch

from roofline.analyze.efficiency import EfficiencyTable
from roofline.analyze.predict import host_speed_factor, predict
from roofline.device.host import host_probe_us
from roofline.errors import RooflineError
from roofline.report import Ceilings, HostCosts, OpRecord, Report, Timing

GPU = Ceilings(device="cuda", device_name="GPU X", memory_bandwidth_bytes_per_s=1e12,
               peak_flops_per_s={"float32": 1e13}, launch_overhead_s=5e-6)
US = 1e-6
COSTS = HostCosts(device="cuda", dispatch_s={"mul": 20e-6, "add": 20e-6})


def _op(device_us: float) -> OpRecord:
    return OpRecord(name="aten::mul", dtype="float32", flops=64.0, bytes=768.0, time_s=device_us * US,
                    input_shapes=[[8, 8], [8, 8]], output_shapes=[[8, 8]])


def _predict(ops, **kw):
    return predict(Report(ceilings=GPU, ops=ops), table=EfficiencyTable(), host_costs=COSTS,
                   host_model="dispatch", **kw)


def test_the_probe_is_a_positive_time_per_iteration():
    us = host_probe_us(iterations=50, repeats=2)
    assert math.isfinite(us) and 0 < us < 10_000


def test_host_speed_scales_the_host_stream_only_and_can_turn_the_bound():
    ops = [_op(30), _op(30), _op(30)]                # 20 us of host per op against 30 us of device: device-bound
    base = _predict(ops)
    assert base.bound == "device" and base.host_time_s == pytest.approx(60 * US)
    slow = _predict(ops, host_speed=2.0)              # a host twice as slow: 40 us per op, host-bound
    assert slow.host_time_s == pytest.approx(120 * US) and slow.device_time_s == pytest.approx(base.device_time_s)
    assert slow.bound == "host" and slow.step_time_s == pytest.approx(120 * US + 30 * US)
    assert any("host time per op times 2" in n for n in slow.notes)
    assert not any("host time per op times" in n for n in base.notes)
    assert slow.low_s <= slow.step_time_s <= slow.high_s


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan")])
def test_a_host_speed_that_is_not_a_positive_number_is_refused(bad):
    with pytest.raises(RooflineError, match="host speed factor must be a positive number"):
        _predict([_op(30)], host_speed=bad)


def test_the_factor_is_the_probe_now_over_the_reports_and_needs_the_reports_probe():
    report = Report(ceilings=GPU, ops=[_op(30)], step_time=Timing(median_s=1e-3, host_probe_us=4.0))
    assert host_speed_factor(report, 6.0) == pytest.approx(1.5)
    with pytest.raises(RooflineError, match="positive number of microseconds"):
        host_speed_factor(report, 0.0)
    report.step_time = Timing(median_s=1e-3)
    with pytest.raises(RooflineError, match="records no host speed probe"):
        host_speed_factor(report, 6.0)


def test_analyze_model_records_the_host_speed_with_the_step_time_and_it_survives_a_round_trip(tmp_path):
    from roofline.analyze.live import analyze_model

    model = torch.nn.Linear(8, 8)
    ceilings = Ceilings(device="cpu", device_name="CPU Y", memory_bandwidth_bytes_per_s=1e10,
                        peak_flops_per_s={"float32": 1e11}, launch_overhead_s=2e-6)
    report = analyze_model(model, (torch.randn(2, 8),), device="cpu", ceilings=ceilings, warmup=1, iters=2)
    assert report.step_time.host_probe_us and report.step_time.host_probe_us > 0
    report.save(tmp_path / "r.json")
    again = Report.load(tmp_path / "r.json")
    assert again.step_time.host_probe_us == pytest.approx(report.step_time.host_probe_us)


def test_cli_host_speed_takes_now_or_a_factor_and_refuses_the_rest_in_one_line(tmp_path, capsys):
    from roofline.cli import main

    with_probe = Report(ceilings=GPU, ops=[_op(30)], step_time=Timing(median_s=1e-3, host_probe_us=4.0))
    with_probe.save(tmp_path / "a.json")
    assert main(["predict", str(tmp_path / "a.json"), "--host-speed", "2", "--host-model", "dispatch"]) == 0
    assert "host time per op times 2" in capsys.readouterr().out
    assert main(["predict", str(tmp_path / "a.json"), "--host-speed", "now"]) == 0
    capsys.readouterr()
    for bad in ("0", "-3", "fast", "inf"):
        assert main(["predict", str(tmp_path / "a.json"), "--host-speed", bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--host-speed takes 'now' or a positive number" in err[0]
    without = Report(ceilings=GPU, ops=[_op(30)], step_time=Timing(median_s=1e-3))
    without.save(tmp_path / "b.json")
    assert main(["predict", str(tmp_path / "b.json"), "--host-speed", "now"]) == 2
    assert "records no host speed probe" in capsys.readouterr().err

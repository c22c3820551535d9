"""The profiled host model (analyze/predict.py ``host_model="profiled"``) by value: each op's host time is its
profiled span and gap less the profiler's cost per top-level event, nested event and runtime call, floored at its
dispatch cost; a sync op counts its dispatch and gap; on a CPU the cost the gap cannot absorb comes off the op's
span; a poor profiler-cost fit falls back to the dispatch model. And the profiler-cost fit of analyze/host_costs.py
on synthetic timings."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from roofline.analyze.efficiency import EfficiencyTable
from roofline.analyze.host_costs import fit_profiler_costs
from roofline.analyze.predict import predict, profiler_fit_problem
from roofline.errors import RooflineError
from roofline.report import Ceilings, HostCosts, OpRecord, Report

GPU = Ceilings(device="cuda", device_name="GPU X", memory_bandwidth_bytes_per_s=1e12,
               peak_flops_per_s={"float32": 1e13}, launch_overhead_s=5e-6)
CPU = Ceilings(device="cpu", device_name="CPU Y", memory_bandwidth_bytes_per_s=1e10,
               peak_flops_per_s={"float32": 1e11}, launch_overhead_s=2e-6)
US = 1e-6


def _refs(costs, counts, plain=1e-5):
    """References with ``counts`` (events, runtime calls, top-level) per call, slowed by ``costs`` (per top-level,
    nested event, runtime call)."""
    top_c, nested_c, call_c = costs
    return {f"r{i}": [plain, plain + t * top_c + (e - t) * nested_c + c * call_c, e, c, t, 0.0]
            for i, (e, c, t) in enumerate(counts)}


COUNTS = [(1, 1, 1), (6, 0, 6), (6, 1, 1), (4, 3, 1), (7, 1, 1), (84, 11, 19), (101, 14, 15)]
COSTS = HostCosts(device="cuda", dispatch_s={"mul": 5e-6, "add": 7e-6}, profiler_per_top_level_s=4e-6,
                  profiler_per_nested_event_s=2e-6, profiler_per_runtime_call_s=3e-6,
                  profiler_references=_refs((4e-6, 2e-6, 3e-6), COUNTS), profiler_model="m")


def _op(name: str, device_us: float, cpu_us: float, gap_us: float, events: int, calls: int,
        top: int = 1) -> OpRecord:
    return OpRecord(name=name, dtype="float32", flops=64.0, bytes=768.0, time_s=device_us * US,
                    cpu_time_s=cpu_us * US, host_gap_s=gap_us * US, profiled_events=events, runtime_calls=calls,
                    profiled_top_level=top if events else 0, start_s=0.0, input_shapes=[[8, 8], [8, 8]],
                    output_shapes=[[8, 8]])


def _predict(ops, ceilings=GPU, model="profiled", costs=COSTS):
    return predict(Report(ceilings=ceilings, ops=ops), table=EfficiencyTable(), host_costs=costs, host_model=model)


def test_each_ops_host_time_is_its_span_and_gap_less_the_profilers_cost_floored_at_dispatch():
    ops = [_op("aten::mul", 10, 30, 10, 2, 4),   # 40 - (1 x 4 + 1 x 2 + 4 x 3) = 22 us
           _op("aten::add", 10, 6, 1, 1, 1),     # 7 - 7 = 0 us: floored at add's dispatch, 7 us
           _op("aten::item", 0, 500, 4, 3, 2)]   # a sync: median dispatch 6 us + its 4 us gap = 10 us
    p = _predict(ops)
    # host issues mul at 22, device runs it to 32; add issued at 29, runs 32-42; item issued at 39 waits to 42
    assert p.host_time_s == pytest.approx(39 * US) and p.device_time_s == pytest.approx(20 * US)
    assert p.step_time_s == pytest.approx(42 * US) and p.bound == "host" and p.syncs == 1
    assert [g.host_time_s for g in sorted(p.dominant, key=lambda g: g.name)] == [
        pytest.approx(7 * US), pytest.approx(10 * US), pytest.approx(22 * US)]
    # the same mul with both its events top-level: 2 us more of profiler cost
    assert _predict([_op("aten::mul", 10, 30, 10, 2, 4, top=2)]).host_time_s == pytest.approx(20 * US)
    assert "profiled step less the profiler's cost" in p.method
    dispatch = _predict(ops, model="dispatch")
    assert dispatch.host_time_s == pytest.approx((5 + 7 + 6) * US)  # no Python or module costs in COSTS


def test_on_a_cpu_the_cost_the_gap_cannot_absorb_comes_off_the_span():
    ops = [_op("aten::mul", 50, 50, 3, 4, 0),   # cost 4 + 3 x 2 = 10 us: host 0, the span 50 -> 43
           _op("aten::add", 10, 10, 20, 1, 0)]  # cost 4 us: host 16, span kept
    p = _predict(ops, ceilings=CPU)
    assert p.host_time_s == pytest.approx(16 * US) and p.device_time_s == pytest.approx(53 * US)
    assert p.step_time_s == pytest.approx(69 * US) and p.bound == "serial"


def test_without_event_counts_or_profiler_costs_the_dispatch_model_is_used_and_said():
    old = [_op("aten::mul", 10, 30, 10, 0, 0)]
    p = _predict(old)
    assert p.host_time_s == pytest.approx(5 * US)
    assert any("predates the profiler event counts" in n for n in p.notes)
    p = _predict([_op("aten::mul", 10, 30, 10, 2, 4)], costs=HostCosts(dispatch_s={"mul": 5e-6}))
    assert p.host_time_s == pytest.approx(5 * US)
    assert any("host costs predate the profiler's cost" in n for n in p.notes)
    # a report counted before the top-level events: its events cannot be split
    p = _predict([_op("aten::mul", 10, 30, 10, 2, 4, top=0)])
    assert any("predates the profiler's top-level event counts" in n for n in p.notes)
    with pytest.raises(RooflineError, match="host model"):
        _predict(old, model="guess")


def test_the_fit_recovers_known_costs_per_top_level_event_nested_event_and_runtime_call():
    fit = fit_profiler_costs(_refs((9e-6, 1.5e-6, 2e-6), COUNTS))
    assert fit.per_top_level_s == pytest.approx(9e-6) and fit.per_nested_event_s == pytest.approx(1.5e-6)
    assert fit.per_runtime_call_s == pytest.approx(2e-6) and fit.residual == pytest.approx(0, abs=1e-9)
    assert fit.used == [f"r{i}" for i in range(len(COUNTS))] and fit.left_out == {}
    assert 1 < fit.condition < 20
    # +-5% noise on each added time: the costs per event within 15%, the residual a few percent; the runtime
    # call's, a small part of every reference's added time, within 35% only
    noisy = _refs((9e-6, 1.5e-6, 2e-6), COUNTS)
    for sign, r in zip([1, -1, 1, 1, -1, -1, 1], noisy.values()):
        r[1] = r[0] + (r[1] - r[0]) * (1 + 0.05 * sign)
    fit = fit_profiler_costs(noisy)
    assert fit.per_top_level_s == pytest.approx(9e-6, rel=0.15)
    assert fit.per_nested_event_s == pytest.approx(1.5e-6, rel=0.15)
    assert fit.per_runtime_call_s == pytest.approx(2e-6, rel=0.35) and 0.01 < fit.residual < 0.06


def test_the_fit_leaves_out_references_not_slowed_or_device_bound_and_keeps_costs_non_negative():
    refs = _refs((3e-6, 1e-6, 0.0), [(e, 0, t) for e, c, t in COUNTS])  # a CPU: no runtime calls
    refs["flat"] = [1e-5, 0.9e-5, 2, 0, 1, 0.0]
    refs["busy device"] = [1e-5, 1e-5 + 50e-6, 2, 1, 1, 6e-6]  # the device 60% of its host time
    fit = fit_profiler_costs(refs)
    assert fit.left_out == {"flat": "the profiler did not slow it down",
                            "busy device": "device-bound (device 60% of its host time)"}
    assert fit.per_top_level_s == pytest.approx(3e-6) and fit.per_nested_event_s == pytest.approx(1e-6)
    assert fit.per_runtime_call_s == 0
    # the H200's four references of 2026-12-01: a conv2d slowed less than a lone add, which no non-negative costs
    # explain: the fit is poor and the residual says so
    h200 = {"tiny add": [11.98e-6, 22.13e-6, 1.0, 1.01, 1.0, 0.0], "conv2d": [30.75e-6, 35.85e-6, 4.0, 3.01, 1.0, 0.0],
            "linear": [26.99e-6, 47.27e-6, 6.0, 1.01, 1.0, 0.0],
            "transformer block": [462.62e-6, 777.62e-6, 84.0, 11.03, 19.0, 0.0]}
    fit = fit_profiler_costs(h200)
    assert fit.residual > 0.25 and min(fit.per_top_level_s, fit.per_nested_event_s) >= 0
    without_conv = fit_profiler_costs({k: v for k, v in h200.items() if k != "conv2d"})
    assert without_conv.residual < 0.1 and without_conv.per_top_level_s > 5e-6
    assert fit_profiler_costs({}) == fit_profiler_costs({"r": [1e-6, 1e-6, 1, 1, 1, 0]}).__class__()


def test_one_outlier_is_left_out_when_the_others_fit_within_the_predictors_limit():
    refs = _refs((9e-6, 1.5e-6, 2e-6), COUNTS)
    refs["r3"][1] = refs["r3"][0] + (refs["r3"][1] - refs["r3"][0]) / 4  # gained a quarter of what it should
    fit = fit_profiler_costs(refs)
    assert fit.per_top_level_s == pytest.approx(9e-6) and fit.per_nested_event_s == pytest.approx(1.5e-6)
    assert fit.per_runtime_call_s == pytest.approx(2e-6) and fit.residual == pytest.approx(0, abs=1e-9)
    assert "r3" not in fit.used and fit.left_out["r3"].startswith("an outlier: the others' fit explains 4.00 of")
    # two outliers: none is left out, the fit keeps its residual for the predictor to reject
    refs["r5"][1] = refs["r5"][0] + (refs["r5"][1] - refs["r5"][0]) * 3
    fit = fit_profiler_costs(refs)
    assert fit.residual > 0.25 and fit.left_out == {} and len(fit.used) == len(COUNTS)


def _fitted(**changes) -> HostCosts:
    refs = _refs((3e-6, 1e-6, 2e-6), COUNTS)
    base = dict(dispatch_s={"mul": 5e-6}, profiler_per_top_level_s=3e-6, profiler_per_nested_event_s=1e-6,
                profiler_per_runtime_call_s=2e-6, profiler_fit_residual=0.05, profiler_references=refs,
                profiler_model="m")
    return HostCosts(**(base | changes))


def test_a_poor_profiler_fit_falls_back_to_the_dispatch_model_with_the_reason():
    assert profiler_fit_problem(_fitted()) is None
    assert "misses the reference loops' added time by 40% RMS, over 25%" in profiler_fit_problem(
        _fitted(profiler_fit_residual=0.4))
    assert profiler_fit_problem(_fitted(profiler_per_runtime_call_s=0.0)).endswith("cost per runtime call at 0")
    # on a CPU the references have no runtime calls: a cost of 0 for them is no problem
    cpu = {k: v[:3] + [0.0] + v[4:] for k, v in _refs((3e-6, 1e-6, 0.0), COUNTS).items()}
    assert profiler_fit_problem(_fitted(profiler_references=cpu, profiler_per_runtime_call_s=0.0)) is None
    few = dict(list(cpu.items())[:4])
    assert "used 3 reference loops, fewer than 5; left out: r0: flat" in profiler_fit_problem(
        _fitted(profiler_references=few, profiler_left_out={"r0": "flat"}))
    ops = [_op("aten::mul", 10, 30, 10, 2, 4)]
    p = _predict(ops, costs=_fitted(profiler_fit_residual=0.4))
    assert p.host_time_s == pytest.approx(5 * US)  # mul's dispatch cost
    assert any(n.startswith("profiled host model not used (its profiler-cost fit misses") for n in p.notes)
    # the benchmark's unchecked variant replays it all the same: 40 - (3 + 1 + 4 x 2) = 28 us
    p = _predict(ops, model="profiled-unchecked", costs=_fitted(profiler_fit_residual=0.4))
    assert p.host_time_s == pytest.approx(28 * US) and not any("not used" in n for n in p.notes)


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


def test_the_default_host_model_is_the_profiled_one_when_its_fit_is_sound_and_the_method_says_which_ran():
    ops = [_op("aten::mul", 10, 30, 10, 2, 4)]
    p = predict(Report(ceilings=GPU, ops=ops), table=EfficiencyTable(), host_costs=_fitted())
    # 40 - (1 x 3 + 1 x 1 + 4 x 2) = 28 us: the profiled span, not mul's 5 us dispatch cost
    assert p.host_time_s == pytest.approx(28 * US)
    assert "host model profiled" in p.method and "fit is sound" in p.method
    p = predict(Report(ceilings=GPU, ops=ops), table=EfficiencyTable(), host_costs=_fitted(profiler_fit_residual=0.4))
    assert p.host_time_s == pytest.approx(5 * US)
    assert "host model dispatch, the profiled one not usable (its profiler-cost fit misses" in p.method
    p = _predict(ops, model="dispatch", costs=_fitted())
    assert p.host_time_s == pytest.approx(5 * US) and "host model dispatch: host time per op" in p.method


def test_the_profilers_cost_per_step_comes_off_the_first_ops_gap_only():
    ops = [_op("aten::mul", 10, 30, 10, 2, 4), _op("aten::mul", 10, 30, 10, 2, 4)]
    ops[0].start_s, ops[1].start_s = 2e-5, 1e-5  # the second in the list began first
    p = _predict(ops, costs=_fitted(profiler_per_step_s=6e-6))
    # each 40 - (3 + 1 + 4 x 2) = 28 us; the first to start loses 6 us more of its 10 us gap
    assert p.host_time_s == pytest.approx((28 + 22) * US)
    p = _predict(ops, costs=_fitted(profiler_per_step_s=50e-6))  # never more than the gap: floored at 0
    assert p.host_time_s == pytest.approx((28 + 18) * US)


def test_the_profilers_cost_per_step_from_a_trace_of_steps_of_two_adds():
    from roofline.analyze.host_costs import step_cost_from_trace
    from roofline.analyze.host_events import is_top_level
    from roofline.capture.trace_model import CpuOp, Step, Trace

    trace = Trace(path="t.json")
    trace.steps = [Step(0, 0.0, 100.0), Step(1, 100.0, 100.0), Step(2, 200.0, 100.0)]
    for step, (first_gap, between) in enumerate(((12.0, 2.0), (9.0, 1.0), (30.0, 2.0))):
        start = 100.0 * step + first_gap
        trace.ops += [CpuOp(len(trace.ops), "aten::add", start, 5.0, 1, 1, step=step),
                      CpuOp(len(trace.ops) + 1, "aten::add", start + 5.0 + between, 5.0, 1, 1, step=step)]
    assert step_cost_from_trace(trace, is_top_level) == pytest.approx(10e-6)  # median of 10, 8 and 28 us
    assert step_cost_from_trace(Trace(path="t.json"), is_top_level) == 0.0


def _timing(step_s):
    from roofline.report import Timing

    return Timing.from_samples([step_s], "perf_counter, no profiler")


def test_the_calibrated_model_scales_the_profilers_cost_so_the_unchanged_step_replays_at_the_measured_one():
    from roofline.analyze.project import Change

    # two host-bound ops, each 40 us profiled, 12 us of it the fitted profiler cost (3 + 1 + 4 x 2), 10 us device
    ops = [_op("aten::mul", 10, 30, 10, 2, 4), _op("aten::mul", 10, 30, 10, 2, 4)]
    report = Report(ceilings=GPU, ops=ops, step_time=_timing(60 * US))
    p = predict(report, table=EfficiencyTable(), host_costs=_fitted(), host_model="calibrated")
    # factor 1: 28 + 28 = 56 us of host, the step 66 us with the last op's device time; measured 60: each op's host
    # 40 - 12 f with 80 - 24 f + 10 = 60, f = 1.25: the profiler took 15 us of each op, not the fit's 12
    assert p.step_time_s == pytest.approx(60 * US, rel=1e-3) and p.host_time_s == pytest.approx(50 * US, rel=1e-3)
    assert any("times 1.25" in n for n in p.notes) and "host model calibrated" in p.method
    # measured slower than the profiled step less the fit: the factor shrinks, never below 0 (the profile as it was)
    report.step_time = _timing(200 * US)
    p = predict(report, table=EfficiencyTable(), host_costs=_fitted(), host_model="calibrated")
    assert p.host_time_s == pytest.approx(80 * US) and any("times 0.00" in n for n in p.notes)
    # and the note does not claim the measured step was reached: at 0 the replay is 80 + 10 us
    assert any("times 0.00, as near as it can bring the unchanged step to the 0.2 ms measured without the profiler: "
               "it replays at 0.09 ms" in n for n in p.notes), p.notes
    # a what-if keeps the factor the unchanged step gave: in bfloat16 the device time changes, the host does not
    report.step_time = _timing(60 * US)
    p = predict(report, table=EfficiencyTable(), host_costs=_fitted(), host_model="calibrated",
                change=Change(dtype=("float32", "bfloat16")))
    assert p.host_time_s == pytest.approx(50 * US, rel=1e-3)


def test_the_calibrated_note_gives_the_factor_the_measured_step_and_the_replay_at_factor_1():
    ops = [_op("aten::mul", 10, 30, 10, 2, 4), _op("aten::mul", 10, 30, 10, 2, 4)]
    report = Report(ceilings=GPU, ops=ops, step_time=_timing(60 * US))
    p = predict(report, table=EfficiencyTable(), host_costs=_fitted(), host_model="calibrated")
    assert ("calibrated host model: the profiler's fitted cost per op times 1.25, so that the unchanged step replays "
            "at the 0.06 ms measured without the profiler (factor 1: 0.066 ms)") in p.notes, p.notes
    # the same host time with no gap before the ops (all 40 us on the op's span): the factor's search range is
    # the profiled host time over the fitted cost, 40 / 12, whatever the split
    gapless = [_op("aten::mul", 10, 40, 0, 2, 4), _op("aten::mul", 10, 40, 0, 2, 4)]
    p = predict(Report(ceilings=GPU, ops=gapless, step_time=_timing(60 * US)), table=EfficiencyTable(),
                host_costs=_fitted(), host_model="calibrated")
    assert p.host_time_s == pytest.approx(50 * US, rel=1e-3) and any("times 1.25" in n for n in p.notes)


def test_a_profiler_cost_factor_of_exactly_the_ceiling_is_used_and_one_above_it_is_not():
    # 1190 + 10 us of host over the fitted 12 us per op: the factor that calls it all the profiler's is 100, the
    # ceiling; a 1 us measured step pushes the factor there (the host floored at mul's 5 us dispatch). 1190 us
    # itself gives 99.99999999999999 in floats: its next float gives exactly 100.0
    for cpu_us, used in ((math.nextafter(1190, math.inf), True), (1190.0001, False)):
        ops = [_op("aten::mul", 10, cpu_us, 10, 2, 4)]
        p = predict(Report(ceilings=GPU, ops=ops, step_time=_timing(1 * US)), table=EfficiencyTable(),
                    host_costs=_fitted(), host_model="calibrated")
        assert p.host_time_s == pytest.approx(5 * US if used else (cpu_us + 10 - 12) * US)
        assert any(n.startswith("calibrated host model not used") for n in p.notes) != used


def test_ops_with_no_fitted_profiler_cost_keep_factor_1_in_the_note():
    # only runtime calls carry a fitted cost and these ops made none: no factor moves the replay, so none is claimed
    ops = [_op("aten::mul", 10, 30, 10, 2, 0)]
    costs = _fitted(profiler_per_top_level_s=0.0, profiler_per_nested_event_s=0.0)
    p = predict(Report(ceilings=GPU, ops=ops, step_time=_timing(20 * US)), table=EfficiencyTable(),
                host_costs=costs, host_model="calibrated")
    assert p.host_time_s == pytest.approx(40 * US)
    assert any(n.startswith("calibrated host model: the profiler's fitted cost per op times 1.00,") for n in p.notes)


def test_a_measured_step_within_the_tolerance_keeps_factor_1_exactly():
    # replayed at 66 us, measured 0.4% slower: within CALIBRATION_TOLERANCE, the fit is kept as fitted (a search
    # would have moved the host by the 0.26 us)
    ops = [_op("aten::mul", 10, 30, 10, 2, 4), _op("aten::mul", 10, 30, 10, 2, 4)]
    report = Report(ceilings=GPU, ops=ops, step_time=_timing(66 * 1.004 * US))
    p = predict(report, table=EfficiencyTable(), host_costs=_fitted(), host_model="calibrated")
    assert p.host_time_s == pytest.approx(56 * US, rel=1e-9) and any("times 1.00" in n for n in p.notes)


def test_a_device_bound_step_keeps_the_factor_its_measured_step_leaves_not_the_dispatch_costs():
    ops = [_op("aten::mul", 100, 30, 10, 2, 4)]  # 28 us of host, 100 us of device: 128 us replayed
    report = Report(ceilings=GPU, ops=ops, step_time=_timing(300 * US))
    p = predict(report, table=EfficiencyTable(), host_costs=_fitted(), host_model="calibrated")
    # measured above the replay: a device-bound step's miss is the device's, factor 1 kept; mul's 5 us dispatch
    # (less) is not taken
    assert p.host_time_s == pytest.approx(28 * US) and p.step_time_s == pytest.approx(128 * US)
    assert "host model calibrated" in p.method and "only bounds the host from above" in p.method
    assert any("device-bound" in n and "factor is 1.00" in n for n in p.notes)
    # measured below the replay: the bound moves the factor, 40 - 12 f + 100 = 120 at f = 5/3, a host of 20 us
    report.step_time = _timing(120 * US)
    p = predict(report, table=EfficiencyTable(), host_costs=_fitted(), host_model="calibrated")
    assert p.host_time_s == pytest.approx(20 * US, rel=1e-3) and p.step_time_s == pytest.approx(120 * US, rel=1e-3)
    assert any("factor is 1.67" in n for n in p.notes) and "host model calibrated" in p.method


def _device_bound_fp32_mul() -> Report:
    """One 25M-element fp32 mul: 3e8 bytes, 300 us of device at 1e12 B/s, measured 300 us; host 210 us profiled
    (200 us on the CPU and a 10 us gap) less 12 us fitted; its step measured at 500 us."""
    big = OpRecord(name="aten::mul", dtype="float32", flops=25e6, bytes=3e8, time_s=300 * US, cpu_time_s=200 * US,
                   host_gap_s=10 * US, profiled_events=2, runtime_calls=4, profiled_top_level=1, start_s=0.0,
                   input_shapes=[[5000, 5000], [5000, 5000]], input_dtypes=["float32"] * 2,
                   output_shapes=[[5000, 5000]], output_dtypes=["float32"])
    return Report(ceilings=GPU, ops=[big], step_time=_timing(500 * US))


def test_a_what_if_from_a_device_bound_step_that_turns_host_bound_keeps_the_calibrated_host():
    from roofline.analyze.project import Change

    # 198 us of host + 300 us of device = 498 us, within the tolerance of the 500 measured (factor 1)
    report = _device_bound_fp32_mul()
    half = predict(report, table=EfficiencyTable(), host_costs=_fitted(), host_model="calibrated",
                   change=Change(dtype=("float32", "bfloat16")))
    # bfloat16: 150 us of device under the 198 us of host calibrated on the source, not mul's 5 us dispatch cost
    # (the rule until 2026-12-01, which gave 155 us)
    assert half.bound == "host" and half.host_time_s == pytest.approx(198 * US, rel=1e-3)
    assert half.step_time_s == pytest.approx(348 * US, rel=1e-3) and "host model calibrated" in half.method


def test_the_calibrated_model_without_a_measured_step_is_the_profiled_one_its_fit_checked():
    ops = [_op("aten::mul", 10, 30, 10, 2, 4)]
    p = predict(Report(ceilings=GPU, ops=ops), table=EfficiencyTable(), host_costs=_fitted(), host_model="calibrated")
    assert p.host_time_s == pytest.approx(28 * US) and "host model profiled" in p.method
    p = predict(Report(ceilings=GPU, ops=ops), table=EfficiencyTable(), host_costs=_fitted(profiler_fit_residual=0.4),
                host_model="calibrated")
    assert p.host_time_s == pytest.approx(5 * US) and "host model dispatch, the profiled one not usable" in p.method


def test_a_projection_that_turns_host_bound_from_a_device_bound_step_says_its_host_level_is_uncalibrated():
    import msgspec

    from roofline.analyze.project import Change

    report = _device_bound_fp32_mul()
    costs = _fitted(dispatch_s={"mul": 50e-6}, python_per_op_s=200e-6)  # the dispatch model gives more: not used
    same = predict(report, table=EfficiencyTable(), host_costs=costs, host_model="calibrated")
    assert same.bound == "device" and same.host_time_s == pytest.approx(198 * US, rel=1e-2)
    half = predict(report, table=EfficiencyTable(), host_costs=costs, host_model="calibrated",
                   change=Change(dtype=("float32", "bfloat16")))
    # bfloat16 halves the bytes: 150 us of device under 198 us of host
    assert half.bound == "host" and half.device_time_s == pytest.approx(150 * US, rel=1e-3)
    assert any("host's level is not calibrated" in n for n in half.notes)
    assert not any("host's level is not calibrated" in n for n in same.notes)
    # a host-bound unchanged step (100 us of device) calibrates the level: no such note
    fast = Report(ceilings=GPU, ops=[msgspec.structs.replace(report.ops[0], time_s=100 * US)],
                  step_time=_timing(300 * US))
    p = predict(fast, table=EfficiencyTable(), host_costs=costs, host_model="calibrated",
                change=Change(dtype=("float32", "bfloat16")))
    assert p.bound == "host" and not any("host's level is not calibrated" in n for n in p.notes)


def test_a_repeat_interleave_by_an_int_is_no_sync_but_by_a_tensor_of_repeats_it_is():
    # GQA's k.repeat_interleave(n_rep, dim=1) knows its output size (gpu_sweep batch 2): it was timed as a sync
    by_int = _op("aten::repeat_interleave", 10, 30, 10, 2, 4)
    by_int.input_shapes, by_int.input_dtypes = [[2, 2, 32, 16]], ["float32"]
    by_tensor = _op("aten::repeat_interleave", 10, 30, 10, 2, 4)
    by_tensor.input_shapes, by_tensor.input_dtypes = [[2, 3], [2]], ["float32", "int64"]
    assert _predict([by_int]).syncs == 0 and _predict([by_tensor]).syncs == 1

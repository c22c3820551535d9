"""The execution time estimator: a step's time from its ops, as a host stream and a device stream.

Device side, per op: its measured time when nothing changes; projected to another batch, sequence or dtype, its
measured time grown by the added roofline time at the efficiency table's figure for its new size and dtype (a
latency-bound op's fixed cost does not grow), never slower than at its measured efficiency (``_scaled``); on another
device, or with no measured time (a counted, untimed step), its roofline time on the target over the table's
efficiency (analyze/efficiency.py). Host side, per op: this machine's dispatch cost for its kind, the Python a model
spends per op, one module call per module entered, or autograd's cost per backward op (analyze/host_costs.py); or,
with ``host_model="profiled"``, the op's own host span and the Python gap before it in the profiled step less what
the profiler added to them (its cost per top-level event, nested aten event and CUDA runtime call it recorded for
the op: analyze/host_events.py), when the fit of those costs is sound (``profiler_fit_problem``); or, with
``host_model="calibrated"``, the same with the profiler's cost scaled by the one factor that makes the unchanged step
replay at the report's own step time measured without the profiler (``_calibrated_scale``: the host's speed moves
between the reference loops, the profile and the truth; the report's unprofiled step is its nearest measurement).
Pipeline: on a GPU the host issues op i when its host time is spent, the device runs it when both it and the op are
ready, and a sync (``.item()``, ``nonzero``...) makes the host wait for the device; the step ends when both streams
have. On a CPU one thread does both: the step is their sum (the op's measured time already holds its aten-level
dispatch, so only the Python and module calls are added), and the calibrated model scales the whole replayed step,
the ops' own time with the Python between them, by one factor (``_cpu_speed_scale``): there the ops run on the host,
and the profiler's fitted cost per event (under a microsecond) cannot explain a step that moved by milliseconds.
The range comes from the table's quartiles and the host costs' spread. No torch.
"""

from __future__ import annotations

import math

import statistics
from collections import defaultdict
from dataclasses import dataclass, replace

import msgspec

from roofline.analyze.efficiency import (MAX_EFFICIENCY, EfficiencyTable, bucket, device_class,
                                         dram_roofline_time_s, keeps_time, lookup)
from roofline.analyze.project import Change, project_op
from roofline.analyze.roofline import classify, place_op
from roofline.count.families import op_kind, repeats_read_by_host
from roofline.errors import RooflineError
from roofline.report import (BoundChange, Ceilings, HostCosts, OpRecord, PredictedModule, PredictedOps, Prediction,
                             Report)

SYNC_KINDS = frozenset({"item", "_local_scalar_dense", "nonzero", "is_nonzero", "equal", "unique", "_unique2",
                        "masked_select", "repeat_interleave"})
# An op the table has no entry for runs at this fraction of its roof (the median efficiency of the committed
# reports' mid-sized ops lies near it); said in the prediction's notes when used.
DEFAULT_EFFICIENCY = 0.5
MAX_HOST_SPREAD = 0.5
# The profiled host model is used only when the profiler-cost fit explains its references within this RMS relative
# error, each cost the references have counts for came out above 0, and at least this many references were used
# (three costs, with margin).
MAX_PROFILER_RESIDUAL = 0.25
MIN_PROFILER_REFERENCES = 5
HOST_MODELS = ("dispatch", "profiled", "calibrated")
# The calibrated host model scales the profiler's cost per op (its counts times the fitted costs) by one factor per
# report, the one whose replay of the unchanged step gives the step time the report measured without the profiler
# (``_calibrated_scale``): a replay within this fraction of it keeps factor 1; else bisection in this many steps.
CALIBRATION_TOLERANCE = 0.005
CALIBRATION_STEPS = 40
# The profiled host model whatever its profiler-cost fit (``profiler_fit_problem`` not applied): not offered to
# users; benchmarks/ete.py shows it beside the others, so that a run judges the fallback rule too.
UNCHECKED_HOST_MODEL = "profiled-unchecked"
# The default: the calibrated host model (the profiled one when the report has no step measured without the
# profiler, which itself falls back to the dispatch model, saying why, when its fit is not sound or the report lacks
# the counts). Where the unchanged step is device-bound its measured time only bounds the host from above: the factor
# stays where that bound leaves it (1, or more where the replay at 1 is above the measured step). The dispatch model's
# host, taken there when lower until 2026-12-01, under-predicted what-ifs that turn host-bound (MLP fp32 -> bf16 at
# 0.53-0.76 of measured in all five saved H200 runs; 0.59-1.44 with the factor kept, 2 of 5 within 25%); re-predicted
# offline over those five runs, keeping the factor had 22 of 30 what-ifs within 25% against 20 and 52 of 60 workloads
# within 15% against 50, no run worse on either (benchmarks/results/h200/ete/offline_device_bound_host/).
# On the H200 the host's speed moved by up to 2x within seconds (2026-12-01): the profiled model's reference-loop
# fit, measured minutes before, over-predicted the host-bound workloads by 14-51% in one run and under-predicted them
# by 14-29% in another; re-predicted offline, the calibrated model had 10 of 12 workloads within 15% and 5 of 6
# what-ifs within 25% of that run against the profiled model's 6 and 3 (benchmarks/results/h200/ete/rounds/
# DIAGNOSIS.md; offline, on the run studied: a new run validates).
DEFAULT_HOST_MODEL = "calibrated"
# A calibration factor beyond these is not a calibration but a sign that the difference it was set to close is not
# what it scales (a factor of 1885 on the profiler's cost of a 16 ms CPU layer norm ate most of the op's own time):
# it is not used, and the prediction says why. On a GPU the profiler-cost factor's floor is 0, its bisection's end (the
# profiled host timeline as it was): only non-finite factors and those above the ceiling are refused there.
CALIBRATION_RANGE = (0.01, 100.0)
TOP = 8


@dataclass
class _Timed:
    op: OpRecord
    projected: OpRecord
    device_s: float
    device_lo_s: float
    device_hi_s: float
    host_s: float
    sync: bool


def predict(report: Report, *, table: EfficiencyTable, host_costs: HostCosts | None,
            ceilings: Ceilings | None = None, change: Change | None = None,
            host_model: str = DEFAULT_HOST_MODEL, host_speed: float | None = None) -> Prediction:
    """The predicted step time of ``report``'s ops under ``change`` on ``ceilings``' device (default: as measured).
    ``host_model``: ``dispatch`` (host time per op built bottom-up from this machine's costs), ``profiled`` (the
    profiled step's own host timeline less the profiler's cost; ``dispatch`` where the report cannot give it) or
    ``calibrated`` (the profiled one, the profiler's fitted cost scaled so that the unchanged step replays at the step
    time the report measured without the profiler; ``profiled`` when it has none). ``host_speed``: a factor on every
    op's host time, for a host running that much slower (>1) or faster than when the report was measured (the ratio
    of two ``host_probe_us`` figures: ``host_speed_factor``); the device stream is not scaled, but on a CPU, where
    the ops run on the host, their own time is."""
    if host_speed is not None and not (math.isfinite(host_speed) and host_speed > 0):
        raise RooflineError(f"host speed factor must be a positive number, got {host_speed!r}")
    if host_model not in HOST_MODELS + (UNCHECKED_HOST_MODEL,):
        raise RooflineError(f"host model must be one of {', '.join(HOST_MODELS)}, got {host_model!r}")
    change = change or Change()
    source = report.ceilings
    target = ceilings or source
    same_device = ceilings is None or (target.device_name == source.device_name
                                       and device_class(target) == device_class(source))
    notes: list[str] = []
    measured = any(op.time_s > 0 for op in report.ops)
    timed = [_time_op(op, change, source, target, same_device, measured, table, notes) for op in report.ops]
    serial = device_class(target) == "cpu"
    # The calibrated model without a step measured without the profiler is the profiled one, its fit checked.
    if host_model == "calibrated" and not (report.step_time and report.step_time.median_s > 0):
        host_model = "profiled"
    calibrated = host_model == "calibrated"
    unchanged = change.is_identity() and same_device
    fallback = (_replay_problem(timed, host_costs, notes, check_fit=host_model == "profiled", calibrated=calibrated)
                if host_model != "dispatch" else None)
    replayed = host_model != "dispatch" and fallback is None
    scale = 1.0
    speed = 1.0
    host_bounded_only = False
    if replayed and calibrated:
        identity = (timed if unchanged else
                    [_time_op(op, Change(), source, source, True, measured, table, []) for op in report.ops])
        if serial:
            speed, how = _cpu_speed_scale(identity, host_costs, report)
        else:
            scale, how, identity_host, identity_device = _calibrated_scale(identity, host_costs, serial, report)
        notes.append(how)
        if not serial and identity_host < identity_device:
            host_bounded_only = True
            notes.append(f"calibrated host model: the unchanged step is device-bound, so its measured time only "
                         f"bounds the host from above: the factor is {scale:.2f}, as far as that bound moved it, and "
                         f"the host {identity_host * 1e3:.3g} ms")
    if replayed:
        _add_profiled_host(timed, host_costs, serial, scale)
        if serial:
            notes.append("one thread: each op's own time is its measured span and the Python before it the gap since "
                         "the previous op ended in the profiled step, less the profiler's fitted cost per event it "
                         "recorded there (what the gap cannot absorb comes off the op's span)")
            for t in timed:
                t.host_s, t.device_s, t.device_lo_s, t.device_hi_s = (
                    x * speed for x in (t.host_s, t.device_s, t.device_lo_s, t.device_hi_s))
        else:
            notes.append("host time per op: its host span and the Python gap before it in the profiled step, less "
                         "the profiler's own cost (per top-level event, nested aten event and CUDA runtime call it "
                         "recorded), measured on this machine")
    else:
        _add_host(timed, host_costs, serial, notes)
    if host_speed is not None and host_speed != 1.0 and serial:
        for t in timed:
            t.host_s, t.device_s, t.device_lo_s, t.device_hi_s = (
                x * host_speed for x in (t.host_s, t.device_s, t.device_lo_s, t.device_hi_s))
        notes.append(f"each op's own time and the Python between ops times {host_speed:.3g} (on a CPU the ops run on "
                     "the host): the host's speed given for the prediction over its speed when the report was "
                     "measured (a probe of the interpreter and dispatcher, roofline.device.host.host_probe_us)")
    elif host_speed is not None and host_speed != 1.0:
        for t in timed:
            t.host_s *= host_speed
        notes.append(f"host time per op times {host_speed:.3g}: the host's speed given for the prediction over its "
                     "speed when the report was measured (a probe of the interpreter and dispatcher, "
                     "roofline.device.host.host_probe_us)")
    spread = min(host_costs.spread if host_costs else 0.0, MAX_HOST_SPREAD)
    step, host, device = _pipeline(timed, serial, "device_s", 1.0)
    low = _pipeline(timed, serial, "device_lo_s", 1.0 - spread)[0]
    high = _pipeline(timed, serial, "device_hi_s", 1.0 + spread)[0]
    bound = "serial" if serial else ("host" if host > device else "device")
    if host_bounded_only and not unchanged and bound == "host":
        notes.append("the projected step is host-bound but the unchanged one was device-bound: its measured step "
                     "time bounds the host only from above, so the host's level is not calibrated and the projection "
                     "is as uncertain as the host's speed (on the lent H200, 2026-12-01: llama-tiny fp32 -> bf16 "
                     "projected within 0.9-1.04 of the target's own report per round, yet 0.62-1.60 of its timing)")
    return Prediction(
        step_time_s=step, low_s=min(low, step), high_s=max(high, step), host_time_s=host, device_time_s=device,
        bound=bound, syncs=sum(t.sync for t in timed), ops=len(timed),
        measured_step_time_s=report.step_time.median_s if unchanged and report.step_time else None,
        scenario=_scenario(change, source, target, same_device),
        device_name=target.device_name or target.device,
        dominant=_dominant(timed, bound), modules=_modules(timed),
        bound_changes=[] if unchanged else _bound_changes(timed, target),
        method=_method(serial, host_costs, replayed, host_model, fallback, speed),
        notes=sorted(set(notes)),
    )


def host_speed_factor(report: Report, probe_us: float) -> float:
    """How much slower the host is at ``probe_us`` (a ``host_probe_us`` figure) than when ``report``'s step was timed:
    the factor ``predict``'s ``host_speed`` takes."""
    at = report.step_time.host_probe_us if report.step_time else None
    if not at or at <= 0:
        raise RooflineError("the report records no host speed probe with its step time (written before roofline "
                            "probed the host, or read from a trace): the host cannot be scaled to another moment")
    if not (math.isfinite(probe_us) and probe_us > 0):
        raise RooflineError(f"host probe must be a positive number of microseconds, got {probe_us!r}")
    return probe_us / at


def _time_op(op: OpRecord, change: Change, source: Ceilings, target: Ceilings, same_device: bool, timed: bool,
             table: EfficiencyTable, notes: list[str]) -> _Timed:
    new = op if change.is_identity() else project_op(op, change)
    calls = max(op.count, 1)
    rt_old = dram_roofline_time_s(op, source) if op.modeled else 0.0
    rt_new = dram_roofline_time_s(new, target) if new.modeled else 0.0
    entry = lookup(table, target, new, rt_new / calls)
    kind = op_kind(op.name)
    sync = kind in SYNC_KINDS and (kind != "repeat_interleave" or repeats_read_by_host(op.input_shapes, op.input_dtypes))
    new_small = keeps_time(bucket(rt_new / calls))
    measured = timed and same_device
    if measured and (new is op or rt_old <= 0 or (new_small and keeps_time(bucket(rt_old / calls)))):
        return _Timed(op, new, op.time_s, op.time_s, op.time_s, 0.0, sync)
    if new_small and (entry is not None or rt_new <= 0):
        t = [entry.q25 * calls, entry.q50 * calls, entry.q75 * calls] if entry else [0.0, 0.0, 0.0]
        if measured and op.time_s > 0:
            t = [min(x, op.time_s) for x in t]
        return _Timed(op, new, t[1], t[0], t[2], 0.0, sync)
    if entry is None:
        if timed and op.time_s > 0 and rt_old > 0:
            notes.append("ops the table has no entry for on the target keep their measured efficiency")
            t_mid = op.time_s * rt_new / rt_old
            return _Timed(op, new, t_mid, t_mid, t_mid, 0.0, sync)
        notes.append(f"ops the table has no entry for run at {DEFAULT_EFFICIENCY:.0%} of their roof")
        t_mid = rt_new / DEFAULT_EFFICIENCY
        return _Timed(op, new, t_mid, t_mid / 2, t_mid * 2, 0.0, sync)
    if not (timed and same_device and op.time_s > 0):
        return _Timed(op, new, rt_new / entry.q50, rt_new / max(entry.q75, 1e-9), rt_new / max(entry.q25, 1e-9), 0.0,
                      sync)
    mid, lo, hi = (_scaled(op.time_s, rt_old, rt_new, e) for e in (entry.q50, entry.q75, entry.q25))
    return _Timed(op, new, mid, min(lo, mid), max(hi, mid), 0.0, sync)


def _scaled(t_old: float, rt_old: float, rt_new: float, efficiency: float) -> float:
    """A measured op's time at a new roofline time. Growing, the added roofline time runs at the table's
    efficiency for the new size (a latency-bound op's fixed cost does not grow with it) but never slower than
    keeping the op's measured efficiency; shrinking, it keeps its measured efficiency unless the table expects it
    slower, never slower than it measured."""
    efficiency = max(min(efficiency, MAX_EFFICIENCY), 1e-9)
    proportional = t_old * rt_new / rt_old
    if rt_new >= rt_old:
        return min(proportional, t_old + (rt_new - rt_old) / efficiency)
    return max(proportional, min(t_old, rt_new / efficiency))


def _add_host(timed: list[_Timed], costs: HostCosts | None, serial: bool, notes: list[str]) -> None:
    if costs is None:
        notes.append("no host costs for this device on this machine: host time not modelled")
        return
    median_dispatch = statistics.median(costs.dispatch_s.values()) if costs.dispatch_s else 0.0
    previous: tuple[str, ...] = ()
    for t in timed:
        calls = max(t.op.count, 1)
        path = tuple(t.op.module.split(".")) if t.op.module else ()
        shared = 0
        while shared < min(len(path), len(previous)) and path[shared] == previous[shared]:
            shared += 1
        backward = t.op.phase == "backward"
        entered = 0 if backward else len(path) - shared
        previous = path
        if backward:
            per_call = costs.backward_per_op_s - (median_dispatch if serial else 0.0)
        else:
            dispatch = 0.0 if serial else costs.dispatch_s.get(op_kind(t.op.name), median_dispatch)
            per_call = dispatch + costs.python_per_op_s
        t.host_s = max(per_call, 0.0) * calls + entered * costs.module_call_s


def _replay_problem(timed: list[_Timed], costs: HostCosts | None, notes: list[str],
                    check_fit: bool = True, calibrated: bool = False) -> str | None:
    """None for a one-step report with each op's profiler event counts and host costs with a sound fit of the
    profiler's own cost: the profiled host stream can be replayed; otherwise why not (the dispatch model then runs,
    said in a note)."""
    if costs is None:
        return "no host costs for this device on this machine"
    why = None
    if not costs.profiler_references or not costs.profiler_model:
        why = "the host costs predate the profiler's cost per top-level event"
    elif not timed or not all(t.op.count == 1 for t in timed):
        why = "the report's ops are totals over several steps"
    elif not any(t.op.profiled_events for t in timed):
        why = "the report predates the profiler event counts per op"
    elif not any(t.op.profiled_top_level for t in timed):
        why = "the report predates the profiler's top-level event counts per op"
    elif check_fit:
        why = profiler_fit_problem(costs)
    elif calibrated and not (costs.profiler_per_top_level_s > 0 or costs.profiler_per_nested_event_s > 0
                             or costs.profiler_per_runtime_call_s > 0):
        why = "no profiler cost per event or runtime call to scale"
    if why:
        notes.append(f"profiled host model not used ({why}): host time built from dispatch costs")
    return why


def profiler_fit_problem(costs: HostCosts) -> str | None:
    """Why the profiler-cost fit of ``costs`` cannot be trusted to take the profiler out of a report's host
    timeline, or None: too few references, a large residual, or a cost at its bound of 0 although the references
    it was fitted on have counts of it (the fit then explains them with the other costs, none of them right)."""
    used = {name: r for name, r in costs.profiler_references.items() if name not in costs.profiler_left_out}
    if len(used) < MIN_PROFILER_REFERENCES:
        return (f"its profiler-cost fit used {len(used)} reference loops, fewer than {MIN_PROFILER_REFERENCES}"
                + (f"; left out: {'; '.join(f'{k}: {v}' for k, v in costs.profiler_left_out.items())}"
                   if costs.profiler_left_out else ""))
    if costs.profiler_fit_residual > MAX_PROFILER_RESIDUAL:
        return (f"its profiler-cost fit misses the reference loops' added time by {costs.profiler_fit_residual:.0%} "
                f"RMS, over {MAX_PROFILER_RESIDUAL:.0%}")
    counted = {"top-level event": sum(r[4] for r in used.values()),
               "nested event": sum(r[2] - r[4] for r in used.values()),
               "runtime call": sum(r[3] for r in used.values())}
    fitted = {"top-level event": costs.profiler_per_top_level_s, "nested event": costs.profiler_per_nested_event_s,
              "runtime call": costs.profiler_per_runtime_call_s}
    at_bound = [what for what, n in counted.items() if n > 0 and fitted[what] <= 0]
    if at_bound:
        return f"its profiler-cost fit put the cost per {' and per '.join(at_bound)} at 0"
    return None


def _profiler_cost(op: OpRecord, costs: HostCosts) -> float:
    """What the profiler added to ``op``: its fitted cost per top-level event, nested event and runtime call."""
    nested = max(op.profiled_events - op.profiled_top_level, 0)
    return (op.profiled_top_level * costs.profiler_per_top_level_s + nested * costs.profiler_per_nested_event_s
            + op.runtime_calls * costs.profiler_per_runtime_call_s)


def _calibrated_scale(identity: list[_Timed], costs: HostCosts, serial: bool,
                      report: Report) -> tuple[float, str, float, float]:
    """The factor on the profiler's cost per op whose replay of the unchanged step (``identity``: each op's measured
    device time) gives the step time ``report`` measured without the profiler, a note saying how it was set, and the
    replay's host and device busy time at that factor (a device-bound replay: the measured step bounds the host only
    from above, and ``predict`` says so; the factor is still used).

    Why: the reference loops' fit gives the profiler's cost per event in the minute host_costs.py ran, and on the
    H200 (2026-12-01) the host's own speed moved by up to 2x within seconds, the profiler's added time per event on
    the same model from 0.5 to 5 us between rounds (benchmarks/results/h200/ete/rounds/DIAGNOSIS.md). The step time
    ``analyze_model`` measures without the profiler, just before profiling, is the same host in the same minute: it
    sets the level, the fitted costs only how it splits among the ops. Only where the measured step can tell: the
    factor grows (more of the profiled host time was the profiler) until the replay is no longer above the measured
    step, or shrinks, down to 0 (the profiled host time as it was), while a replay below it is host-bound (a
    device-bound step below its measured time is the device side's miss, not the host's). No measured step: 1."""
    measured = report.step_time.median_s if report.step_time else 0.0
    if measured <= 0:
        return 1.0, "calibrated host model: no step time measured without the profiler: factor 1", 0.0, 0.0

    def replay(scale: float) -> tuple[float, float, float]:
        trial = _without_host(identity)
        _add_profiled_host(trial, costs, serial, scale)
        return _pipeline(trial, serial, "device_s", 1.0)

    step, host, device = first = replay(1.0)
    if abs(step - measured) <= CALIBRATION_TOLERANCE * measured:
        scale = 1.0
    elif step > measured:
        ratios = [(t.op.cpu_time_s + t.op.host_gap_s) / c for t in identity if (c := _profiler_cost(t.op, costs)) > 0]
        top = max(ratios, default=1.0)
        scale = _bisect(lambda x: replay(x)[0] - measured, 1.0, max(top, 1.0))
    elif serial or host > device:
        scale = _bisect(lambda x: replay(x)[0] - measured, 0.0, 1.0)
    else:
        scale = 1.0
    if not (math.isfinite(scale) and scale <= CALIBRATION_RANGE[1]):
        return 1.0, (f"calibrated host model not used: replaying the unchanged step at the {measured * 1e3:.3g} ms "
                     f"measured without the profiler would take the profiler's fitted cost per op times {scale:.3g}, "
                     f"over {CALIBRATION_RANGE[1]:g}: the difference from the {step * 1e3:.3g} ms replayed is not the "
                     f"profiler's cost; its fitted cost is taken as fitted (factor 1)"), host, device
    reached, host, device = first if scale == 1.0 else replay(scale)
    if abs(reached - measured) <= CALIBRATION_TOLERANCE * measured:
        aim = f"so that the unchanged step replays at the {measured * 1e3:.3g} ms measured without the profiler"
    else:  # the factor's bound reached first (0: the profiled host time as it was is still above the measured step)
        aim = (f"as near as it can bring the unchanged step to the {measured * 1e3:.3g} ms measured without the "
               f"profiler: it replays at {reached * 1e3:.3g} ms")
    return scale, (f"calibrated host model: the profiler's fitted cost per op times {scale:.2f}, {aim} (factor 1: "
                   f"{step * 1e3:.3g} ms)"), host, device


def _cpu_speed_scale(identity: list[_Timed], costs: HostCosts, report: Report) -> tuple[float, str]:
    """On a CPU, the one factor on the whole replayed step (each op's own time and the Python before it) that
    makes the unchanged step (``identity``) replay at the step time ``report`` measured without the profiler, and a
    note saying so; 1, said why, when that factor is outside ``CALIBRATION_RANGE``.

    Why not the profiler's cost, as on a GPU: on a CPU the ops run on the host thread, so whatever moved the host
    between the profiled steps and the timing (other load, the clock) moved the ops' own time with it, while the
    profiler's fitted cost per event is under a microsecond there: scaling that cost alone to close a difference of
    milliseconds took factors of 0 or thousands, most of an op's own time called the profiler's (a 16 ms layer norm
    profiled against 7.9 ms timed on a 2-core machine shared with other jobs, 2026-12-02)."""
    measured = report.step_time.median_s if report.step_time else 0.0
    trial = _without_host(identity)
    _add_profiled_host(trial, costs, True, 1.0)
    replayed = _pipeline(trial, True, "device_s", 1.0)[0]
    lo, hi = CALIBRATION_RANGE
    factor = measured / replayed if replayed > 0 else math.inf
    if measured <= 0 or not (math.isfinite(factor) and lo <= factor <= hi):
        return 1.0, (f"calibration not used: the unchanged step replays at {_duration(replayed)} from the profile "
                     f"and measured {_duration(measured)} without the profiler, a factor outside {lo:g}-{hi:g}: the "
                     f"profiled step is taken as it was")
    if abs(factor - 1.0) <= CALIBRATION_TOLERANCE:
        factor = 1.0
    return factor, (f"calibrated on a CPU: each op's own time and the Python between ops times {factor:.2f}, so that "
                    f"the unchanged step replays at the {_duration(measured)} measured without the profiler (as "
                    f"profiled, less the profiler's fitted cost: {_duration(replayed)}); on a CPU the ops run on the "
                    f"host, so the host's speed between the profile and the timing moves them too")


def _duration(seconds: float) -> str:
    return f"{seconds:.3g} s" if seconds >= 1 else f"{seconds * 1e3:.3g} ms"


def _without_host(timed: list[_Timed]) -> list[_Timed]:
    """Copies of ``timed`` with no host time yet, for a trial replay that must leave the originals as they are."""
    return [replace(t, host_s=0.0) for t in timed]


def _bisect(f, lo: float, hi: float) -> float:
    """The x in [lo, hi] where the non-increasing ``f`` crosses 0 (an end if it does not)."""
    if f(hi) >= 0:
        return hi
    if f(lo) <= 0:
        return lo
    for _ in range(CALIBRATION_STEPS):
        mid = (lo + hi) / 2
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _add_profiled_host(timed: list[_Timed], costs: HostCosts, serial: bool, scale: float = 1.0) -> None:
    """Host time per op from the profiled steps: its host span plus the gap since the previous op ended (the
    model's Python between ops, module calls included; medians over the steps), less the profiler's cost for what
    it recorded of the op (its top-level and nested aten events and runtime calls), never below the op kind's
    dispatch cost; the step's first op's gap also less the profiler's cost per step (what it adds between the step's
    annotation and its first op). A sync op's span is mostly waiting for the device: it counts its dispatch cost and
    its gap. On a CPU (one thread) the op's span is already its device time: the host stream keeps the gap less the
    profiler's cost, and what the gap cannot absorb comes off the op's device time. Ops keep their order; only the
    host stream (on a CPU, also the span) changes."""
    median_dispatch = statistics.median(costs.dispatch_s.values()) if costs.dispatch_s else 0.0
    first = min(range(len(timed)), key=lambda i: (timed[i].op.start_s is None, timed[i].op.start_s or 0.0, i),
                default=None)
    for i, t in enumerate(timed):
        op = t.op
        gap = max(op.host_gap_s - scale * costs.profiler_per_step_s, 0.0) if i == first else op.host_gap_s
        cost = scale * _profiler_cost(op, costs)
        if serial:
            t.host_s = max(gap - cost, 0.0)
            excess = max(cost - gap, 0.0)
            t.device_s, t.device_lo_s, t.device_hi_s = (max(x - excess, 0.0)
                                                        for x in (t.device_s, t.device_lo_s, t.device_hi_s))
            continue
        dispatch = costs.dispatch_s.get(op_kind(op.name), median_dispatch)
        t.host_s = dispatch + gap if t.sync else max(op.cpu_time_s + gap - cost, dispatch)


def _pipeline(timed: list[_Timed], serial: bool, device_field: str, host_scale: float) -> tuple[float, float, float]:
    """(step, host busy, device busy) in seconds."""
    host_busy = sum(t.host_s for t in timed) * host_scale
    device_busy = sum(getattr(t, device_field) for t in timed)
    if serial:
        return host_busy + device_busy, host_busy, device_busy
    h = d = 0.0
    for t in timed:
        h += t.host_s * host_scale
        dur = getattr(t, device_field)
        if dur > 0:
            d = max(h, d) + dur
        if t.sync:
            h = max(h, d)
    return max(h, d), host_busy, device_busy


def _dominant(timed: list[_Timed], bound: str) -> list[PredictedOps]:
    groups: dict[str, PredictedOps] = {}
    for t in timed:
        g = groups.setdefault(t.op.name, PredictedOps(t.op.name, measured_time_s=0.0))
        g.calls += max(t.op.count, 1)
        g.device_time_s += t.device_s
        g.host_time_s += t.host_s
        g.measured_time_s = (g.measured_time_s or 0.0) + t.op.time_s
        g.bound = t.op.bound
    if bound == "host":
        key = lambda g: g.host_time_s  # noqa: E731
    elif bound == "device":
        key = lambda g: g.device_time_s  # noqa: E731
    else:
        key = lambda g: g.host_time_s + g.device_time_s  # noqa: E731
    return sorted(groups.values(), key=key, reverse=True)[:TOP]


def _modules(timed: list[_Timed]) -> list[PredictedModule]:
    groups: dict[str, PredictedModule] = {}
    for t in timed:
        name = t.op.module.split(".", 1)[0] if t.op.module else "(top level)"
        g = groups.setdefault(name, PredictedModule(name, measured_time_s=0.0))
        g.device_time_s += t.device_s
        g.host_time_s += t.host_s
        g.measured_time_s = (g.measured_time_s or 0.0) + t.op.time_s
    return sorted(groups.values(), key=lambda g: -(g.device_time_s + g.host_time_s))


def _bound_changes(timed: list[_Timed], target: Ceilings) -> list[BoundChange]:
    groups: dict[tuple[str, str, str, str], int] = defaultdict(int)
    for t in timed:
        if not t.op.modeled or t.device_s <= 0:
            continue
        placed = place_op(msgspec.structs.replace(t.projected, time_s=t.device_s), target)
        after = classify(placed, target)
        if after != t.op.bound and t.op.bound not in ("unknown", "unmodeled"):
            groups[(t.op.name, t.op.module, t.op.bound, after)] += max(t.op.count, 1)
    return [BoundChange(name, module, calls, before, after)
            for (name, module, before, after), calls in sorted(groups.items(), key=lambda kv: -kv[1])]


def _scenario(change: Change, source: Ceilings, target: Ceilings, same_device: bool) -> dict[str, str]:
    out = {}
    for label, pair in (("batch", change.batch), ("seq", change.seq), ("dtype", change.dtype)):
        if pair is not None and pair[0] != pair[1]:
            out[label] = f"{pair[0]} -> {pair[1]}"
    if not same_device:
        out["device"] = f"{source.device_name or source.device} -> {target.device_name or target.device}"
    return out


def _method(serial: bool, costs: HostCosts | None, replayed: bool = False, host_model: str = DEFAULT_HOST_MODEL,
            fallback: str | None = None, speed: float = 1.0) -> str:
    """How the figure was made; names the host model that ran, and, when the profiled one was asked for and the
    dispatch one ran, why."""
    pipeline = ("one thread (the ops run on the host, no device stream): step = the ops' own time plus the Python "
                "between them" if serial else
                "two streams: the device runs an op once the host has issued it and the device is free; syncs "
                "make the host wait; step = when both have finished")
    host = f"host costs measured on {costs.device_name or costs.device}" if costs else "no host costs"
    if serial and replayed:
        how = (f"the profiled step scaled by {speed:.2f} so that the unchanged step replays at the step time measured "
               "without the profiler" if host_model == "calibrated" and speed != 1.0 else "the profiled step as it was")
        return (f"per-op time from measured time or roofline time / learned efficiency; host model {host_model}: the "
                f"Python between ops from the profiled step less the profiler's fitted cost ({host}); {how}; "
                f"{pipeline}")
    if serial:
        pipeline += " (module calls, the Python per op, autograd's cost per backward op)"
    if replayed and host_model == "calibrated":
        host = ("host model calibrated: host time from the profiled step less the profiler's cost, its fitted cost "
                "scaled so that the unchanged step replays at the step time measured without the profiler (where the "
                "unchanged step is device-bound that time only bounds the host from above: the fitted cost is scaled "
                f"only as far as that bound requires, factor 1 if it does not) ({host})")
    elif replayed:
        checked = "whose fit is sound" if host_model == "profiled" else "its fit not checked"
        host = f"host model profiled: host time from the profiled step less the profiler's cost, {checked} ({host})"
    elif host_model != "dispatch" and fallback:
        host = f"host model dispatch, the {host_model} one not usable ({fallback}); {host}"
    else:
        host = f"host model dispatch: host time per op from dispatch costs; {host}"
    return f"per-op device time from measured time or roofline time / learned efficiency; {host}; {pipeline}"

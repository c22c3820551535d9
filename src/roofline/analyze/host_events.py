"""What the profiler recorded on the host for each op of a report: the counts its own host cost scales with.

torch.profiler's cost on the host is not one figure per op: it records every aten call (``cpu_op`` events, the
op's own and those nested in it: ``aten::linear`` holds ``t``, ``transpose``, ``addmm``...) and, under CUPTI,
every CUDA runtime or driver call (cuDNN makes several per convolution). For each report op, from the trace it was
built from:

- ``profiled_events``: the op's event and every event nested in it;
- ``profiled_top_level``: how many of those events are top-level (``is_top_level``: no enclosing event but the
  step's annotation: the calls the model itself made, or autograd's engine frames in a backward), which the
  profiler charges more than the aten calls nested in them (analyze/host_costs.py fits both);
- ``runtime_calls``: runtime/driver calls made inside its host span (the enclosing op found by ``load_trace``),
  plus those outside every report op's span that carry the External id of one of its events;
- events and calls of the step outside every op's subtree (autograd's engine frames around a backward op, an
  annotation, a framework marker) count for the op that starts next: they happened in its gap;
- ``host_gap_s`` (``host_gaps_us``): the host time between the previous op's end (or its step's start) and its
  own start: the model's Python, module calls included. Per step, so that a report's median span and median gap
  of an op go together (the step's last span with a median gap would count a slow call twice).

The predictor's profiled host model subtracts each count times its cost measured on this machine
(analyze/host_costs.py) from the op's profiled host time.
"""

from __future__ import annotations

import bisect

from roofline.analyze.join import subtree
from roofline.capture.trace_model import Trace
from roofline.report import OpRecord


def fill_host_counts(trace: Trace, event_to_report: dict[int, int], ops: list[OpRecord],
                     children: dict[int, list[int]]) -> None:
    owner: dict[int, int] = {}
    by_external_id: dict[int, int] = {}
    for event, index in event_to_report.items():
        events = subtree(event, children)
        ops[index].profiled_events = len(events)
        ops[index].profiled_top_level = sum(is_top_level(trace, j) for j in events)
        ops[index].runtime_calls = 0
        for j in events:
            owner[j] = index
            external_id = trace.ops[j].external_id
            if external_id is not None:
                by_external_id.setdefault(external_id, index)
    nxt = _NextOp(trace, event_to_report)
    for j, ev in enumerate(trace.ops):
        if j not in owner and not ev.name.startswith("ProfilerStep#"):
            index = nxt(ev.step, ev.ts_us)
            if index is not None:
                ops[index].profiled_events += 1
                ops[index].profiled_top_level += is_top_level(trace, j)
    for launch in trace.launches:
        index = owner.get(launch.op)
        if index is None and launch.external_id is not None:
            index = by_external_id.get(launch.external_id)
        if index is None:
            index = nxt(trace.step_of(launch.ts_us) if trace.steps else None, launch.ts_us)
        if index is not None:
            ops[index].runtime_calls += 1


def is_top_level(trace: Trace, event: int) -> bool:
    """An event with no enclosing event but its step's ``ProfilerStep#`` annotation (the step annotation itself is
    not an event of any op)."""
    ev = trace.ops[event]
    if ev.name.startswith("ProfilerStep#"):
        return False
    return ev.parent < 0 or trace.ops[ev.parent].name.startswith("ProfilerStep#")


def trace_counts(trace: Trace) -> tuple[int, int, int]:
    """(events, top-level events, runtime/driver calls) of a whole trace, counted as ``fill_host_counts`` counts
    them for a report's ops: every host event but the step annotations (annotations included), top-level ones by
    ``is_top_level``, every runtime or driver call."""
    events = [j for j, ev in enumerate(trace.ops) if not ev.name.startswith("ProfilerStep#")]
    return len(events), sum(is_top_level(trace, j) for j in events), len(trace.launches)


class _NextOp:
    """(step, time) -> the report op of that step that starts next: what an event outside every op's subtree
    (autograd's engine frames around a backward op, an annotation) delayed; None after the step's last op."""

    def __init__(self, trace: Trace, event_to_report: dict[int, int]) -> None:
        starts: dict[int | None, list[tuple[float, int]]] = {}
        for event, index in event_to_report.items():
            ev = trace.ops[event]
            starts.setdefault(ev.step, []).append((ev.ts_us, index))
        self.starts = {step: sorted(pairs) for step, pairs in starts.items()}
        self.times = {step: [t for t, _ in pairs] for step, pairs in self.starts.items()}

    def __call__(self, step: int | None, ts_us: float) -> int | None:
        times = self.times.get(step)
        if not times:
            return None
        i = bisect.bisect_left(times, ts_us)
        return self.starts[step][i][1] if i < len(times) else None


def host_gaps_us(trace: Trace, events: list[int], step: int | None) -> dict[int, float]:
    """Event -> host time (us) since the previous of ``events`` ended, or since its step began for the first."""
    ops = trace.ops
    ordered = sorted(events, key=lambda e: ops[e].ts_us)
    if not ordered:
        return {}
    ended = trace.steps[step].ts_us if step is not None and step < len(trace.steps) else ops[ordered[0]].ts_us
    gaps: dict[int, float] = {}
    for e in ordered:
        ev = ops[e]
        gaps[e] = max(ev.ts_us - ended, 0.0)
        ended = max(ended, ev.ts_us + ev.dur_us)
    return gaps

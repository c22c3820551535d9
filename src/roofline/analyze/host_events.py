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

import numpy as np

from roofline.capture.trace_model import Trace, is_step_marker, op_columns, steps_of
from roofline.report import OpRecord


def fill_host_counts(trace: Trace, event_to_report: dict[int, int], ops: list[OpRecord]) -> None:
    """Set each report op's ``profiled_events``, ``profiled_top_level`` and ``runtime_calls`` (ops with no event
    in ``event_to_report`` keep theirs).

    Computed on columns of the trace (numpy), not per event: a million-event trace's per-event pass was ~0.5 s of
    every report build. Same result as walking each chosen event's subtree (by ``CpuOp.parent``) in
    ``event_to_report``'s order, less the subtrees of the chosen events nested in it: an event in several chosen
    subtrees (an annotation kept as an op around chosen children, a CPU op's own-time row around its children's)
    counts once, for the innermost, and so do the events outside every op and the runtime calls it holds (for the
    chosen event listed last); an External id belongs to the op of the chosen event listed first whose subtree
    holds it."""
    if not event_to_report or not trace.ops:
        return
    cols = _HostColumns(trace)
    n = len(trace.ops)
    chosen = np.fromiter(event_to_report.keys(), dtype=np.int64, count=len(event_to_report))
    report_index = np.fromiter(event_to_report.values(), dtype=np.int64, count=len(event_to_report))
    # int32 columns, sums in place: on a million-event trace this pass's temporaries set the command's peak RSS.
    last = np.full(n, -1, dtype=np.int32)  # the latest-listed chosen event above or at each event (-1: none)
    last[chosen] = np.arange(len(chosen), dtype=np.int32)
    first = np.where(last >= 0, last, np.int32(len(chosen)))  # the earliest-listed one (len(chosen): none)
    for level in cols.levels[1:]:
        up = cols.parent[level]
        last[level] = np.maximum(last[level], last[up])
        first[level] = np.minimum(first[level], first[up])
    events = np.ones(n, dtype=np.int32)
    top_level = cols.top_level.astype(np.int32)
    is_chosen = np.zeros(n, dtype=bool)
    is_chosen[chosen] = True
    for level in reversed(cols.levels[1:]):
        level = level[~is_chosen[level]]  # a chosen event's events are its own op's, not the op around it's
        up = cols.parent[level]
        np.add.at(events, up, events[level])
        np.add.at(top_level, up, top_level[level])
    nxt = _NextOp(cols, chosen, report_index)
    stray = np.flatnonzero((last < 0) & ~cols.step_marker)
    index = nxt(cols.step[stray], cols.ts[stray])
    found = index >= 0
    index = index[found]
    events_in = _counts(index, len(ops))
    top_in = _counts(index, len(ops), cols.top_level[stray[found]])

    launches = trace.launches
    calls = np.zeros(len(ops), dtype=np.int64)
    if launches:
        launch_op = np.fromiter((l.op for l in launches), dtype=np.int64, count=len(launches))
        owner = last[np.maximum(launch_op, 0)]
        index = np.where((launch_op >= 0) & (owner >= 0), report_index[np.maximum(owner, 0)], -1)
        external = [l.external_id for l in launches]
        has_external = np.fromiter((e is not None for e in external), dtype=bool, count=len(launches))
        todo = np.flatnonzero((index < 0) & has_external)
        if len(todo):
            ids = np.fromiter((external[i] for i in todo.tolist()), dtype=np.int64, count=len(todo))
            index[todo] = _by_external_id(cols, first, report_index)(ids)
        todo = np.flatnonzero(index < 0)
        if len(todo):
            ts = np.fromiter((launches[i].ts_us for i in todo.tolist()), dtype=np.float64, count=len(todo))
            index[todo] = nxt(steps_of(trace.steps, ts), ts)
        calls = _counts(index[index >= 0], len(ops))

    # An op listed under several events (never, as reports are built) takes the last one's subtree, as a walk would.
    unique, last_of = np.unique(report_index[::-1], return_index=True)
    listed = chosen[len(chosen) - 1 - last_of]
    rows = zip(unique.tolist(), (events[listed] + events_in[unique]).tolist(),
               (top_level[listed] + top_in[unique]).tolist(), calls[unique].tolist())
    for i, n_events, n_top, n_calls in rows:
        op = ops[i]
        op.profiled_events, op.profiled_top_level, op.runtime_calls = n_events, n_top, n_calls


def _counts(index: np.ndarray, n: int, weights: np.ndarray | None = None) -> np.ndarray:
    """How many of ``index`` (or their ``weights``) fall on each of 0..n-1, as integers."""
    if weights is None:
        return np.bincount(index, minlength=n)
    return np.bincount(index, weights=weights, minlength=n).astype(np.int64)


class _HostColumns:
    """What fill_host_counts reads of each host event, as arrays: parent, step (-1: none), start, External id,
    whether it is a step annotation or top-level, and the events grouped by depth (``levels[d]``: depth d); External
    ids on demand."""

    def __init__(self, trace: Trace) -> None:
        ops = trace.ops
        columns = op_columns(trace)
        self.parent, self.step, self.ts = columns.parent, columns.step, columns.ts_us
        self.step_marker = columns.named(is_step_marker)
        self._ops = ops
        self.top_level = ~self.step_marker & ((self.parent < 0) | self.step_marker[np.maximum(self.parent, 0)])
        self.levels = columns.levels()

    def external(self, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(External ids, whether each has one) of ``events``."""
        ops = self._ops
        ids = [ops[j].external_id for j in events.tolist()]
        has = np.fromiter((e is not None for e in ids), dtype=bool, count=len(ids))
        return np.fromiter((0 if e is None else e for e in ids), dtype=np.int64, count=len(ids)), has


def _by_external_id(cols: _HostColumns, first: np.ndarray, report_index: np.ndarray):
    """External ids -> the report op (-1: none) of the earliest-listed chosen event whose subtree holds an event
    with that id."""
    held = np.flatnonzero(first < len(report_index))
    ids, has = cols.external(held)
    ids, ranks = ids[has], first[held[has]]
    order = np.lexsort((ranks, ids))
    ids, ranks = ids[order], ranks[order]
    keep = np.ones(len(ids), dtype=bool)
    keep[1:] = ids[1:] != ids[:-1]
    ids, owners = ids[keep], report_index[ranks[keep]]

    def lookup(wanted: np.ndarray) -> np.ndarray:
        if not len(ids):
            return np.full(len(wanted), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
        return np.where(ids[at] == wanted, owners[at], -1)

    return lookup


def is_top_level(trace: Trace, event: int) -> bool:
    """An event with no enclosing event but its step's ``ProfilerStep#`` annotation (the step annotation itself is
    not an event of any op)."""
    ev = trace.ops[event]
    if is_step_marker(ev.name):
        return False
    return ev.parent < 0 or is_step_marker(trace.ops[ev.parent].name)


def trace_counts(trace: Trace) -> tuple[int, int, int]:
    """(events, top-level events, runtime/driver calls) of a whole trace, counted as ``fill_host_counts`` counts
    them for a report's ops: every host event but the step annotations (annotations included), top-level ones by
    ``is_top_level``, every runtime or driver call."""
    events = [j for j, ev in enumerate(trace.ops) if not is_step_marker(ev.name)]
    return len(events), sum(is_top_level(trace, j) for j in events), len(trace.launches)


class _NextOp:
    """(steps, times) -> the report op (-1: none) of that step that starts next, at or after that time, the
    lowest report index first at equal starts: what an event outside every op's subtree (autograd's engine frames
    around a backward op, an annotation) delayed; -1 after the step's last op."""

    def __init__(self, cols: _HostColumns, chosen: np.ndarray, report_index: np.ndarray) -> None:
        steps, ts = cols.step[chosen], cols.ts[chosen]
        order = np.lexsort((report_index, ts, steps))
        self.steps, self.ts, self.index = steps[order], ts[order], report_index[order]

    def __call__(self, steps: np.ndarray, ts: np.ndarray) -> np.ndarray:
        out = np.full(len(ts), -1, dtype=np.int64)
        for step in np.unique(steps).tolist():
            lo, hi = np.searchsorted(self.steps, [step, step + 1])
            if lo == hi:
                continue
            wanted = np.flatnonzero(steps == step)
            at = np.searchsorted(self.ts[lo:hi], ts[wanted], side="left")
            inside = at < hi - lo
            out[wanted[inside]] = self.index[lo:hi][at[inside]]
        return out


def host_gaps_us(trace: Trace, events: list[int], step: int | None) -> dict[int, float]:
    """Event -> host time (us) since the previous of ``events`` ended, or since its step began for the first.
    On columns (a 1 M-event trace's 127,620 rows: 0.12 -> 0.04 s), the same floats as event by event: the events in
    start order (stably), each one's gap to the latest end among those before it (or the step's start)."""
    if not events:
        return {}
    ops = trace.ops
    at = np.asarray(events, dtype=np.int64)
    starts = op_columns(trace).ts_us[at]
    order = np.argsort(starts, kind="stable")
    starts = starts[order]
    ends = starts + np.fromiter((ops[e].dur_us for e in events), dtype=np.float64, count=len(events))[order]
    ended = trace.steps[step].ts_us if step is not None and step < len(trace.steps) else starts[0]
    latest = np.maximum.accumulate(np.concatenate(([ended], ends[:-1])))
    gaps = starts - latest
    gaps = np.where(0.0 > gaps, 0.0, gaps)  # max(gap, 0.0), as the built-in keeps it (-0.0 stays -0.0)
    return dict(zip(at[order].tolist(), gaps.tolist()))
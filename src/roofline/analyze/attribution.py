"""Kernel -> op attribution over a loaded ``Trace``, with the totals that say how complete it is.

Each device event (kernel, memcpy, memset) goes to the innermost host op that launched it:

1. by correlation id: the runtime/driver call with the kernel's ``correlation`` (cudaLaunchKernel,
   cuLaunchKernel for Triton, cudaGraphLaunch for CUDA graphs, cudaMemcpyAsync...) sits inside ops on its host
   thread; the innermost of them (found by ``load_trace``) launched the kernel;
2. else by External id: the op whose ``External id`` equals the kernel's.

The innermost op is often an aten op (``aten::mm``). Under torch.compile the Triton launches sit inside a
``triton_...`` record_function or the ``## Call CompiledFxGraph ##`` annotation, with no aten op: the kernel is
attributed to that op under its own name and counted as ``other_us`` (not as aten). ``ProfilerStep#N`` is never
a target: a kernel launched directly under it is unattributed. Kernels replayed from a CUDA graph carry the
correlation of their cudaGraphLaunch: they go to the op around that call (``graph_replay_us`` sums them); a
launch under no op (a graph replayed from Python) has an op of its own, ``GRAPH_REPLAY_OP``, made by load_trace.
Syncs are linked the same way.

"Kernel time" here is the summed duration of all device events, kernels plus memcpy and memset.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from roofline.capture.trace_model import Step, Trace, is_step_marker, op_columns
from roofline.intervals import clip_union, length, union

_TOP_NAMES = 20


@dataclass
class StepStats:
    """Device activity of one profiler step. Kernels belong to the step in which they were launched
    (``kernel_us``, ``kernels``).

    The window (``step_windows``) runs from the step's host start to the later of its host end and its last
    kernel's end, but never past the next step's start: the windows do not overlap, so idle time summed over steps
    is at most their total length (async work spilling into the next step was counted idle twice, more idle than
    wall time). A GPU's busy time is the union of every kernel on it inside the window, whichever step launched it
    (all its streams merged), its idle time the rest of the window. One process driving several GPUs:
    ``idle_by_device`` holds each GPU's, and ``idle_us`` is the most idle GPU's (one GPU's kernels do not fill
    another's gaps, and the GPUs' idle times are not added up).
    """

    number: int
    window_us: float
    kernel_us: float
    busy_us: float
    idle_us: float
    kernels: int
    idle_by_device: dict[int, float] = field(default_factory=dict)
    # Per GPU busy in the window: from the window's start to its first device work there (a kernel, memcpy or
    # memset, whichever step launched it and whether or not an op claims it).
    first_busy_by_device: dict[int, float] = field(default_factory=dict)


@dataclass
class AttributionStats:
    total_kernel_us: float = 0.0
    attributed_us: float = 0.0
    aten_us: float = 0.0
    other_us: float = 0.0
    unattributed_us: float = 0.0
    share: float | None = None
    kernels: int = 0
    kernels_attributed: int = 0
    by_correlation: int = 0
    by_external_id: int = 0
    syncs_attributed: int = 0
    graph_replay_us: float = 0.0
    other_targets: dict[str, float] = field(default_factory=dict)
    unattributed_names: dict[str, float] = field(default_factory=dict)
    steps: list[StepStats] = field(default_factory=list)
    method: str = (
        "each device event -> innermost host op around the runtime call with the same correlation id, "
        "else the op with the same External id; ProfilerStep#N is never a target"
    )


def attribute(trace: Trace) -> AttributionStats:
    """Link kernels and syncs to ops, fill each op's kernel ids and times; idempotent (cached on the trace)."""
    if isinstance(trace.attribution, AttributionStats):
        return trace.attribution
    ops = trace.ops
    launch_op = {l.correlation: l.op for l in trace.launches if l.correlation is not None}
    graph_launches = {l.correlation for l in trace.launches if "GraphLaunch" in l.name}
    launch_ts = {l.correlation: l.ts_us for l in trace.launches if l.correlation is not None}
    ext_op = _ExternalIds(ops)
    excluded = _step_annotations(trace)

    stats = AttributionStats()
    targets: list[int] = []
    durations: list[float] = []
    # The sums in locals, added in the same order as into the stats (the same floats): 60,000+ kernels.
    total = graph = unattributed = attributed = aten = other = 0.0
    by_correlation = by_external_id = 0
    for kernel in trace.kernels:
        target, via_correlation = _target(kernel.correlation, kernel.external_id, launch_op, ext_op, excluded)
        kernel.op = target
        dur = kernel.dur_us
        total += dur
        if kernel.correlation in graph_launches:
            graph += dur
        if target < 0:
            unattributed += dur
            stats.unattributed_names[kernel.name] = stats.unattributed_names.get(kernel.name, 0.0) + dur
            continue
        attributed += dur
        if via_correlation:
            by_correlation += 1
        else:
            by_external_id += 1
        targets.append(target)
        durations.append(dur)
        op = ops[target]
        if op.kernel_ids:
            op.kernel_ids.append(kernel.index)
        else:
            op.kernel_ids = [kernel.index]
        op.self_kernel_us += dur
        if op.name.startswith("aten::"):
            aten += dur
        else:
            other += dur
            stats.other_targets[op.name] = stats.other_targets.get(op.name, 0.0) + dur
    stats.kernels, stats.kernels_attributed = len(trace.kernels), len(targets)
    stats.total_kernel_us, stats.graph_replay_us, stats.unattributed_us = total, graph, unattributed
    stats.attributed_us, stats.aten_us, stats.other_us = attributed, aten, other
    stats.by_correlation, stats.by_external_id = by_correlation, by_external_id

    _fill_totals(trace, targets, durations)

    for sync in trace.syncs:
        sync.op, _ = _target(sync.correlation, sync.external_id, launch_op, ext_op, excluded)
        stats.syncs_attributed += sync.op >= 0

    stats.share = stats.attributed_us / stats.total_kernel_us if stats.total_kernel_us > 0 else None
    stats.other_targets = _top(stats.other_targets)
    stats.unattributed_names = _top(stats.unattributed_names)
    stats.steps = _step_stats(trace, launch_ts)
    trace.attribution = stats
    return stats


def _fill_totals(trace: Trace, targets: list[int], durations: list[float]) -> None:
    """Each op's ``total_kernel_us``: its own kernels' time plus its children's totals. The sums are the ones a
    walk of the ops from the last to the first makes (each op's time added to its parent's, children after their
    own children), in the same order, so the floats are the same; done a tree level at a time on columns
    (``np.add.at`` adds in the order given). Ops with no kernel below them keep their 0."""
    if not targets:
        return
    ops = trace.ops
    columns = op_columns(trace)
    total = np.zeros(len(ops))
    np.add.at(total, np.array(targets, dtype=np.int64), np.array(durations))
    parent = columns.parent
    for level in reversed(columns.levels()[1:]):
        level = level[::-1]  # the level's ops, last first
        np.add.at(total, parent[level], total[level])
    held = np.flatnonzero(total)
    for i, value in zip(held.tolist(), total[held].tolist()):
        ops[i].total_kernel_us = value


class _ExternalIds:
    """External id -> the first op carrying it (ids > 0), built the first time a kernel or sync needs it: most are
    found by correlation, and a million-event trace's ids cost a pass over every op."""

    def __init__(self, ops) -> None:
        self._ops = ops
        self._first: dict[int, int] | None = None

    def get(self, external_id: int, default: int) -> int:
        if self._first is None:
            self._first = {}
            for op in self._ops:
                if op.external_id is not None and op.external_id > 0:
                    self._first.setdefault(op.external_id, op.index)
        return self._first.get(external_id, default)


def _step_annotations(trace: Trace) -> set[int]:
    """Indices of the ``ProfilerStep#`` annotations (each distinct name tested once)."""
    ops = trace.ops
    marked = np.flatnonzero(op_columns(trace).named(is_step_marker))
    return {ops[i].index for i in marked.tolist() if ops[i].is_annotation}


def _target(correlation, external_id, launch_op, ext_op, excluded) -> tuple[int, bool]:
    if correlation is not None:
        target = launch_op.get(correlation, -1)
        if target >= 0 and target not in excluded:
            return target, True
    if external_id is not None:
        target = ext_op.get(external_id, -1)
        if target >= 0 and target not in excluded:
            return target, False
    return -1, False


def _top(totals: dict[str, float]) -> dict[str, float]:
    return dict(sorted(totals.items(), key=lambda item: -item[1])[:_TOP_NAMES])


def _step_stats(trace: Trace, launch_ts: dict) -> list[StepStats]:
    if not trace.steps:
        return []
    per_step: list[list[tuple[float, float]]] = [[] for _ in trace.steps]
    spans: list[tuple[float, float]] = []
    devices: list = []
    for kernel in trace.kernels:
        spans.append((kernel.ts_us, kernel.end_us))
        devices.append(kernel.device)
        step = None
        if kernel.op >= 0:
            step = trace.ops[kernel.op].step
        if step is None:
            ts = launch_ts.get(kernel.correlation)
            step = trace.step_of(ts if ts is not None else kernel.ts_us)
        if step is not None:
            per_step[step].append(spans[-1])
    used = {d for d in devices if isinstance(d, int)}
    busy_by_device = {device: union(on) for device, on in _by_device(spans, devices, used).items()}
    result = []
    for step, launched, (start, end) in zip(trace.steps, per_step, step_windows(trace.steps, per_step)):
        inside = {device: clip_union(merged, start, end) for device, merged in busy_by_device.items()}
        busy = {device: length(stretches) for device, stretches in inside.items()} or {0: 0.0}
        first_busy = {device: stretches[0][0] - start for device, stretches in inside.items() if stretches}
        window = step.dur_us if end == step.end_us else end - start  # the host span's own figure where it is that
        idle = {device: max(window - b, 0.0) for device, b in busy.items()}
        worst = max(idle, key=idle.__getitem__)
        result.append(StepStats(step.number, window, sum(e - s for s, e in sorted(launched)), busy[worst],
                                idle[worst], len(launched), idle if len(idle) > 1 else {}, first_busy))
    return result


def step_windows(steps: list[Step], launched: list[list[tuple[float, float]]]) -> list[tuple[float, float]]:
    """Each step's (start, end): from its host start to the later of its host end and the end of the last kernel
    it launched (``launched``: each step's kernel intervals), cut at the next step's start."""
    windows = []
    for i, step in enumerate(steps):
        end = max([step.end_us] + [e for _, e in launched[i]])
        if i + 1 < len(steps):
            end = min(end, steps[i + 1].ts_us)
        windows.append((step.ts_us, max(end, step.ts_us)))
    return windows


def _by_device(intervals: list[tuple[float, float]], devices: list,
               ids: set[int]) -> dict[int, list[tuple[float, float]]]:
    """Kernel intervals per GPU, every GPU of the trace (``ids``) present, also one idle all along (kernels with no
    device id, as in old traces, are one GPU's)."""
    if len(ids) < 2:
        return {next(iter(ids), 0): intervals} if intervals else {}
    grouped: dict[int, list[tuple[float, float]]] = {d: [] for d in sorted(ids)}
    for span, device in zip(intervals, devices):
        grouped.setdefault(device if isinstance(device, int) else min(ids), []).append(span)
    return grouped

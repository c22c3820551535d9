"""GPU device time per ONNX Runtime node, from a torch.profiler (Kineto) trace recorded around the same runs.

ORT's profiler times a node's Compute() call on the host; on the CUDA provider that call mostly enqueues kernels
asynchronously, so a node's profiled time is its launch cost, not its kernels' time. CUPTI (through Kineto) sees
every kernel launched in the process, ORT's included. Each device event (``kernel``, ``gpu_memcpy``,
``gpu_memset``) is joined by ``args.correlation`` to the runtime or driver call that launched it (``cuda_runtime``,
``cuda_driver``); that call's host timestamp places it in the GPU node whose host interval ``[ts, ts + dur]``
contains it. A node's device time in a run is the sum of its device events' durations.

Clocks. ORT's ``ts`` are whole microseconds since the session's profiling start (``std::chrono::
high_resolution_clock``, the system clock on Linux: onnxruntime/core/common/profiler.cc); Kineto's are microseconds
after its trace's ``baseTimeNanoseconds`` (Unix time). Neither is trusted blindly: every run is wrapped in
``record_function(RUN_ANNOTATION)``, and each ORT ``model_run`` must lie inside its run's annotation, which bounds
the offset (Kineto = ORT + offset) per run to ``[a - m, a_end - m_end]``. The offset the two clocks' start times
give is taken when it lies in the intersection of those bounds over all runs; otherwise (or without it) the offset
in that band that places the most kernel launches inside GPU nodes (launch calls happen inside Compute(); copies
are left out of the fit, since ORT copies a run's inputs and outputs outside any node), the middle of the widest
such plateau. The residual reported is the spread of the per-run start offsets ``a - m`` around their
median: how far the anchoring alone could be off.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from roofline.capture.ort_profile import NodeEvent, OrtProfile
from roofline.capture.ort_run import RUN_ANNOTATION
from roofline.errors import RooflineError

DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
LAUNCH_CATS = frozenset({"cuda_runtime", "cuda_driver"})
ORT_RESOLUTION_US = 1.0  # ORT writes ts and dur as whole microseconds
MAX_STEPS = 800


@dataclass(slots=True)
class DeviceAttribution:
    """How the trace's device events were shared among the profile's nodes (per run: the profile's run order)."""

    offset_us: float
    residual_us: float
    band_us: tuple[float, float]
    plateau_us: float
    fitted_by: str
    kernel_us_per_run: list[float]
    attributed_us_per_run: list[float]
    launches: int
    launches_in_nodes: int
    outside_runs_us: float = 0.0
    unlaunched_us: float = 0.0
    unlaunched: int = 0
    clock_offset_us: float | None = None
    notes: list[str] = field(default_factory=list)

    def attributed_share(self, first_run: int = 0) -> float | None:
        """Share of the kernel time launched inside runs ``first_run:`` that went to a node (median over runs)."""
        shares = [a / k for a, k in zip(self.attributed_us_per_run[first_run:], self.kernel_us_per_run[first_run:])
                  if k > 0]
        return statistics.median(shares) if shares else None

    def as_dict(self, first_run: int = 0) -> dict:
        kernel = self.kernel_us_per_run[first_run:]
        return {"source": "CUPTI via torch.profiler (Kineto trace of the same runs)",
                "clock_offset_fitted_us": self.offset_us, "anchor_residual_us": self.residual_us,
                "offset_band_us": list(self.band_us), "offset_plateau_us": self.plateau_us,
                "offset_from": self.fitted_by,
                "clock_offset_from_clocks_us": self.clock_offset_us,
                "kernel_time_per_run_s": statistics.median(kernel) * 1e-6 if kernel else None,
                "attributed_share": self.attributed_share(first_run), "launches": self.launches,
                "launches_in_nodes": self.launches_in_nodes, "outside_runs_s": self.outside_runs_us * 1e-6,
                "device_events_without_launch": self.unlaunched, "notes": list(self.notes)}


def attribute_device_time(profile: OrtProfile, trace_events: Iterable[dict], *, gpu_node=None,
                          clock_offset_us: float | None = None) -> DeviceAttribution:
    """Set ``device_us`` and ``kernels`` of the profile's GPU nodes (``gpu_node(event)`` says which; nodes that
    launched nothing keep ``device_us`` None) from a Kineto trace's events. ``clock_offset_us``: the offset the
    two clocks' start times give (taken only when the runs' anchors allow it). RooflineError when runs cannot be
    paired."""
    annotations, launch_ts, device = _read_trace(trace_events)
    spans = profile.run_spans_us
    if not annotations:
        raise RooflineError(f"the torch.profiler trace has no {RUN_ANNOTATION!r} ranges to align ORT's runs with")
    if len(annotations) != len(spans) or len(spans) != len(profile.runs):
        raise RooflineError(f"the torch.profiler trace has {len(annotations)} {RUN_ANNOTATION!r} ranges but ORT's "
                            f"profile {len(spans)} model_run events: the runs cannot be paired")
    starts = [a - m for (a, _), (m, _) in zip(annotations, spans)]
    ends = [a_end - m_end for (_, a_end), (_, m_end) in zip(annotations, spans)]
    median = statistics.median(starts)
    residual = max(abs(s - median) for s in starts)
    lo, hi = max(starts) - ORT_RESOLUTION_US, min(ends) + ORT_RESOLUTION_US
    notes = []
    if lo > hi:
        notes.append(f"ORT's runs do not all fit inside their annotations under one clock offset (bounds {lo:.1f} > "
                     f"{hi:.1f} us): the offset is fitted around the median start offset instead")
        lo, hi = median - residual - ORT_RESOLUTION_US, median + residual + ORT_RESOLUTION_US
    is_gpu = gpu_node or (lambda ev: True)
    nodes = sorted((ev for run in profile.runs for ev in run if is_gpu(ev)), key=lambda ev: ev.ts_us)
    for ev in nodes:
        ev.device_us, ev.kernels, ev.kernel_names = None, 0, []
    node_start = np.array([ev.ts_us for ev in nodes], dtype=float)
    # ORT truncates ts and dur to whole microseconds each: a node's true end is up to 2 us after ts + dur
    node_end = np.array([ev.ts_us + ev.dur_us + 2 * ORT_RESOLUTION_US for ev in nodes], dtype=float)
    launched = [(launch_ts[c], dur, name) for c, dur, _, _, name in device if c in launch_ts]
    unlaunched = [(ts, dur) for c, dur, _, ts, _ in device if c not in launch_ts]
    t = np.array([ts for ts, _, _ in launched], dtype=float)
    kernel_t = np.array([launch_ts[c] for c, _, is_kernel, _, _ in device if is_kernel and c in launch_ts],
                        dtype=float)
    if clock_offset_us is not None and lo <= clock_offset_us <= hi:
        offset, plateau, fitted_by = clock_offset_us, 0.0, "clocks"
    else:
        offset, plateau = _fit_offset(kernel_t, node_start, node_end, lo, hi, median)
        fitted_by = "launches"
        if clock_offset_us is not None:
            notes.append(f"the two profilers' start times put the clocks {clock_offset_us - median:+.0f} us from the "
                         "runs' anchors, outside the band the runs allow: the offset is fitted on the launches")
    index = _containing(t - offset, node_start, node_end)
    run_start, run_end = np.array([a for a, _ in annotations]), np.array([e for _, e in annotations])
    run_of = _containing(t, run_start, run_end)
    kernel = [0.0] * len(spans)
    attributed = [0.0] * len(spans)
    outside = 0.0
    for (_, dur, name), i, r in zip(launched, index, run_of):
        if r < 0:
            outside += dur
            continue
        kernel[r] += dur
        if i >= 0:
            node: NodeEvent = nodes[i]
            node.device_us = (node.device_us or 0.0) + dur
            node.kernels += 1
            if name and name not in node.kernel_names:
                node.kernel_names.append(name)
            attributed[r] += dur
    # no launch call in the trace: counted in the run it ran in (ORT synchronises at the end of each run), no node
    for r, (_, dur) in zip(_containing(np.array([ts for ts, _ in unlaunched]), run_start, run_end), unlaunched):
        if r < 0:
            outside += dur
        else:
            kernel[r] += dur
    return DeviceAttribution(offset, residual, (lo, hi), plateau, fitted_by, kernel, attributed, len(launched),
                               int((index >= 0).sum()), outside, sum(d for _, d in unlaunched), len(unlaunched),
                               clock_offset_us, notes)


def _read_trace(events: Iterable[dict]) -> tuple[list[tuple[float, float]], dict[int, float],
                                                list[tuple[int, float, bool, float, str]]]:
    annotations: list[tuple[float, float]] = []
    launch_ts: dict[int, float] = {}
    device: list[tuple[int, float, bool, float, str]] = []
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph", "X") != "X":
            continue
        cat = ev.get("cat")
        try:
            ts, dur = float(ev["ts"]), float(ev.get("dur", 0))
        except (KeyError, TypeError, ValueError):
            continue
        if cat == "user_annotation" and ev.get("name") == RUN_ANNOTATION:
            annotations.append((ts, ts + dur))
            continue
        args = ev.get("args")
        correlation = args.get("correlation") if isinstance(args, dict) else None
        if not isinstance(correlation, int) or isinstance(correlation, bool):
            continue
        if cat in LAUNCH_CATS:
            launch_ts[correlation] = ts
        elif cat in DEVICE_CATS:
            device.append((correlation, dur, cat == "kernel", ts, str(ev.get("name", ""))))
    annotations.sort()
    return annotations, launch_ts, device


def _containing(t: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Index of the interval (sorted by start, not overlapping) holding each time, -1 where none does."""
    if not len(start) or not len(t):
        return np.full(len(t), -1, dtype=int)
    i = np.searchsorted(start, t, side="right") - 1
    inside = (i >= 0) & (t <= end[np.clip(i, 0, None)])
    return np.where(inside, i, -1)


def _fit_offset(t: np.ndarray, start: np.ndarray, end: np.ndarray, lo: float, hi: float,
                prior: float) -> tuple[float, float]:
    """The offset in [lo, hi] placing the most launches inside nodes: the middle of the widest such plateau
    (nearest ``prior`` among equals); and the plateau's width."""
    if not len(t) or not len(start) or hi <= lo:
        return (lo + hi) / 2, hi - lo
    step = max((hi - lo) / MAX_STEPS, 0.25)
    grid = np.arange(lo, hi + step / 2, step)
    counts = np.array([(_containing(t - off, start, end) >= 0).sum() for off in grid])
    best = counts.max()
    runs: list[tuple[int, int]] = []
    begin = None
    for k, hit in enumerate(counts == best):
        if hit and begin is None:
            begin = k
        if not hit and begin is not None:
            runs.append((begin, k - 1))
            begin = None
    if begin is not None:
        runs.append((begin, len(grid) - 1))
    first, last = max(runs, key=lambda r: (r[1] - r[0], -abs((grid[r[0]] + grid[r[1]]) / 2 - prior)))
    return float((grid[first] + grid[last]) / 2), float(grid[last] - grid[first])

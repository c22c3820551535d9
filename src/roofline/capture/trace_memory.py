"""Memory summaries from allocation events, and the events of a torch.profiler trace, without importing torch.

Split from memory.py (the live MemoryTracker) so that `roofline trace` never pays torch's import time and memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from roofline.report import LiveTensor, MemorySummary

_TIMELINE_POINTS = 400

COUNTER_DISPATCH = "tensor storages made in the window (dispatch mode)"
COUNTER_CUDA_ALLOCATED = "allocated (CUDA caching allocator, torch.cuda.memory_allocated)"
COUNTER_PROFILER = "allocated (torch.profiler [memory] Total Allocated)"
REFERENCE_CUDA = "torch.cuda.max_memory_allocated() over the same window"


@dataclass(slots=True)
class MemoryEvent:
    """One allocation (``bytes`` > 0) or free (< 0). ``total_bytes``: the counter's value just after it.
    Slotted: a long trace has a few hundred thousand of them."""

    time_s: float
    bytes: int
    device: str
    key: Any
    total_bytes: int | None = None
    reserved_bytes: int | None = None
    op: str = ""
    module: str = ""
    source: str | None = None
    shape: tuple[int, ...] = ()
    dtype: str = ""


def summarize_memory(
    events: Iterable[MemoryEvent],
    counter: str,
    *,
    top: int = 10,
    reference_peak_bytes: int | None = None,
    reference_counter: str = "",
    baseline_bytes: int = 0,
) -> MemorySummary:
    """Replay events in time order: timeline, peak, and the largest allocations live at the peak.

    When events carry the counter's running total (``total_bytes``) that total is the live figure; otherwise
    live bytes are ``baseline_bytes`` plus the sum of allocations not yet freed.
    """
    ordered = sorted(events, key=lambda e: e.time_s)
    running = baseline_bytes
    peak_bytes, peak_at, peak_reserved = baseline_bytes, -1, None
    values: list[float] = []
    for i, event in enumerate(ordered):
        running += event.bytes
        current = event.total_bytes if event.total_bytes is not None else running
        if event.reserved_bytes is not None:
            peak_reserved = max(peak_reserved or 0, event.reserved_bytes)
        values.append(float(current))
        if current > peak_bytes:
            peak_bytes, peak_at = current, i
    # Replay up to the peak once, rather than copying the live set at every new peak (quadratic on big traces).
    live: dict[Any, MemoryEvent] = {}
    for event in ordered[: peak_at + 1]:
        if event.bytes > 0:
            live[event.key] = event
        else:
            live.pop(event.key, None)
    largest = sorted(live.values(), key=lambda e: -e.bytes)[:top]
    t0 = ordered[0].time_s if ordered else 0.0
    return MemorySummary(
        peak_allocated_bytes=int(peak_bytes),
        peak_reserved_bytes=peak_reserved,
        counter=counter,
        peak_live_tensors=[
            LiveTensor(bytes=int(e.bytes), shape=list(e.shape), dtype=e.dtype, op=e.op, module=e.module, source=e.source)
            for e in largest
        ],
        timeline=_timeline(ordered, values, t0, _TIMELINE_POINTS),
        reference_peak_bytes=reference_peak_bytes,
        reference_counter=reference_counter,
    )


def _timeline(ordered: list[MemoryEvent], values: list[float], t0: float, limit: int) -> list[list[float]]:
    """At most ``limit`` [time since t0, live bytes] points, keeping each bucket's maximum so the peak survives;
    only the points kept are built (a long trace has hundreds of thousands of events)."""
    if len(values) <= limit:
        return [[e.time_s - t0, b] for e, b in zip(ordered, values)]
    size = -(-len(values) // limit)
    kept = []
    for i in range(0, len(values), size):
        bucket = values[i : i + size]
        j = i + bucket.index(max(bucket))
        kept.append([ordered[j].time_s - t0, values[j]])
    return kept


# -- torch.profiler [memory] events -------------------------------------------------------------

_DEVICE_TYPES = {0: "cpu", 1: "cuda"}


def _wanted_device(trace: Any) -> str:
    """The device whose memory a trace's summary follows: cuda when it has [memory] events there, else cpu."""
    present = {_DEVICE_TYPES.get(m.device_type, str(m.device_type)) for m in trace.memory}
    return "cuda" if "cuda" in present else "cpu"


def memory_events_from_trace(trace: Any, device_type: str | None = None) -> list[MemoryEvent]:
    """MemoryEvents from a roofline.capture.kineto Trace's ``[memory]`` events, with each one's op, module and
    source. ``device_type`` keeps one device ("cuda", "cpu"); default: cuda when present, else cpu."""
    wanted = device_type or _wanted_device(trace)
    events = []
    for m in trace.memory:
        kind = _DEVICE_TYPES.get(m.device_type, str(m.device_type))
        if kind != wanted:
            continue
        op = trace.ops[m.op] if 0 <= m.op < len(trace.ops) else None
        events.append(
            MemoryEvent(
                time_s=m.ts_us * 1e-6,
                bytes=int(m.bytes),
                device=f"{kind}:{m.device_id}" if kind == "cuda" else kind,
                key=m.addr,
                total_bytes=m.total_allocated,
                reserved_bytes=m.total_reserved if kind == "cuda" else None,
                op=op.name if op is not None else "",
                module=(op.module or "") if op is not None else "",
                source=op.source if op is not None else None,
            )
        )
    return events


def memory_from_trace(trace: Any, *, reference_peak_bytes: int | None = None, top: int = 10) -> MemorySummary:
    """The MemorySummary of a trace's [memory] events (profile_memory=True); empty when it has none.

    ``summarize_memory`` of ``memory_events_from_trace``, worked out on columns: a MemoryEvent (with its op's
    name, module and source) is made only for the tensors live at the peak, not for each of a long trace's
    hundreds of thousands of events (0.23 s of a 1 M-event trace's critical path, or a forked child whose
    copy-on-write faults cost the command as much)."""
    columns = _memory_columns(trace)
    if columns is None:
        return MemorySummary(counter="none: the trace has no [memory] events (profile_memory off)")
    events, time_s, nbytes, current, reserved = columns
    values = current.astype(np.float64)
    peak_at = int(np.argmax(current))
    peak_bytes = int(current[peak_at])
    if peak_bytes <= 0:
        peak_at, peak_bytes = -1, 0
    live: dict[Any, int] = {}
    for i, event in enumerate(events[: peak_at + 1]):
        if event.bytes > 0:
            live[event.addr] = i
        else:
            live.pop(event.addr, None)
    largest = sorted(live.values(), key=lambda i: -events[i].bytes)[:top]
    t0 = float(time_s[0])
    return MemorySummary(
        peak_allocated_bytes=peak_bytes,
        peak_reserved_bytes=reserved,
        counter=COUNTER_PROFILER,
        peak_live_tensors=[_live_tensor(trace, events[i]) for i in largest],
        timeline=_column_timeline(time_s, values, t0, _TIMELINE_POINTS),
        reference_peak_bytes=reference_peak_bytes,
        reference_counter=REFERENCE_CUDA if reference_peak_bytes is not None else "",
    )


def _memory_columns(trace: Any) -> tuple[list, np.ndarray, np.ndarray, np.ndarray, int | None] | None:
    """The wanted device's events (``memory_events_from_trace``'s choice) in time order, their times (s), bytes,
    live bytes after each (the counter's total where recorded, else the running sum) and the largest reserved
    total (a CUDA device's; None where none is recorded)."""
    wanted = _wanted_device(trace)
    events = [m for m in trace.memory if _DEVICE_TYPES.get(m.device_type, str(m.device_type)) == wanted]
    if not events:
        return None
    n = len(events)
    time_s = np.fromiter((m.ts_us for m in events), dtype=np.float64, count=n) * 1e-6
    order = np.argsort(time_s, kind="stable")
    events = [events[i] for i in order.tolist()]
    time_s = time_s[order]
    nbytes = np.fromiter((m.bytes for m in events), dtype=np.int64, count=n)
    totals = [m.total_allocated for m in events]
    recorded = np.fromiter((t is not None for t in totals), dtype=bool, count=n)
    total = np.fromiter((0 if t is None else t for t in totals), dtype=np.int64, count=n)
    current = np.where(recorded, total, np.cumsum(nbytes))
    reserved = None
    if wanted == "cuda":
        marks = [m.total_reserved for m in events if m.total_reserved is not None]
        reserved = max(0, *marks) if marks else None
    return events, time_s, nbytes, current, reserved


def _live_tensor(trace: Any, event: Any) -> LiveTensor:
    op = trace.ops[event.op] if 0 <= event.op < len(trace.ops) else None
    return LiveTensor(bytes=int(event.bytes), shape=[], dtype="", op=op.name if op is not None else "",
                      module=(op.module or "") if op is not None else "",
                      source=op.source if op is not None else None)


def _column_timeline(time_s: np.ndarray, values: np.ndarray, t0: float, limit: int) -> list[list[float]]:
    """``_timeline`` on columns: each bucket's first maximum."""
    n = len(values)
    if n <= limit:
        return [[t - t0, v] for t, v in zip(time_s.tolist(), values.tolist())]
    size = -(-n // limit)
    starts = np.arange(0, n, size)
    padded = np.full(len(starts) * size, -np.inf)
    padded[:n] = values
    at = starts + np.argmax(padded.reshape(-1, size), axis=1)
    return [[t - t0, v] for t, v in zip(time_s[at].tolist(), values[at].tolist())]

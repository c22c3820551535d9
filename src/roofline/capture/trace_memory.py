"""Memory summaries from allocation events, and the events of a torch.profiler trace, without importing torch.

Split from memory.py (the live MemoryTracker) so that `roofline trace` never pays torch's import time and memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

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


def memory_events_from_trace(trace: Any, device_type: str | None = None) -> list[MemoryEvent]:
    """MemoryEvents from a roofline.capture.kineto Trace's ``[memory]`` events, with each one's op, module and
    source. ``device_type`` keeps one device ("cuda", "cpu"); default: cuda when present, else cpu."""
    present = {_DEVICE_TYPES.get(m.device_type, str(m.device_type)) for m in trace.memory}
    wanted = device_type or ("cuda" if "cuda" in present else "cpu")
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
    """The MemorySummary of a trace's [memory] events (profile_memory=True); empty when it has none."""
    events = memory_events_from_trace(trace)
    if not events:
        return MemorySummary(counter="none: the trace has no [memory] events (profile_memory off)")
    return summarize_memory(
        events,
        COUNTER_PROFILER,
        top=top,
        reference_peak_bytes=reference_peak_bytes,
        reference_counter=REFERENCE_CUDA if reference_peak_bytes is not None else "",
    )

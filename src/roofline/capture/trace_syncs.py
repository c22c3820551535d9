"""Host-device syncs read back from a torch.profiler trace (Kineto's cuda_sync events, and the XPU plugin's
xpu_sync host waits), without importing torch.

Split from syncs.py (the live SyncDetector) so that `roofline trace` never pays torch's import time and memory.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from roofline.intervals import Coverage
from roofline.report import SyncSite


@dataclass
class _Site:
    kind: str
    location: str
    count: int = 0
    stall_s: float = 0.0
    idle_s: float | None = 0.0
    steps: dict[int, int] = field(default_factory=dict)


# -- syncs read back from a trace (Kineto cuda_sync events) ------------------------------------------------

_KIND_BY_OP = {
    "aten::_local_scalar_dense": "item",
    "aten::item": "item",
    "aten::nonzero": "nonzero",
    "aten::masked_select": "masked_select",
    "aten::repeat_interleave": "repeat_interleave",
    "aten::multinomial": "multinomial",
    "aten::unique": "unique",
    "aten::_unique2": "unique",
    "aten::index": "boolean-mask indexing",
}


# Kineto's cuda_sync kinds (libkineto's syncTypeString: "Event Sync", "Stream Wait Event", "Stream Sync", "Context
# Sync"): a stream wait makes one stream wait on another's event, on the device; the host goes on at once.
# a blocking copy's kind by the way it went: "copy to host" (.cpu(), .item() of a copy), "copy to device"
COPY_KIND = "copy to {}"
COPY_TO_DEVICE = COPY_KIND.format("device")
DEVICE_SIDE_SYNC_KINDS = frozenset({"Stream Wait Event"})
# Runtime calls CUPTI reports as synchronisations that return at once: polls (cudaEventQuery is reported as an
# "Event Sync"; cudaStreamQuery, cuEventQuery, hipEventQuery...).
_POLL_CALL_PART = "Query"
# a stream wait's runtime call (cudaStreamWaitEvent, cuStreamWaitEvent, hipStreamWaitEvent)
_STREAM_WAIT_CALL_PART = "StreamWaitEvent"
# torch's spelling of the explicit waits, for a sync made under no op (or under a user annotation)
_KIND_BY_CALL_SUFFIX = (("StreamSynchronize", "Stream.synchronize"), ("EventSynchronize", "Event.synchronize"))
DEVICE_SIDE = "device-side stream waits"
NON_BLOCKING = "non-blocking polls"
PROFILER_OWN = "made by the profiler's own code"


def left_out_reason(sync: Any) -> str | None:
    """Why a trace's sync event (capture.trace_model.SyncEvent) is no host-device sync of the user's code, or None
    when it is one: a device-side wait or a poll (the host did not block), or a sync the profiler's own code made
    (roofline's step timing, torch.profiler's stop: capture/tool_frames.py)."""
    call = sync.call or ""
    if sync.name in DEVICE_SIDE_SYNC_KINDS or _STREAM_WAIT_CALL_PART in call:
        return DEVICE_SIDE
    if _POLL_CALL_PART in call:
        return NON_BLOCKING
    if sync.in_tool:
        return PROFILER_OWN
    return None


def sync_kind(op_name: str | None, memcpy_name: str | None = None, device: str = "cuda",
              call: str | None = None) -> str:
    """A readable kind for a sync event (cuda_sync, xpu_sync), from the op that made it and the copy it waited
    for; with no op, from the runtime ``call`` that waited (cudaStreamSynchronize: ``cuda.Stream.synchronize``);
    ``device``: torch's name for the device type (``xpu.synchronize`` on Intel GPUs)."""
    if op_name is None:
        for suffix, kind in _KIND_BY_CALL_SUFFIX:
            if call and call.endswith(suffix):
                return f"{device}.{kind}"
        return f"{device}.synchronize"
    if op_name in ("aten::copy_", "aten::to", "aten::_to_copy"):
        direction = copy_direction(memcpy_name or "")
        return COPY_KIND.format(direction) if direction else "copy"
    return _KIND_BY_OP.get(op_name, op_name.replace("aten::", ""))


def copy_direction(memcpy_name: str) -> str:
    """``host`` or ``device`` for a device copy event's name: CUDA's "Memcpy DtoH (Device -> Pageable)", ROCm's
    "CopyDeviceToHost", Intel PTI's "Memcpy D2M (DEVICE -> MEMORY(Unknown))" (M: malloc'd host memory) and
    "Memcpy H2D (HOST -> DEVICE)"; else empty."""
    squeezed = memcpy_name.lower().replace(" ", "")
    if "dtoh" in squeezed or "devicetohost" in squeezed or squeezed.startswith(("memcpyd2h", "memcpyd2m")):
        return "host"
    if "htod" in squeezed or "hosttodevice" in squeezed or squeezed.startswith(("memcpyh2d", "memcpym2d")):
        return "device"
    return ""


@dataclass
class TraceSync:
    """One cuda_sync event joined with what launched it (the input of sites_from_trace_syncs)."""

    kind: str
    location: str
    stall_s: float
    step: int | None = None
    idle_s: float | None = None  # of the stall, the time the device ran nothing (DeviceIdle); None: not known


class DeviceIdle:
    """Each device's busy time in a trace (its kernels, memcpys and memsets, on any stream), asked how long a host
    span left a device idle. A device the trace names no work for, or none named, is asked of every device's work
    together: the shorter idle time, never a saving the device's own work would deny."""

    def __init__(self, kernels: Iterable[Any]):
        spans: dict[int | None, list[tuple[float, float]]] = defaultdict(list)
        for k in kernels:
            spans[int_or_none(k.device)].append((k.ts_us, k.ts_us + k.dur_us))
        self._any = Coverage([span for device_spans in spans.values() for span in device_spans])
        self._by_device = ({device: Coverage(device_spans) for device, device_spans in spans.items()}
                           if len(spans) > 1 else {})

    def idle_s(self, start_us: float, dur_us: float, device: Any = None) -> float:
        return float(self.idle_s_of([start_us], [dur_us], device)[0])

    def idle_s_of(self, starts_us, durs_us, device: Any = None) -> np.ndarray:
        """``idle_s`` of many spans on one device at once."""
        busy = self._by_device.get(int_or_none(device), self._any)
        starts = np.asarray(starts_us, dtype=np.float64)
        return busy.uncovered(starts, starts + np.maximum(np.asarray(durs_us, dtype=np.float64), 0.0)) / 1e6


def int_or_none(value: Any) -> int | None:
    """A trace's device or stream field (an int, its text, or absent) as an int, else None."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def sites_from_trace_syncs(syncs: Iterable[TraceSync], steps: int | None = None) -> list[SyncSite]:
    """Group sync events by (kind, location); per_step = count / the number of profiled steps; a site's device
    idle time is known when every one of its syncs' is."""
    grouped: dict[tuple[str, str], _Site] = {}
    seen_steps: set[int] = set()
    for sync in syncs:
        site = grouped.setdefault((sync.kind, sync.location), _Site(sync.kind, sync.location))
        site.count += 1
        site.stall_s += sync.stall_s
        site.idle_s = None if site.idle_s is None or sync.idle_s is None else site.idle_s + sync.idle_s
        if sync.step is not None:
            seen_steps.add(sync.step)
    n_steps = steps or len(seen_steps) or 1
    rows = [SyncSite(s.kind, s.location, s.count, s.stall_s, s.count / n_steps, s.idle_s) for s in grouped.values()]
    return sorted(rows, key=lambda r: (-r.count, -r.stall_s, r.location))


def syncs_from_trace(trace: Any) -> list[SyncSite]:
    """SyncSites from a trace's cuda_sync events (``host_syncs_from_trace``)."""
    return host_syncs_from_trace(trace)[0]


def host_syncs_from_trace(trace: Any) -> tuple[list[SyncSite], dict[str, int]]:
    """SyncSites from a trace's cuda_sync events, located at the launching op's user source line (else module).

    ``trace``: a roofline.capture.kineto Trace, a path to a trace file, or a raw Chrome trace dict (or its
    event list) as torch.profiler exports it; the last two are read by kineto's streaming loader. Syncs outside
    the profiled steps (the profiler's own stop) are left out when the trace has steps; so are sync events where
    the host did not block and syncs the profiler's own code made (``left_out_reason``), counted by reason in the
    second member.
    """
    if isinstance(trace, (str, os.PathLike, dict, list)):
        trace = _load(trace)
    syncs, steps, left_out = trace_syncs_from_trace(trace)
    return sites_from_trace_syncs(syncs, steps), left_out


_WHY_LEFT_OUT = {
    DEVICE_SIDE: "a stream waits on another stream's event on the device, the host goes on",
    NON_BLOCKING: "an event or stream query returns at once",
    PROFILER_OWN: "roofline's step timing and torch.profiler's stop, no work of the profiled code",
}


def left_out_note(left_out: dict[str, int]) -> str | None:
    """The report's note on the sync events that are no host-device syncs of the user's code."""
    if not left_out:
        return None
    parts = "; ".join(f"{count} {reason} ({_WHY_LEFT_OUT[reason]})" for reason, count in sorted(left_out.items()))
    return f"sync events left out of the host-device syncs: {parts}"


def _load(source: Any) -> Any:
    from roofline.capture.kineto import load_trace

    if isinstance(source, (str, os.PathLike)):
        return load_trace(source)
    import json
    import tempfile

    document = {"traceEvents": source} if isinstance(source, list) else source
    with tempfile.TemporaryDirectory(prefix="roofline-syncs-") as tmp:
        path = os.path.join(tmp, "trace.json")
        with open(path, "w") as fh:
            json.dump(document, fh)
        return load_trace(path)


def trace_syncs_from_trace(trace: Any) -> tuple[list[TraceSync], int | None, dict[str, int]]:
    """Each sync where the host blocked in the user's code joined to the op that waited (External id), located at
    its source line, else its module, and to the copy it waited for, with the time its device ran nothing during
    the wait (``DeviceIdle``; None on a trace without device work); the number of profiled steps; the profiled
    steps' sync events left out, by reason (``left_out_reason``). A user annotation (record_function) around the
    sync gives its location, not its kind."""
    idle = DeviceIdle(trace.kernels) if trace.kernels else None
    op_by_ext = {op.external_id: op for op in trace.ops if op.external_id is not None and not op.is_annotation}
    memcpy_by_ext = {k.external_id: k.name for k in trace.kernels if k.category == "gpu_memcpy"}
    device = "xpu" if any(c.startswith("xpu_") for c in getattr(trace, "categories", ())) else "cuda"
    result = []
    left_out: dict[str, int] = {}
    for sync in trace.syncs:
        op = trace.ops[sync.op] if sync.op >= 0 else op_by_ext.get(sync.external_id)
        step = op.step if op is not None else trace.step_of(sync.ts_us)
        if trace.steps and step is None:
            continue
        reason = left_out_reason(sync)
        if reason is not None:
            left_out[reason] = left_out.get(reason, 0) + 1
            continue
        location = (op.source or op.module or "<unknown>") if op is not None else "<unknown>"
        op_name = op.name if op is not None and not op.is_annotation else None
        kind = sync_kind(op_name, memcpy_by_ext.get(sync.external_id), device, sync.call)
        idle_s = idle.idle_s(sync.ts_us, sync.dur_us, sync.device) if idle is not None else None
        result.append(TraceSync(kind, location, sync.dur_us * 1e-6, step, idle_s))
    return result, (len(trace.steps) or None), left_out

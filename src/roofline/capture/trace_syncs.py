"""Host-device syncs read back from a torch.profiler trace (Kineto cuda_sync events), without importing torch.

Split from syncs.py (the live SyncDetector) so that `roofline trace` never pays torch's import time and memory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable

from roofline.report import SyncSite


@dataclass
class _Site:
    kind: str
    location: str
    count: int = 0
    stall_s: float = 0.0
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


def sync_kind(op_name: str | None, memcpy_name: str | None = None) -> str:
    """A readable kind for a cuda_sync event, from the op that made it and the copy it waited for."""
    if op_name is None:
        return "cuda.synchronize"
    if op_name in ("aten::copy_", "aten::to", "aten::_to_copy"):
        if memcpy_name and "DtoH" in memcpy_name:
            return "copy to host"
        if memcpy_name and "HtoD" in memcpy_name:
            return "copy to device"
        return "copy"
    return _KIND_BY_OP.get(op_name, op_name.replace("aten::", ""))


@dataclass
class TraceSync:
    """One cuda_sync event joined with what launched it (the input of sites_from_trace_syncs)."""

    kind: str
    location: str
    stall_s: float
    step: int | None = None


def sites_from_trace_syncs(syncs: Iterable[TraceSync], steps: int | None = None) -> list[SyncSite]:
    """Group sync events by (kind, location); per_step = count / the number of profiled steps."""
    grouped: dict[tuple[str, str], _Site] = {}
    seen_steps: set[int] = set()
    for sync in syncs:
        site = grouped.setdefault((sync.kind, sync.location), _Site(sync.kind, sync.location))
        site.count += 1
        site.stall_s += sync.stall_s
        if sync.step is not None:
            seen_steps.add(sync.step)
    n_steps = steps or len(seen_steps) or 1
    rows = [SyncSite(s.kind, s.location, s.count, s.stall_s, s.count / n_steps) for s in grouped.values()]
    return sorted(rows, key=lambda r: (-r.count, -r.stall_s, r.location))


def syncs_from_trace(trace: Any) -> list[SyncSite]:
    """SyncSites from a trace's cuda_sync events, located at the launching op's user source line (else module).

    ``trace``: a raw Chrome trace dict (or its event list) as torch.profiler exports it, a path to one, or a
    roofline.capture.kineto Trace. Syncs outside the profiled steps (the profiler's own stop) are left out
    when the trace has steps.
    """
    if isinstance(trace, (str, os.PathLike)):
        trace = _read_json_trace(trace)
    if isinstance(trace, dict):
        events = trace.get("traceEvents", [])
    elif isinstance(trace, list):
        events = trace
    else:
        syncs, steps = trace_syncs_from_trace(trace)
        return sites_from_trace_syncs(syncs, steps)
    syncs, steps = trace_syncs_from_events(events)
    return sites_from_trace_syncs(syncs, steps)


def _read_json_trace(path: str | os.PathLike[str]) -> dict:
    import gzip
    import json

    with open(path, "rb") as fh:
        raw = fh.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def trace_syncs_from_trace(trace: Any) -> tuple[list[TraceSync], int | None]:
    """The same join over roofline.capture.kineto's Trace: sync -> op by External id, op.source / op.module."""
    op_by_ext = {op.external_id: op for op in trace.ops if op.external_id is not None and not op.is_annotation}
    memcpy_by_ext = {k.external_id: k.name for k in trace.kernels if k.category == "gpu_memcpy"}
    result = []
    for sync in trace.syncs:
        op = trace.ops[sync.op] if sync.op >= 0 else op_by_ext.get(sync.external_id)
        step = op.step if op is not None else trace.step_of(sync.ts_us)
        if trace.steps and step is None:
            continue
        location = (op.source or op.module or "<unknown>") if op is not None else "<unknown>"
        kind = sync_kind(op.name if op is not None else None, memcpy_by_ext.get(sync.external_id))
        result.append(TraceSync(kind, location, sync.dur_us * 1e-6, step))
    return result, (len(trace.steps) or None)


def trace_syncs_from_events(events: list[dict]) -> tuple[list[TraceSync], int | None]:
    """Join each cuda_sync event to its cpu_op (External id), the copy it waited for, the user's Python frame
    and module around that op (with_stack traces), and the ProfilerStep it fell in."""
    ops: dict[Any, dict] = {}
    memcpy_by_ext: dict[Any, str] = {}
    frames_by_thread: dict[tuple, list[dict]] = {}
    steps: list[dict] = []
    sync_events: list[dict] = []
    for event in events:
        if event.get("ph") != "X":
            continue
        cat = event.get("cat")
        args = event.get("args") or {}
        if cat == "cpu_op":
            ops[args.get("External id")] = event
        elif cat == "cuda_sync":
            sync_events.append(event)
        elif cat == "gpu_memcpy":
            memcpy_by_ext.setdefault(args.get("External id"), str(event.get("name", "")))
        elif cat == "python_function":
            frames_by_thread.setdefault((event.get("pid"), event.get("tid")), []).append(event)
        elif cat == "user_annotation" and str(event.get("name", "")).startswith("ProfilerStep#"):
            steps.append(event)
    launching = {id(ops[e["args"].get("External id")]): ops[e["args"].get("External id")]
                 for e in sync_events if (e.get("args") or {}).get("External id") in ops}
    places = python_places(list(launching.values()), frames_by_thread)
    result = []
    for event in sync_events:
        ext = (event.get("args") or {}).get("External id")
        op = ops.get(ext)
        step = _step_of(op if op is not None else event, steps)
        if steps and step is None:
            continue
        location = places.get(id(op), "<unknown>") if op is not None else "<unknown>"
        kind = sync_kind(op.get("name") if op is not None else None, memcpy_by_ext.get(ext))
        result.append(TraceSync(kind, location, float(event.get("dur", 0.0)) * 1e-6, step))
    return result, (len(steps) or None)


def _step_of(event: dict, steps: list[dict]) -> int | None:
    ts = float(event.get("ts", 0.0))
    for step in steps:
        start = float(step["ts"])
        if start <= ts <= start + float(step.get("dur", 0.0)):
            name = str(step["name"])
            return int(name.split("#", 1)[1]) if name.split("#", 1)[1].isdigit() else None
    return None


def python_places(targets: list[dict], frames_by_thread: dict[tuple, list[dict]]) -> dict[int, str]:
    """For each target op: the user source line ("file:line") of the Python frames around it, else its module.

    One sweep per thread over frames and targets sorted by start, keeping the stack of open frames.
    """
    places: dict[int, str] = {}
    by_thread: dict[tuple, list[dict]] = {}
    for op in targets:
        by_thread.setdefault((op.get("pid"), op.get("tid")), []).append(op)
    for thread, thread_targets in by_thread.items():
        frames = frames_by_thread.get(thread, [])
        merged = [(float(f["ts"]), -float(f.get("dur", 0.0)), 0, i) for i, f in enumerate(frames)]
        merged += [(float(t["ts"]), -float(t.get("dur", 0.0)), 1, i) for i, t in enumerate(thread_targets)]
        merged.sort()
        stack: list[dict] = []
        for ts, _, is_target, i in merged:
            while stack and float(stack[-1]["ts"]) + float(stack[-1].get("dur", 0.0)) < ts:
                stack.pop()
            if is_target:
                places[id(thread_targets[i])] = _place_from_stack(stack)
            else:
                stack.append(frames[i])
    return places


def _place_from_stack(stack: list[dict]) -> str:
    module = ""
    for frame in reversed(stack):
        name = str(frame.get("name", ""))
        call_from = (frame.get("args") or {}).get("CallFrom")
        if call_from and not _is_library_frame(str(call_from)):
            return str(call_from)
        if name.startswith("nn.Module: "):
            module = module or name[len("nn.Module: "):]
            continue
        if name.startswith("<") or _is_library_frame(name):
            continue
        file_part, _, rest = name.partition("(")
        line = rest.partition(")")[0]
        return f"{file_part}:{line}" if line.isdigit() else name
    return module or "<unknown>"


def _is_library_frame(name: str) -> bool:
    return name.startswith(("torch/", "<", "enum.py", "typing.py", "contextlib.py", "runpy.py")) or "/torch/" in name

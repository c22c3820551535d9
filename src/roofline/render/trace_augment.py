"""The user's Chrome/Kineto trace with the roofline written into it, for Perfetto or chrome://tracing.

Each ``cpu_op`` event whose ``External id`` is an op of the Report (``OpRecord.external_id``) gets the op's
figures in its ``args``; each kernel / memcpy / memset event gets the figures of the report op that launched it
(its own ``External id`` names the innermost cpu_op; we climb that op's enclosing cpu_ops on the same thread to
the nearest one in the report). Counter tracks (``"ph": "C"``) of the achieved bandwidth and FLOP/s of the
launching op run along each device stream: the op's average over its kernels, held for each kernel's duration.

Nothing is moved or resized: timestamps and durations stay as recorded, so a valid trace stays valid. The added
args are namespaced ``roofline.*`` so they never overwrite Kineto's own (memcpy events already carry ``bytes``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from roofline.errors import RooflineError
from roofline.io import atomic_write_text
from roofline.render.chrome_trace import read_chrome_trace
from roofline.report import OpRecord, Report, known_bytes

DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}
BANDWIDTH_TRACK = "roofline achieved bandwidth (GB/s)"
FLOPS_TRACK = "roofline achieved FLOP/s (TFLOP/s)"


def augment_trace(trace: str | os.PathLike[str] | dict[str, Any], report: Report) -> dict[str, Any]:
    """A copy of the trace (a path to .json/.json.gz, or its parsed dict) with roofline args and counter tracks."""
    # A given dict stays untouched by copying only what changes: the event list, and each annotated event with its
    # args. A deep copy held a second copy of every event (sweep 5: a whole-script profile of HF generate with
    # Python stacks parsed to over 10 GB before this step began).
    data = read_chrome_trace(trace) if not isinstance(trace, dict) else dict(trace)
    events = data.get("traceEvents")
    if not isinstance(events, list):
        raise RooflineError("not a Chrome trace: no traceEvents list")
    events = data["traceEvents"] = list(events)
    ops = {op.external_id: op for op in report.ops if op.external_id is not None}
    owner = _owning_report_op(events, ops)
    annotated_ops = annotated_kernels = 0
    counters: list[tuple[float, int, dict[str, Any]]] = []
    for i, event in enumerate(events):
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        ext = _external_id(event)
        if ext is None:
            continue
        category = event.get("cat")
        if category == "cpu_op" and ext in ops:
            events[i] = _with_args(event, op_args(ops[ext]))
            annotated_ops += 1
        elif category in DEVICE_CATEGORIES and ext in owner:
            op = owner[ext]
            events[i] = event = _with_args(event, {"roofline.op": op.name, **op_args(op),
                                                   "roofline.scope": "launching op, summed over its kernels"})
            annotated_kernels += 1
            counters.extend(_counter_events(event, op))
    counters.sort(key=lambda c: (c[0], c[1]))
    events.extend(c[2] for c in counters)
    data["roofline"] = {
        "workload": report.workload,
        # What `roofline diff` needs to know a `roofline trace` report of this file is the same run as this one.
        "report_kind": report.kind,
        "captured_at": report.environment.timestamp,
        "annotated_ops": annotated_ops,
        "annotated_kernels": annotated_kernels,
        "report_ops_with_external_id": len(ops),
        "counter_tracks": [BANDWIDTH_TRACK, FLOPS_TRACK],
    }
    return data


def _with_args(event: dict[str, Any], added: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``event`` whose args hold ``added`` besides its own."""
    args = event.get("args")
    return {**event, "args": {**(args if isinstance(args, dict) else {}), **added}}


def augmented_trace_json(src: str | os.PathLike[str] | dict[str, Any], report: Report) -> str:
    """The augmented trace as JSON text."""
    return json.dumps(augment_trace(src, report), separators=(",", ":"), allow_nan=False, default=_default)


def write_augmented_trace(src: str | os.PathLike[str] | dict[str, Any], report: Report, out_path: str | os.PathLike[str]) -> Path:
    """Write the augmented trace atomically; gzip when ``out_path`` ends in .gz (e.g. trace.json.gz)."""
    return atomic_write_text(out_path, augmented_trace_json(src, report))


def op_args(op: OpRecord) -> dict[str, Any]:
    return {
        "roofline.module": op.module,
        "roofline.flops": op.flops if op.modeled else None,
        "roofline.bytes": known_bytes(op),
        "roofline.arithmetic_intensity": _finite(op.arithmetic_intensity) if op.modeled else None,
        "roofline.bound": op.bound,
        "roofline.pct_of_roof": round(100.0 * op.efficiency, 2),
        "roofline.roof": op.roof,
        "roofline.achieved_TFLOP_per_s": round(op.achieved_flops_per_s / 1e12, 6),
        "roofline.achieved_GB_per_s": round(op.achieved_bytes_per_s / 1e9, 6),
        "roofline.device_time_us": round(op.time_s * 1e6, 3),
        "roofline.predicted_us": round(op.predicted_time_s * 1e6, 3),
    }


def _external_id(event: dict[str, Any]) -> int | None:
    args = event.get("args")
    if not isinstance(args, dict):
        return None
    ext = args.get("External id")
    return ext if isinstance(ext, int) else None


def _owning_report_op(events: list[Any], ops: dict[int, OpRecord]) -> dict[int, OpRecord]:
    """External id of every cpu_op -> the report op that is it or encloses it on the same thread."""
    by_thread: dict[tuple, list[dict[str, Any]]] = {}
    for event in events:
        if isinstance(event, dict) and event.get("ph") == "X" and event.get("cat") == "cpu_op" and _external_id(event) is not None:
            by_thread.setdefault((event.get("pid"), event.get("tid")), []).append(event)
    owner: dict[int, OpRecord] = {}
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: (float(e.get("ts", 0)), -float(e.get("dur", 0))))
        stack: list[tuple[float, OpRecord | None]] = []
        for event in thread_events:
            start = float(event.get("ts", 0))
            end = start + float(event.get("dur", 0))
            while stack and stack[-1][0] <= start:
                stack.pop()
            ext = _external_id(event)
            mine = ops.get(ext)
            enclosing = stack[-1][1] if stack else None
            current = mine or enclosing
            if current is not None:
                owner[ext] = current
            stack.append((end, current))
    return owner


def _counter_events(kernel: dict[str, Any], op: OpRecord) -> list[tuple[float, int, dict[str, Any]]]:
    start = float(kernel.get("ts", 0))
    end = start + float(kernel.get("dur", 0))
    stream = kernel.get("tid")
    pid = kernel.get("pid")
    out = []
    for track, value in ((BANDWIDTH_TRACK, op.achieved_bytes_per_s / 1e9), (FLOPS_TRACK, op.achieved_flops_per_s / 1e12)):
        name = f"{track} stream {stream}"
        key = track.split("(")[-1].rstrip(")")
        out.append((start, 1, {"name": name, "ph": "C", "pid": pid, "tid": stream, "ts": start, "args": {key: round(value, 6)}}))
        out.append((end, 0, {"name": name, "ph": "C", "pid": pid, "tid": stream, "ts": end, "args": {key: 0}}))
    return out


def _finite(x: float) -> float | None:
    return x if x == x and x not in (float("inf"), float("-inf")) else None


def _default(obj: Any) -> Any:
    if hasattr(obj, "item"):
        return obj.item()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")

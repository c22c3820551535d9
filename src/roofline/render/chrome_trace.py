"""The Chrome trace we export: valid Trace Event Format that Perfetto and chrome://tracing open.

What we promise (``validate_chrome_trace`` checks it, and other renderers' tests reuse it): a JSON object with a
``traceEvents`` list; times in microseconds; durations only as complete events (``ph: "X"`` with ``dur``, never
B/E pairs); no negative or non-finite timestamps; complete events strictly nested per (pid, tid).

Kineto's own export breaks the last rule in small ways (a child a few ns past its parent after rounding, a GPU
step annotation that overlaps its neighbour), so ``normalize_chrome_trace`` shifts time to start at 0, clips tiny
overruns and moves real partial overlaps to an extra lane of the same process.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from roofline.capture.begin_end import complete_event_dicts
from roofline.errors import RooflineError
from roofline.io import atomic_write_text, read_maybe_gzip
from roofline.report import known_bytes

_KNOWN_PHASES = set("XiIMstfCbenNODPRcpv")
_EPSILON_US = 1e-6
_MAX_PROBLEMS = 20


def validate_chrome_trace(obj: Any) -> list[str]:
    """Problems that keep ``obj`` from being the Chrome trace we promise; an empty list means valid."""
    if not isinstance(obj, dict) or not isinstance(obj.get("traceEvents"), list):
        return ["not a Chrome trace: expected a JSON object with a 'traceEvents' list"]
    problems: list[str] = []
    unit = obj.get("displayTimeUnit")
    if unit is not None and unit not in ("ms", "ns"):
        problems.append(f"displayTimeUnit {unit!r} is not 'ms' or 'ns'")
    lanes: dict[tuple[str, str], list[tuple[float, float, str]]] = {}
    for i, event in enumerate(obj["traceEvents"]):
        where = f"event {i}"
        if not isinstance(event, dict):
            problems.append(f"{where}: not an object")
            continue
        ph = event.get("ph")
        if ph in ("B", "E"):
            problems.append(f"{where}: phase {ph!r}; durations must be 'X' events with 'dur'")
            continue
        if not isinstance(ph, str) or ph not in _KNOWN_PHASES:
            problems.append(f"{where}: unknown phase {ph!r}")
            continue
        ts = event.get("ts")
        if ph != "M" or ts is not None:
            if not _is_number(ts):
                problems.append(f"{where} ({ph}): 'ts' missing or not a finite number")
                continue
            if ts < 0:
                problems.append(f"{where} ({ph}): negative timestamp {ts}")
        if ph != "X":
            continue
        name, dur = event.get("name"), event.get("dur")
        if not isinstance(name, str):
            problems.append(f"{where}: 'X' event without a string name")
        if not _is_number(dur) or dur < 0:
            problems.append(f"{where} ({name}): 'X' event needs a finite, non-negative 'dur'")
            continue
        if "pid" not in event or "tid" not in event:
            problems.append(f"{where} ({name}): 'X' event without pid/tid")
            continue
        lanes.setdefault((str(event["pid"]), str(event["tid"])), []).append((float(ts), float(dur), str(name)))
    for (pid, tid), events in lanes.items():
        problems.extend(_nesting_problems(pid, tid, events))
    if len(problems) > _MAX_PROBLEMS:
        problems = problems[:_MAX_PROBLEMS] + [f"... and {len(problems) - _MAX_PROBLEMS} more problems"]
    return problems


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _nesting_problems(pid: str, tid: str, events: list[tuple[float, float, str]]) -> list[str]:
    problems = []
    stack: list[tuple[float, str]] = []
    for ts, dur, name in sorted(events, key=lambda e: (e[0], -e[1])):
        end = ts + dur
        while stack and stack[-1][0] <= ts + _EPSILON_US:
            stack.pop()
        if stack and end > stack[-1][0] + _EPSILON_US:
            problems.append(
                f"pid {pid} tid {tid}: '{name}' [{ts}, {end}] partially overlaps '{stack[-1][1]}' ending at {stack[-1][0]}"
            )
            continue
        stack.append((end, name))
    return problems


# -- making a trace valid ------------------------------------------------------------------------------------


def normalize_chrome_trace(obj: dict | list) -> dict:
    """A copy of a torch.profiler / Kineto export that passes ``validate_chrome_trace``.

    Time starts at 0 (the shift is kept in ``otherData.roofline_time_shift_us``); B/E events and events without
    a usable timestamp are dropped; overruns up to 1 us (or 1% of the event) are clipped to the parent's end;
    larger partial overlaps move to an extra lane ``"<tid> overlap N"`` of the same process.
    """
    source = obj if isinstance(obj, dict) else {"traceEvents": obj}
    events = [dict(e) for e in source.get("traceEvents", []) if isinstance(e, dict)]
    timed = [e["ts"] for e in events if _is_number(e.get("ts")) and e.get("ph") != "M"]
    shift = min(timed) if timed else 0.0
    kept: list[dict] = []
    dropped = 0
    for event in events:
        ph = event.get("ph")
        if ph in ("B", "E") or ph not in _KNOWN_PHASES:
            dropped += 1
            continue
        if ph == "M":
            event.pop("ts", None)
            kept.append(event)
            continue
        if not _is_number(event.get("ts")):
            dropped += 1
            continue
        event["ts"] = round(max(float(event["ts"]) - shift, 0.0), 3)
        if ph == "X":
            dur = event.get("dur")
            event["dur"] = round(max(float(dur), 0.0), 3) if _is_number(dur) else 0.0
            event.setdefault("pid", 0)
            event.setdefault("tid", 0)
            event["name"] = str(event.get("name", ""))
        kept.append(event)
    moved = _fix_nesting(kept)
    result = {k: v for k, v in source.items() if k != "traceEvents"}
    if isinstance(result.get("baseTimeNanoseconds"), (int, float)):
        result["baseTimeNanoseconds"] = int(result["baseTimeNanoseconds"] + shift * 1000)
    if result.get("displayTimeUnit") not in (None, "ms", "ns"):
        result.pop("displayTimeUnit")
    other = dict(result.get("otherData") or {})
    other.update({"roofline_time_shift_us": shift, "roofline_dropped_events": dropped, "roofline_moved_events": moved})
    result["otherData"] = other
    result["traceEvents"] = kept
    return result


def _fix_nesting(events: list[dict]) -> int:
    """Clip tiny overruns; move larger partial overlaps to overflow lanes. Returns how many moved."""
    lanes: dict[tuple[Any, Any], list[dict]] = {}
    for event in events:
        if event.get("ph") == "X":
            lanes.setdefault((event["pid"], event["tid"]), []).append(event)
    moved_total = 0
    lane_names: list[dict] = []
    pending = list(lanes.items())
    depth: dict[tuple[Any, Any], int] = {}
    while pending:
        (pid, tid), lane = pending.pop()
        overflow: list[dict] = []
        stack: list[dict] = []
        for event in sorted(lane, key=lambda e: (e["ts"], -e["dur"])):
            while stack and _end(stack[-1]) <= event["ts"] + _EPSILON_US:
                stack.pop()
            if stack and _end(event) > _end(stack[-1]) + _EPSILON_US:
                overrun = _end(event) - _end(stack[-1])
                if overrun <= max(1.0, 0.01 * event["dur"]):
                    event["dur"] = round(max(_end(stack[-1]) - event["ts"], 0.0), 3)
                else:
                    overflow.append(event)
                    continue
            stack.append(event)
        if overflow:
            base = depth.get((pid, tid), 0) + 1
            root_tid = tid if base == 1 else str(tid).rsplit(" overlap ", 1)[0]
            new_tid = f"{root_tid} overlap {base}"
            for event in overflow:
                event["tid"] = new_tid
            depth[(pid, new_tid)] = base
            moved_total += len(overflow)
            lane_names.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": new_tid,
                               "args": {"name": f"{root_tid} (overlapping events)"}})
            pending.append(((pid, new_tid), overflow))
    events.extend(lane_names)
    return moved_total


def _end(event: dict) -> float:
    return event["ts"] + event["dur"]


# -- a trace made from a Report (when no profiler trace exists) ------------------------------------------------


def chrome_trace_from_report(report: Any) -> dict:
    """Ops on a host lane and kernels on one lane per stream, from the Report alone (a fallback view)."""
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "host ops (from the roofline report)"}},
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "device kernels"}},
    ]
    cursor = 0.0
    for op in report.ops:
        start = op.start_s * 1e6 if op.start_s is not None else cursor
        dur = max(op.time_s, op.cpu_time_s) * 1e6
        cursor = max(cursor, start + dur)
        events.append({"ph": "X", "name": op.name, "cat": "op", "pid": 0, "tid": 0, "ts": start, "dur": dur,
                       "args": {"module": op.module, "bound": op.bound,
                                "flops": op.flops if op.modeled else None, "bytes": known_bytes(op),
                                "source": op.source, "step": op.step}})
    for kernel in report.kernels:
        events.append({"ph": "X", "name": kernel.name, "cat": kernel.category, "pid": 1,
                       "tid": kernel.stream if kernel.stream is not None else 0,
                       "ts": kernel.start_s * 1e6, "dur": kernel.dur_s * 1e6, "args": {"op_index": kernel.op_index}})
    return normalize_chrome_trace({"traceEvents": events, "displayTimeUnit": "ms"})


# -- files ------------------------------------------------------------------------------------------------


def read_chrome_trace(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A .json / .json.gz Chrome trace as a dict with traceEvents (a bare event list is wrapped)."""
    path = Path(path)
    raw = read_maybe_gzip(path, "trace", json=True)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        if not exc.msg.startswith("Extra data"):
            raise RooflineError(f"cannot parse trace {path}: {exc}") from None
        data = json.loads(exc.doc[:exc.pos])  # bytes after the trace's end: the trace reader warned of them
    except UnicodeDecodeError as exc:
        raise RooflineError(f"cannot parse trace {path}: {exc}") from None
    if isinstance(data, list):
        data = {"traceEvents": data}
    if not isinstance(data, dict):
        raise RooflineError(f"{path} is not a Chrome trace (expected an object with traceEvents)")
    if isinstance(data.get("traceEvents"), list):
        # spans another tool wrote as begin/end pairs, as the report read them: ours are complete events only
        data["traceEvents"] = complete_event_dicts(data["traceEvents"])
    return data


def write_chrome_trace(obj: dict, path: str | os.PathLike[str]) -> Path:
    """Write atomically; gzip when the name ends in .gz."""
    return atomic_write_text(Path(path), json.dumps(obj, separators=(",", ":"), allow_nan=False))

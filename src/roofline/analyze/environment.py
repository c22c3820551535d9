"""The Environment of a report read from a trace file: what the trace's own metadata says about where it was
recorded, never the machine reading it. Kineto records no torch or Python version, platform or command line;
those stay empty and are named in ``Environment.unknown``."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np

from roofline.capture.trace_model import Trace, op_columns
from roofline.report import Environment


def trace_environment(trace: Trace, device_name: str = "") -> Environment:
    meta = trace.metadata
    info = meta.get("distributedInfo") if isinstance(meta.get("distributedInfo"), dict) else {}
    env = Environment(
        torch_version=_text(meta.get("pytorch_version") or meta.get("torch_version")),
        device_name=trace.device_name or device_name,
        timestamp=_recorded_at(meta.get("baseTimeNanoseconds"), _first_event_us(trace)),
        hostname=_text(meta.get("host_name") or meta.get("hostname")),
        rank=_int(info.get("rank")),
        world_size=_int(info.get("world_size")),
        backend=_text(info.get("backend")) or None,
    )
    env.unknown = [name for name in ("torch_version", "device_name", "python_version", "command_line", "timestamp",
                                     "platform", "hostname") if not getattr(env, name)]
    return env


def _recorded_at(base_ns: Any, first_us: float | None = None) -> str:
    """When the trace began, as ISO time (UTC). Kineto's event times are microseconds after baseTimeNanoseconds,
    an epoch it picks that is not the trace's start (traces of torch 2.4, 2.7 and 2.14 recorded on 2026-12-02 all
    carry 1790857026000000000, 2026-10-01), so the trace began at base + its first event's ts. A trace without a
    base (torch 2.1 and older) writes Unix microseconds; its first ts is the time only if it reads as one (after
    2001), never a counter since boot."""
    if base_ns is None and first_us is not None and first_us >= _UNIX_US_2001:
        base_ns = 0
    elif not isinstance(base_ns, (int, float)) or isinstance(base_ns, bool) or base_ns <= 0:
        return ""
    try:
        when = _dt.datetime.fromtimestamp((base_ns + (first_us or 0.0) * 1e3) / 1e9, _dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return ""
    return when.isoformat(timespec="seconds")


_UNIX_US_2001 = 1e15


def _first_event_us(trace: Trace) -> float | None:
    """The earliest op's start, from the trace's op columns (a pass over a million ops' attributes was 0.14 s of
    `roofline trace` on issue 23's trace)."""
    if not trace.ops:
        return None
    ts = op_columns(trace).ts_us
    finite = ts[np.isfinite(ts)]
    return float(finite.min()) if len(finite) else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None

"""Communication across ranks: the collectives' sizes and bus bandwidth, and which ranks straggle and why. Each
rank's timeline and its split into compute, communication (hidden or exposed) and idle time are
analyze/rank_timeline.py's (re-exported here).

Bus bandwidth follows nccl-tests: algbw = bytes / time, busbw = algbw * 2(n-1)/n for all-reduce and
algbw * (n-1)/n for all-gather and reduce-scatter (bytes: the whole gathered / scattered buffer).
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from roofline.analyze.rank_timeline import (  # noqa: F401 - re-exported: the merge's and its tests' names
    Breakdown,
    RankTimeline,
    Span,
    breakdown,
    read_timeline,
    timeline_of,
    transfer_spans,
    window,
)
from roofline.count.meta import dtype_itemsize as itemsize
from roofline.intervals import intersection, length, union  # noqa: F401 - union, intersection re-exported
from roofline.report import StragglerRecord

_KINDS = (("allreduce", "all_reduce"), ("allgather", "all_gather"), ("reducescatter", "reduce_scatter"),
          ("alltoall", "all_to_all"), ("broadcast", "broadcast"), ("barrier", "barrier"), ("sendrecv", "send_recv"),
          ("send", "send"), ("recv", "recv"), ("reduce", "reduce"), ("gather", "gather"), ("scatter", "scatter"))


def collective_kind(name: str) -> str:
    """'ncclDevKernel_AllReduce_Sum_f32_RING_LL' / 'gloo:all_reduce' / 'c10d::_allgather_base_' -> 'all_reduce'..."""
    flat = name.lower().replace("_", "").replace(" ", "")
    for key, kind in _KINDS:
        if key in flat:
            return kind
    return "other"


def bus_factor(kind: str, world_size: int) -> float:
    n = max(world_size, 1)
    if kind == "all_reduce":
        return 2.0 * (n - 1) / n
    if kind in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0


# -- collectives -------------------------------------------------------------------------------------------


@dataclass
class CollectiveCall:
    kind: str
    name: str
    bytes: float | None
    time_s: float
    start_us: float
    bus_factor: float
    dtype: str | None = None

    @property
    def algbw_bytes_per_s(self) -> float | None:
        return self.bytes / self.time_s if self.bytes and self.time_s > 0 else None

    @property
    def busbw_bytes_per_s(self) -> float | None:
        algbw = self.algbw_bytes_per_s
        return algbw * self.bus_factor if algbw is not None else None


def collective_calls(timeline: RankTimeline, world_size: int) -> list[CollectiveCall]:
    """The transfers of the window, once each: NCCL kernels on a GPU, else the backend's spans (gloo:*), else
    the c10d ops. Sizes from the event's own collective args, else its launching op's, else its input shapes."""
    by_external = {s.external_id: s for s in timeline.host
                   if s.communication and s.comm is not None and s.comm.in_nelems is not None and s.external_id}
    calls = []
    for span in transfer_spans(timeline):
        source = span
        if (span.comm is None or span.comm.in_nelems is None) and span.external_id in by_external:
            source = by_external[span.external_id]
        comm = source.comm
        kind = collective_kind(str(comm.collective) if comm is not None and comm.collective else span.name)
        group = _int(comm.group_size) if comm is not None else None
        n = group or world_size
        size, dtype = _message_bytes(kind, source, n)
        calls.append(CollectiveCall(kind, span.name, size, span.dur_us / 1e6, span.start_us, bus_factor(kind, n),
                                    dtype))
    return calls


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _message_bytes(kind: str, span: Span, n: int) -> tuple[float | None, str | None]:
    comm = span.comm
    in_n, out_n = (_int(comm.in_nelems), _int(comm.out_nelems)) if comm is not None else (None, None)
    dtype = str(comm.dtype) if comm is not None and comm.dtype else None
    if in_n is not None or out_n is not None:
        elems = (out_n if kind == "all_gather" else in_n) or max(in_n or 0, out_n or 0)
        return float(elems * itemsize(dtype)), dtype
    dims, types = span.input_dims, span.input_types
    if not isinstance(dims, list):
        return None, None
    total = 0.0
    for i, shape in enumerate(dims):
        if isinstance(shape, list) and shape and all(isinstance(d, int) for d in shape):
            elems = 1
            for d in shape:
                elems *= d
            type_name = types[i] if isinstance(types, list) and i < len(types) else None
            dtype = dtype or type_name
            total += elems * itemsize(type_name)
    if total <= 0:
        return None, dtype
    return (total * n if kind == "all_gather" else total), dtype


def summarize_collectives(calls: list[CollectiveCall], steps: int,
                          ceiling_at: Any = None) -> list[dict[str, Any]]:
    """One row per (kind, message size): calls per step, median time and bus bandwidth, and the ceiling.

    ``ceiling_at(kind, bytes) -> (busbw, how) | None`` gives the measured bus bandwidth for that size.
    """
    groups: dict[tuple[str, float | None], list[CollectiveCall]] = defaultdict(list)
    for call in calls:
        groups[(call.kind, call.bytes)].append(call)
    rows = []
    for (kind, size), group in groups.items():
        busbw = [c.busbw_bytes_per_s for c in group if c.busbw_bytes_per_s is not None]
        row: dict[str, Any] = {
            "kind": kind, "bytes": size, "calls": len(group), "calls_per_step": len(group) / max(steps, 1),
            "time_s": statistics.median(c.time_s for c in group),
            "total_time_per_step_s": sum(c.time_s for c in group) / max(steps, 1),
            "busbw_bytes_per_s": statistics.median(busbw) if busbw else None,
            "algbw_bytes_per_s": statistics.median(c.algbw_bytes_per_s for c in group) if busbw else None,
            "dtype": group[0].dtype, "example": group[0].name,
            "ceiling_busbw_bytes_per_s": None, "ceiling_share": None, "ceiling_method": None,
        }
        if ceiling_at is not None and size:
            found = ceiling_at(kind, size)
            if found is not None:
                row["ceiling_busbw_bytes_per_s"], row["ceiling_method"] = found
                if row["busbw_bytes_per_s"] and found[0]:
                    row["ceiling_share"] = row["busbw_bytes_per_s"] / found[0]
        rows.append(row)
    rows.sort(key=lambda r: -r["total_time_per_step_s"])
    return rows


# -- stragglers --------------------------------------------------------------------------------------------


def find_stragglers(busy_s: dict[int, float], costs: dict[int, dict[str, float]], *, threshold: float = 0.1,
                    min_excess_s: float = 0.0) -> list[StragglerRecord]:
    """Ranks whose busy time per step exceeds the median of the other ranks' by more than ``threshold`` (a
    fraction) and by at least ``min_excess_s``; each names the op (or host call) where it spends the most time
    per step beyond the other ranks' median. Busy time = step time less the communication the rank waited on, so
    a rank held up by a straggler (waiting in its all-reduce) is not itself slow. The reference leaves the rank
    itself out: with two ranks the median of both would be their mean, half-way to the straggler."""
    if len(busy_s) < 2:
        return []
    out = []
    for rank, busy in sorted(busy_s.items()):
        median = statistics.median(v for r, v in busy_s.items() if r != rank)
        excess = busy - median
        if excess <= threshold * median or excess < min_excess_s:
            continue
        op, op_excess = slowest_cost(rank, costs)
        out.append(StragglerRecord(rank, busy, median, excess, op, op_excess))
    return out


def slowest_cost(rank: int, costs: dict[int, dict[str, float]]) -> tuple[str | None, float | None]:
    """The cost (op or host call) where ``rank`` spends the most time per step beyond the other ranks' median."""
    mine = costs.get(rank, {})
    others = [c for r, c in costs.items() if r != rank]
    best, best_excess = None, 0.0
    for key, value in mine.items():
        typical = statistics.median(o.get(key, 0.0) for o in others) if others else 0.0
        if value - typical > best_excess:
            best, best_excess = key, value - typical
    return best, (best_excess if best is not None else None)


def host_call_costs(timeline: RankTimeline) -> dict[str, float]:
    """Seconds per step in long builtin calls that no op encloses (time.sleep, a blocking read...), named by the
    call and the line that made it: time the op table cannot show."""
    lo, hi, steps = window(timeline)
    op_spans: dict[Any, list[tuple[float, float]]] = defaultdict(list)
    for span in timeline.host:
        op_spans[span.tid].append((span.start_us, span.end_us))
    unions = {tid: union(spans) for tid, spans in op_spans.items()}
    costs: dict[str, float] = defaultdict(float)
    for call in timeline.builtin_calls:
        if not (lo <= call.start_us < hi):
            continue
        covered = length(intersection([(call.start_us, call.end_us)], unions.get(call.tid, [])))
        free_us = call.dur_us - covered
        if free_us <= 0:
            continue
        costs[_call_label(call)] += free_us / 1e6 / max(steps, 1)
    return dict(costs)


def _call_label(call: Span) -> str:
    name = call.name
    match = re.match(r"<built-in (?:function|method) (\w+)", name)
    label = match.group(1) if match else name
    where = call.call_from
    return f"{label} (host call at {where})" if where else f"{label} (host call)"

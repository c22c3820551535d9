"""Communication on one rank's trace: which events are collectives, how much of them compute hides, their sizes
and bus bandwidth, and (across ranks) which ranks straggle and why.

Communication is
- on a GPU: the NCCL kernels (device events whose name contains "nccl");
- on the CPU (gloo): the backend's own spans (``gloo:all_reduce`` on its worker threads) and the c10d ops on the
  host (``c10d::allreduce_``, ``record_param_comms``, ``nccl:*``).
Compute is every other device event on a GPU, and on the CPU every other host op except the ones that enclose a
collective call. Over the profiled window (first ProfilerStep to the last event) each rank's time splits into
compute, communication and idle (neither); ``hidden`` communication overlaps compute, ``exposed`` does not.

Bus bandwidth follows nccl-tests: algbw = bytes / time, busbw = algbw * 2(n-1)/n for all-reduce and
algbw * (n-1)/n for all-gather and reduce-scatter (bytes: the whole gathered / scattered buffer).
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline.analyze.communication import is_communication_kernel, is_communication_op
from roofline.capture.kineto import load_trace
from roofline.capture.trace_model import CommArgs, Trace
from roofline.count.meta import dtype_itemsize as itemsize
from roofline.intervals import clip, intersection, length, union  # noqa: F401 - union, intersection re-exported
from roofline.report import StragglerRecord

_BACKEND_SPAN_PREFIXES = ("gloo:", "mpi:", "ucc:")
_STEP = re.compile(r"ProfilerStep#(\d+)$")
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


# -- reading one trace -------------------------------------------------------------------------------------


@dataclass
class Span:
    """One event of a rank's timeline; ``comm`` is what it says about its collective, ``input_dims``/``input_types``
    its shapes (a gloo span's size), ``call_from`` where a host call was made."""

    name: str
    start_us: float
    end_us: float
    tid: Any = None
    communication: bool = False
    comm: CommArgs | None = None
    external_id: int | None = None
    input_dims: list | None = None
    input_types: list | None = None
    call_from: str | None = None

    @property
    def dur_us(self) -> float:
        return self.end_us - self.start_us


@dataclass
class RankTimeline:
    """What the comm analysis keeps of one rank's trace: device events, host ops, long builtin calls, steps."""

    path: str
    device: list[Span] = field(default_factory=list)
    host: list[Span] = field(default_factory=list)
    builtin_calls: list[Span] = field(default_factory=list)
    steps: list[Span] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def has_gpu(self) -> bool:
        return bool(self.device)


def read_timeline(path: str | Path) -> RankTimeline:
    """The timeline of one rank's trace file (read by capture/kineto.py, the one trace reader)."""
    return timeline_of(load_trace(path))


def timeline_of(trace: Trace) -> RankTimeline:
    """What the comm analysis needs of a loaded trace: device events, host ops (annotations only when they are
    communication), the ProfilerStep spans and long built-in calls."""
    timeline = RankTimeline(trace.path, metadata=trace.metadata)
    timeline.device = [Span(k.name, k.ts_us, k.end_us, None, is_communication_kernel(k.name), k.comm, k.external_id)
                       for k in trace.kernels]
    for op in trace.ops:
        if op.is_annotation and _STEP.match(op.name):
            timeline.steps.append(Span(op.name, op.ts_us, op.end_us, op.tid))
            continue
        communication = is_communication_op(op.name)
        if not op.is_annotation or communication:
            timeline.host.append(Span(op.name, op.ts_us, op.end_us, op.tid, communication, op.comm, op.external_id,
                                      op.input_dims, op.input_types))
    timeline.builtin_calls = [Span(c.name, c.ts_us, c.end_us, c.tid, call_from=c.call_from) for c in trace.host_calls]
    return timeline


# -- one rank's breakdown ----------------------------------------------------------------------------------


@dataclass
class Breakdown:
    """Per-step averages over the profiled window of one rank."""

    steps: int
    window_s: float
    step_time_s: float
    compute_time_s: float
    communication_time_s: float
    exposed_communication_s: float
    hidden_communication_share: float | None
    idle_time_s: float
    source: str

    @property
    def busy_time_s(self) -> float:
        """The step less the communication it waited on: what this rank itself takes per step."""
        return max(self.step_time_s - self.exposed_communication_s, 0.0)


def window(timeline: RankTimeline) -> tuple[float, float, int]:
    """The profiled window: first ProfilerStep start to the later of the last step's end and the last event."""
    if timeline.steps:
        lo = min(s.start_us for s in timeline.steps)
        hi = max(s.end_us for s in timeline.steps)
        hi = max(hi, max((e.end_us for e in timeline.device if e.start_us < hi), default=hi))
        return lo, hi, len(timeline.steps)
    if not (timeline.device or timeline.host):
        return 0.0, 0.0, 1
    events = (timeline.device, timeline.host)
    return (min(e.start_us for part in events for e in part), max(e.end_us for part in events for e in part), 1)


def breakdown(timeline: RankTimeline) -> Breakdown:
    lo, hi, steps = window(timeline)
    if timeline.has_gpu:
        comm = [(e.start_us, e.end_us) for e in timeline.device if e.communication]
        work = [(e.start_us, e.end_us) for e in timeline.device if not e.communication]
        source = "device events (CUPTI): NCCL kernels are communication, every other kernel/memcpy/memset compute"
    else:
        comm = [(e.start_us, e.end_us) for e in timeline.host if e.communication]
        work = [(e.start_us, e.end_us) for e in _host_work(timeline.host)]
        source = ("host events: gloo/c10d spans are communication, other ops (not enclosing a collective call) "
                  "compute")
    comm_u, work_u = union(clip(comm, lo, hi)), union(clip(work, lo, hi))
    comm_s, work_s = length(comm_u) / 1e6, length(work_u) / 1e6
    hidden_s = length(intersection(comm_u, work_u)) / 1e6
    span_s = (hi - lo) / 1e6
    busy_s = length(union(comm_u + work_u)) / 1e6
    n = max(steps, 1)
    return Breakdown(
        steps=n, window_s=span_s, step_time_s=span_s / n, compute_time_s=work_s / n,
        communication_time_s=comm_s / n, exposed_communication_s=(comm_s - hidden_s) / n,
        hidden_communication_share=hidden_s / comm_s if comm_s > 0 else None,
        idle_time_s=max(span_s - busy_s, 0.0) / n, source=source,
    )


def _host_work(host: list[Span]) -> list[Span]:
    """Host ops that are not communication and do not enclose a collective call on their thread."""
    comm_by_thread: dict[Any, list[Span]] = defaultdict(list)
    for span in host:
        if span.communication:
            comm_by_thread[span.tid].append(span)
    starts = {tid: sorted(s.start_us for s in spans) for tid, spans in comm_by_thread.items()}
    out = []
    for span in host:
        if span.communication:
            continue
        inside = starts.get(span.tid)
        if inside and _any_between(inside, span.start_us, span.end_us):
            continue
        out.append(span)
    return out


def _any_between(sorted_values: list[float], lo: float, hi: float) -> bool:
    import bisect

    i = bisect.bisect_left(sorted_values, lo)
    return i < len(sorted_values) and sorted_values[i] < hi


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
    lo, hi, _ = window(timeline)
    by_external = {s.external_id: s for s in timeline.host
                   if s.communication and s.comm is not None and s.comm.in_nelems is not None and s.external_id}
    if timeline.has_gpu:
        spans = [e for e in timeline.device if e.communication]
    else:
        spans = [s for s in timeline.host if s.name.startswith(_BACKEND_SPAN_PREFIXES)]
        spans = spans or [s for s in timeline.host if s.communication]
    calls = []
    for span in spans:
        if not (lo <= span.start_us < hi):
            continue
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

"""One rank's timeline and how its profiled window splits into compute, communication and idle time.

Communication is
- on a GPU: the NCCL kernels (device events whose name contains "nccl");
- on the CPU (gloo): the backend's own spans (``gloo:all_reduce`` on its worker threads) and the c10d ops on the
  host (``c10d::allreduce_``, ``record_param_comms``, ``nccl:*``).
Compute is every other device event on a GPU, and on the CPU every other host op except the ones that enclose a
collective call. Over the profiled window (first ProfilerStep to the last event) each rank's time splits into
compute, communication and idle (neither); ``hidden`` communication overlaps compute, ``exposed`` does not.

The merge of ranks (distributed/) splits every rank so; a report of one rank with collectives splits its own
(``own_rank_row``). On the host the transfer runs on the backend's threads, not inside the ``c10d::allreduce_`` op
that queued it, so the op table holds only the call's few microseconds and the wait shows as time outside every op;
on a GPU the NCCL kernels' time is the collective ops' own, but whether compute ran beside them only the device
timeline tells.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline.analyze.communication import is_communication_kernel, is_communication_op
from roofline.capture.kineto import load_trace
from roofline.capture.trace_model import CommArgs, Trace, op_columns
from roofline.capture.unrecorded_device import unrecorded_device_use
from roofline.intervals import clip, intersection, length, union
from roofline.report import RankRecord, Report

_BACKEND_SPAN_PREFIXES = ("gloo:", "mpi:", "ucc:")
_STEP = re.compile(r"ProfilerStep#(\d+)$")


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
    timeline.device = _device_spans(trace)
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


def _device_spans(trace: Trace) -> list[Span]:
    return [Span(k.name, k.ts_us, k.end_us, None, is_communication_kernel(k.name), k.comm, k.external_id)
            for k in trace.kernels]


def _device_timeline(trace: Trace) -> RankTimeline:
    """``timeline_of`` a GPU trace without its host ops, which a GPU rank's breakdown does not read (a
    million-event trace's ops would each become a Span)."""
    timeline = RankTimeline(trace.path, metadata=trace.metadata)
    timeline.device = _device_spans(trace)
    timeline.steps = [Span(op.name, op.ts_us, op.end_us, op.tid) for op in trace.ops
                      if op.is_annotation and _STEP.match(op.name)]
    return timeline


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


def transfer_spans(timeline: RankTimeline) -> list[Span]:
    """The window's collectives, once each: NCCL kernels on a GPU, else the backend's spans (gloo:*), else the c10d
    ops (a c10d call and the backend span it queued are one collective)."""
    lo, hi, _ = window(timeline)
    if timeline.has_gpu:
        spans = [e for e in timeline.device if e.communication]
    else:
        spans = [s for s in timeline.host if s.name.startswith(_BACKEND_SPAN_PREFIXES)]
        spans = spans or [s for s in timeline.host if s.communication]
    return [s for s in spans if lo <= s.start_us < hi]


def breakdown_row(rank: int, b: Breakdown, collectives: int, **identity: Any) -> RankRecord:
    """A rank's row of the Ranks table from its breakdown and its number of collectives in the window;
    ``identity``: hostname, device_name, true_step_time_s."""
    return RankRecord(rank=rank, step_time_s=b.step_time_s, compute_time_s=b.compute_time_s,
                      communication_time_s=b.communication_time_s, exposed_communication_s=b.exposed_communication_s,
                      hidden_communication_share=b.hidden_communication_share, idle_time_s=b.idle_time_s,
                      busy_time_s=b.busy_time_s, collectives_per_step=collectives / max(b.steps, 1),
                      profiled_steps=b.steps, **identity)


def own_rank_row(trace: Trace, report: Report) -> RankRecord | None:
    """This rank's row, or None: no collective (on a GPU, no NCCL kernel), a GPU's work unrecorded, or no op to
    set the collectives against (a trace of the backend's spans alone says nothing of what overlapped them)."""
    if not report.ops or unrecorded_device_use(trace):
        return None
    if trace.kernels:
        if not any(map(is_communication_kernel, {k.name for k in trace.kernels})):
            return None
        timeline = _device_timeline(trace)
    elif not op_columns(trace).named(is_communication_op).any():  # no collective: no span made per op
        return None
    else:
        timeline = timeline_of(trace)
    env = report.environment
    return breakdown_row(env.rank or 0, breakdown(timeline), len(transfer_spans(timeline)), hostname=env.hostname,
                         device_name=env.device_name)

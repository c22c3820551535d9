"""What the merge keeps of one rank: a few numbers, its cost table and its collective calls, never its Report.

A thousand-rank job cannot hold a thousand Reports (each with its ops and kernels) at once: each rank is analysed
on its own (in a worker process or on a cluster, see distributed/fanout.py) and reduced to a ``RankSummary``;
only the base rank's Report is kept whole. The merge (distributed/merge.py) computes the rank table, stragglers,
exposed communication and the collectives from the summaries alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from roofline.analyze.communication import is_communication_op
from roofline.distributed.comm import (
    Breakdown,
    CollectiveCall,
    RankTimeline,
    breakdown,
    collective_calls,
    host_call_costs,
)
from roofline.doctor.distributed_evidence import syncs_near_collectives
from roofline.report import CollectiveSyncSite, Report

IDLE_COST = "idle: no op and no communication running (host work outside ops, data loading, waiting)"


@dataclass
class RankSummary:
    """One rank as the merge needs it. ``calls_world``: the world size its collectives' bus factors assumed.
    ``rank_recorded``: the rank is the one the trace's distributedInfo records (not taken from the file's name or
    its position in the list). Typed throughout: a worker sends it as MessagePack (``encode_summaries``), decoded
    back into these types."""

    rank: int
    path: str = ""
    hostname: str | None = None
    device_name: str | None = None
    true_step_time_s: float | None = None
    world_size: int | None = None
    backend: str | None = None
    has_gpu: bool = False
    breakdown: Breakdown | None = None
    costs: dict[str, float] = field(default_factory=dict)
    calls: list[CollectiveCall] = field(default_factory=list)
    calls_world: int = 0
    syncs: list[CollectiveSyncSite] = field(default_factory=list)
    rank_recorded: bool = False


def summarize_rank(rank: int, report: Report, timeline: RankTimeline, world: int) -> RankSummary:
    """``world``: the job's world size as far as it is known (the merge's, or the larger of this rank's own and
    the number of ranks merged, for a rank analysed apart)."""
    env = report.environment
    b = breakdown(timeline)
    calls = host_call_costs(timeline)
    costs = {**op_costs(report), **calls}
    costs[IDLE_COST] = max(b.idle_time_s - sum(calls.values()), 0.0)
    return RankSummary(
        rank=rank,
        path=timeline.path,
        hostname=env.hostname,
        device_name=env.device_name or report.ceilings.device_name,
        true_step_time_s=report.step_time.median_s if report.step_time else None,
        world_size=env.world_size,
        backend=env.backend,
        has_gpu=timeline.has_gpu,
        breakdown=b,
        costs=costs,
        calls=collective_calls(timeline, world),
        calls_world=world,
        syncs=syncs_near_collectives(report),
    )


def op_costs(report: Report) -> dict[str, float]:
    """Seconds per step by op and where it ran, leaving collectives out (their time is the other ranks')."""
    steps = max(report.steps, 1)
    costs: dict[str, float] = {}
    for op in report.ops:
        if is_communication_op(op.name):
            continue
        where = op.source or op.module
        key = f"{op.name} at {where}" if where else op.name
        costs[key] = costs.get(key, 0.0) + op.time_s / steps
    return costs


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(list[tuple[int, RankSummary]])


def encode_summaries(summaries: list[tuple[int, RankSummary]]) -> bytes:
    """``(task number, summary)`` pairs as MessagePack: a few kB a rank, the same floats bit for bit."""
    return _ENCODER.encode(summaries)


def decode_summaries(data: bytes) -> list[tuple[int, RankSummary]]:
    return _DECODER.decode(data)

"""One Report for a multi-rank job: each rank's time split into compute, communication and idle, the share of
communication hidden under compute, stragglers and what makes them slow, and each collective's bus bandwidth
against the measured ceiling.

The merged Report is the lowest rank's (its ops, kernels and roofline), with ``ranks`` (one row per rank, the
keys the HTML page shows side by side) and ``distributed`` (the evidence the distributed doctor rules
read); its findings are diagnosed again with that evidence.
"""

from __future__ import annotations

import copy
import os
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline.distributed.collectives import find_collective_ceilings
from roofline.analyze.communication import is_communication_op
from roofline.distributed.comm import (
    Breakdown,
    CollectiveCall,
    RankTimeline,
    _int,
    breakdown,
    collective_calls,
    find_stragglers,
    host_call_costs,
    read_timeline,
    summarize_collectives,
    timeline_of,
)
from roofline.distributed.rank import find_rank_dirs
from roofline.doctor.distributed_evidence import syncs_near_collectives
from roofline.errors import RooflineError
from roofline.report import (
    CollectiveCeilingRecord,
    CollectiveRecord,
    DistributedInfo,
    RankRecord,
    RankSyncs,
    Report,
    StragglerRecord,
)

STRAGGLER_THRESHOLD = 0.1
STRAGGLER_MIN_SHARE = 0.02
BUSY_METHOD = ("busy time = the rank's profiled step time less its exposed communication (time spent only in "
               "collectives, waiting on the other ranks or transferring); a straggler's busy time exceeds the other "
               "ranks' median by more than the threshold")
COLLECTIVE_METHOD = ("each collective's time is the shortest of its matching calls across ranks (a rank that arrived "
                     "early waits inside the call; the last to arrive times the transfer itself)")


@dataclass
class RankInput:
    rank: int
    report: Report
    timeline: RankTimeline


def merge_run_dir(run_dir: str | os.PathLike[str], ceilings_file: str | None = None, *,
                  threshold: float = STRAGGLER_THRESHOLD) -> Report:
    """Merge RUN_DIR/rank{r}/report.json + trace.json.gz of every rank into one Report."""
    found = find_rank_dirs(run_dir)
    if not found:
        raise RooflineError(f"no rank{{r}}/report.json under {run_dir}: profile with `roofline profile --nproc N` "
                            "or run `roofline profile` under torchrun with -o RUN_DIR")
    inputs = []
    for rank, directory in found:
        trace = next((directory / n for n in ("trace.json.gz", "trace.json") if (directory / n).is_file()), None)
        if trace is None:
            raise RooflineError(f"{directory} has a report.json but no trace.json.gz: profile that rank again")
        inputs.append(RankInput(rank, Report.load(directory / "report.json"), read_timeline(trace)))
    return merge_ranks(inputs, ceilings_file=ceilings_file, threshold=threshold)


def merge_trace_files(paths: list[str | os.PathLike[str]], ceilings_file: str | None = None, *,
                      threshold: float = STRAGGLER_THRESHOLD, partial: bool = False) -> Report:
    """Merge the torch.profiler traces of one job's ranks (rank from the trace's distributedInfo, else a
    'rank<N>' in its path, else its position)."""
    from roofline.analyze.trace_file import analyze_trace
    from roofline.capture.kineto import load_trace

    inputs = []
    for position, path in enumerate(paths):
        trace = load_trace(path)
        timeline = timeline_of(trace)
        report = analyze_trace(trace, ceilings_file, partial=partial)
        del trace
        rank = _rank_of_trace(timeline, path, position)
        info = timeline.metadata.get("distributedInfo")
        if isinstance(info, dict):
            report.environment.world_size = _int(info.get("world_size"))
            report.environment.backend = info.get("backend")
        report.environment.rank = rank
        inputs.append(RankInput(rank, report, timeline))
    if len({i.rank for i in inputs}) != len(inputs):
        inputs = [RankInput(pos, i.report, i.timeline) for pos, i in enumerate(inputs)]
    return merge_ranks(sorted(inputs, key=lambda i: i.rank), ceilings_file=ceilings_file, threshold=threshold)


def _rank_of_trace(timeline: RankTimeline, path: Any, position: int) -> int:
    info = timeline.metadata.get("distributedInfo")
    if isinstance(info, dict) and _int(info.get("rank")) is not None:
        return int(info["rank"])
    match = re.search(r"rank[_-]?(\d+)", str(path))
    return int(match.group(1)) if match else position


def merge_ranks(inputs: list[RankInput], *, ceilings_file: str | None = None,
                threshold: float = STRAGGLER_THRESHOLD) -> Report:
    if not inputs:
        raise RooflineError("nothing to merge: no ranks")
    inputs = sorted(inputs, key=lambda i: i.rank)
    world = max([len(inputs)] + [i.report.environment.world_size or 0 for i in inputs])
    on_gpu = any(i.timeline.has_gpu for i in inputs)
    backend = next((i.report.environment.backend for i in inputs if i.report.environment.backend), None)
    backend = backend or ("nccl" if on_gpu else "gloo")
    breakdowns = {i.rank: breakdown(i.timeline) for i in inputs}
    costs = {i.rank: rank_costs(i, breakdowns[i.rank]) for i in inputs}
    median_step = statistics.median(b.step_time_s for b in breakdowns.values())
    stragglers = find_stragglers({r: b.busy_time_s for r, b in breakdowns.items()}, costs, threshold=threshold,
                                 min_excess_s=STRAGGLER_MIN_SHARE * median_step)
    straggling = {s.rank: s for s in stragglers}
    calls = {i.rank: collective_calls(i.timeline, world) for i in inputs}
    rows = [_rank_row(i, breakdowns[i.rank], straggling.get(i.rank), calls[i.rank]) for i in inputs]

    base = copy.deepcopy(inputs[0].report)
    device_name = base.environment.device_name or base.ceilings.device_name
    ceiling = find_collective_ceilings(backend, world, device_name, ceilings_file)
    steps = statistics.median(b.steps for b in breakdowns.values())
    collectives = summarize_collectives(matched_calls(calls), int(steps), ceiling.at if ceiling else None)
    base.ranks = rows
    base.environment.rank = None
    base.environment.world_size = world
    base.environment.backend = backend
    base.extra.pop("rank", None)
    base.distributed = DistributedInfo(
        world_size=world, backend=backend, ranks_merged=[i.rank for i in inputs],
        base_rank=inputs[0].rank, steps=steps,
        stragglers=stragglers, straggler_threshold=threshold,
        straggler_method=BUSY_METHOD,
        breakdown_method=breakdowns[inputs[0].rank].source + "; per-step means over the profiled window",
        collectives=[CollectiveRecord(**c) for c in collectives], collective_method=COLLECTIVE_METHOD,
        collective_ceiling=CollectiveCeilingRecord(**ceiling.summary()) if ceiling else None,
        collective_ceiling_note=None if ceiling else
            "no measured collective bandwidth for this backend and world size: run `roofline ceilings --collectives`",
        syncs_near_collectives=[RankSyncs(i.rank, syncs_near_collectives(i.report)) for i in inputs],
    )
    base.summary.notes.append(
        f"merged {len(inputs)} rank(s) of a {world}-rank {backend} job: ops, kernels and roofline are rank "
        f"{inputs[0].rank}'s; the Ranks table has every rank"
    )
    return base


def _rank_row(item: RankInput, b: Breakdown, straggler: StragglerRecord | None,
              calls: list[CollectiveCall]) -> RankRecord:
    """One rank's row; ``slowest_op`` only for a straggler (on the others the largest difference is waiting)."""
    env, report = item.report.environment, item.report
    return RankRecord(
        rank=item.rank,
        hostname=env.hostname,
        device_name=env.device_name or report.ceilings.device_name,
        step_time_s=b.step_time_s,
        true_step_time_s=report.step_time.median_s if report.step_time else None,
        compute_time_s=b.compute_time_s,
        communication_time_s=b.communication_time_s,
        exposed_communication_s=b.exposed_communication_s,
        hidden_communication_share=b.hidden_communication_share,
        idle_time_s=b.idle_time_s,
        busy_time_s=b.busy_time_s,
        straggler=straggler is not None,
        slowest_op=straggler.slowest_op if straggler else None,
        slowest_op_excess_s=straggler.slowest_op_excess_s if straggler else None,
        collectives_per_step=len(calls) / max(b.steps, 1),
        profiled_steps=b.steps,
    )


IDLE_COST = "idle: no op and no communication running (host work outside ops, data loading, waiting)"


def rank_costs(item: RankInput, b: Breakdown) -> dict[str, float]:
    """Seconds per step by op, by long host call outside ops, and idle time beyond those calls: the candidates
    for what makes a rank slower than the others."""
    calls = host_call_costs(item.timeline)
    costs = {**op_costs(item.report), **calls}
    costs[IDLE_COST] = max(b.idle_time_s - sum(calls.values()), 0.0)
    return costs


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


def matched_calls(calls: dict[int, list[CollectiveCall]]) -> list[CollectiveCall]:
    """Each collective once: when every rank made the same sequence, the i-th calls are one collective and its
    time is their shortest (see COLLECTIVE_METHOD); otherwise the lowest rank's calls as they are."""
    ranks = sorted(calls)
    if not ranks:
        return []
    sequences = [sorted(calls[r], key=lambda c: c.start_us) for r in ranks]
    first = sequences[0]
    same = all(len(s) == len(first) and all(a.kind == b.kind and a.bytes == b.bytes for a, b in zip(s, first))
               for s in sequences[1:])
    if not same:
        return first
    out = []
    for group in zip(*sequences):
        fastest = min(group, key=lambda c: c.time_s)
        out.append(fastest)
    return out


def write_merged(report: Report, out_dir: str | os.PathLike[str], *, png: bool = True, html: bool = True) -> Path:
    from roofline.render.outputs import report_renderers, write_outputs

    written, _ = write_outputs(report, Path(out_dir), report_renderers(png=png, html=html))
    return written[0]

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

from roofline.analyze.rank_timeline import breakdown_row
from roofline.capture.event_stream import profiler_traces_in, profiler_traces_pattern
from roofline.distributed.collectives import find_collective_ceilings
from roofline.distributed.comm import (
    CollectiveCall,
    RankTimeline,
    _int,
    find_stragglers,
    summarize_collectives,
)
from roofline.distributed.rank import find_rank_dirs
from roofline.distributed.rank_summary import RankSummary, summarize_rank
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
                  threshold: float = STRAGGLER_THRESHOLD, jobs: int = 1, cluster: str | None = None) -> Report:
    """Merge RUN_DIR/rank{r}/report.json + trace.json.gz of every rank into one Report (``jobs`` worker
    processes, or the Dask cluster at ``cluster``: distributed/fanout.py)."""
    from roofline.distributed.fanout import summarize_all

    found = find_rank_dirs(run_dir)
    if not found:
        traces = profiler_traces_in(Path(run_dir))
        if traces:
            raise RooflineError(f"{run_dir} holds {len(traces)} torch.profiler traces, not the rank{{r}}/ folders "
                                "`roofline profile` writes: merge a job's rank traces with `roofline trace "
                                f"{profiler_traces_pattern(Path(run_dir), traces)}`")
        raise RooflineError(f"no rank{{r}}/report.json under {run_dir}: profile with `roofline profile --nproc N` "
                            "or run `roofline profile` under torchrun with -o RUN_DIR")
    tasks = [("dir", str(directory), rank, len(found), None, False) for rank, directory in found]
    summaries, base = summarize_all(tasks, jobs=jobs, cluster=cluster)
    return merge_summaries(summaries, base, ceilings_file=ceilings_file, threshold=threshold)


def merge_trace_files(paths: list[str | os.PathLike[str]], ceilings_file: str | None = None, *,
                      threshold: float = STRAGGLER_THRESHOLD, partial: bool = False, jobs: int = 1,
                      cluster: str | None = None) -> Report:
    """Merge the torch.profiler traces of one job's ranks (rank from the trace's distributedInfo, else a
    'rank<N>' in its path, else its position; by position when two files claim one rank)."""
    from roofline.distributed.fanout import summarize_all

    _refuse_repeated_files(paths)
    tasks = [("trace", str(path), position, len(paths), ceilings_file, partial) for position, path in enumerate(paths)]
    summaries, base = summarize_all(tasks, jobs=jobs, cluster=cluster)
    _refuse_unrelated_traces(summaries)
    return merge_summaries(summaries, base, ceilings_file=ceilings_file, threshold=threshold)


_RANK_IN_PATH = re.compile(r"rank[_-]?(\d+)")


def rank_of_trace(timeline: RankTimeline, path: Any, position: int) -> int:
    recorded = recorded_rank(timeline)
    if recorded is not None:
        return recorded
    match = _RANK_IN_PATH.search(str(path))
    return int(match.group(1)) if match else position


def recorded_rank(timeline: RankTimeline) -> int | None:
    """The rank the trace's distributedInfo records (torch.distributed's global rank: one process's own)."""
    info = timeline.metadata.get("distributedInfo")
    if isinstance(info, dict) and _int(info.get("rank")) is not None:
        return int(info["rank"])
    return None


def _refuse_repeated_files(paths: list[str | os.PathLike[str]]) -> None:
    seen: set[Path] = set()
    for path in paths:
        resolved = Path(path).resolve()
        if resolved in seen:
            raise RooflineError(f"{path} is given twice: each rank's trace once")
        seen.add(resolved)


def _refuse_unrelated_traces(summaries: list[RankSummary]) -> None:
    """Several traces of one process (a profiler schedule's cycles, tensorboard_trace_handler's files) are not
    ranks: merged as ranks, one cycle's warm-up would be named a straggler of an invented job. A rank in the file
    name vouches for a job only if no two files give the same one: two runs of one script with
    tensorboard_trace_handler(worker_name="rank0") are not ranks 0 and 1."""
    if any(s.backend or s.world_size or s.calls for s in summaries):
        _refuse_mixed_jobs(summaries)
        return
    named = [int(m.group(1)) for s in summaries if (m := _RANK_IN_PATH.search(s.path))]
    if named and len(set(named)) == len(named):
        return
    repeated = sorted({r for r in named if named.count(r) > 1})
    why = (f"their file names give rank {', '.join(map(str, repeated))} more than once" if repeated
           else "none names its rank in distributedInfo or its file name")
    raise RooflineError(f"these {len(summaries)} traces are not ranks of one distributed job ({why}, none records "
                        "a backend or holds a collective): analyse each with `roofline trace FILE`, or compare two "
                        "with `roofline diff` of their report.json")


def _refuse_mixed_jobs(summaries: list[RankSummary]) -> None:
    """Among traces that record a distributed job, one that records none (no rank, backend or collective: a
    single-process trace caught by a glob) is no rank of it: merged, it made 'a 3-rank job' of a 2-rank one."""
    stray = next((s for s in summaries if not (s.backend or s.world_size or s.calls)), None)
    if stray is None:
        return
    backend = next((s.backend for s in summaries if s.backend), None)
    world = max((s.world_size or 0 for s in summaries), default=0)
    job = ", ".join(([backend] if backend else []) + ([f"world size {world}"] if world else []))
    raise RooflineError(f"{stray.path} is not a rank of the job the other traces record{f' ({job})' if job else ''}: "
                        "it records no rank, backend or collective; leave it out, or analyse it alone with "
                        f"`roofline trace {stray.path}`")


def merge_ranks(inputs: list[RankInput], *, ceilings_file: str | None = None,
                threshold: float = STRAGGLER_THRESHOLD) -> Report:
    """``merge_summaries`` of ranks held whole (the inputs are left unchanged)."""
    if not inputs:
        raise RooflineError("nothing to merge: no ranks")
    inputs = sorted(inputs, key=lambda i: i.rank)
    world = job_world(len(inputs), [i.report.environment.world_size for i in inputs])
    summaries = [summarize_rank(i.rank, i.report, i.timeline, world) for i in inputs]
    return merge_summaries(summaries, copy.deepcopy(inputs[0].report), ceilings_file=ceilings_file,
                           threshold=threshold)


def job_world(ranks: int, world_sizes: list[int | None]) -> int:
    return max([ranks] + [w or 0 for w in world_sizes])


def merge_summaries(summaries: list[RankSummary], base: Report, *, ceilings_file: str | None = None,
                    threshold: float = STRAGGLER_THRESHOLD) -> Report:
    """One Report from the ranks' summaries: ``base`` (the lowest rank's Report, changed in place) with the rank
    table, stragglers, exposed communication and the collectives of all ranks."""
    if not summaries:
        raise RooflineError("nothing to merge: no ranks")
    summaries = sorted(summaries, key=lambda s: s.rank)
    world = job_world(len(summaries), [s.world_size for s in summaries])
    on_gpu = any(s.has_gpu for s in summaries)
    recorded_backend = next((s.backend for s in summaries if s.backend), None)
    backend = recorded_backend or ("nccl" if on_gpu else "gloo")
    breakdowns = {s.rank: s.breakdown for s in summaries}
    costs = {s.rank: s.costs for s in summaries}
    median_step = statistics.median(b.step_time_s for b in breakdowns.values())
    stragglers = find_stragglers({r: b.busy_time_s for r, b in breakdowns.items()}, costs, threshold=threshold,
                                 min_excess_s=STRAGGLER_MIN_SHARE * median_step)
    straggling = {s.rank: s for s in stragglers}
    calls = {s.rank: s.calls for s in summaries}
    rows = [_rank_row(s, straggling.get(s.rank)) for s in summaries]

    device_name = base.environment.device_name or base.ceilings.device_name
    ceiling = find_collective_ceilings(backend, world, device_name, ceilings_file)
    steps = statistics.median(b.steps for b in breakdowns.values())
    collectives = summarize_collectives(matched_calls(calls), int(steps), ceiling.at if ceiling else None)
    base.ranks = rows
    base.environment.rank = None
    base.environment.world_size = world
    base.environment.backend = backend
    base.extra.pop("rank", None)
    first = summaries[0]
    base.distributed = DistributedInfo(
        world_size=world, backend=backend, ranks_merged=[s.rank for s in summaries],
        base_rank=first.rank, steps=steps,
        stragglers=stragglers, straggler_threshold=threshold,
        straggler_method=BUSY_METHOD,
        breakdown_method=first.breakdown.source + "; per-step means over the profiled window",
        collectives=[CollectiveRecord(**c) for c in collectives], collective_method=COLLECTIVE_METHOD,
        collective_ceiling=CollectiveCeilingRecord(**ceiling.summary()) if ceiling else None,
        collective_ceiling_note=None if ceiling else
            "no measured collective bandwidth for this backend and world size: run `roofline ceilings --collectives`",
        syncs_near_collectives=[RankSyncs(s.rank, s.syncs) for s in summaries],
    )
    job = f"a {world}-rank {backend} job" if recorded_backend else \
        f"a {world}-rank job whose traces name no backend ({backend} assumed for the collectives' roofs)"
    base.summary.notes.append(
        f"merged {len(summaries)} rank(s) of {job}: ops, kernels and roofline are rank {first.rank}'s; the Ranks "
        "table has every rank"
    )
    return base


def _rank_row(s: RankSummary, straggler: StragglerRecord | None) -> RankRecord:
    """One rank's row; ``slowest_op`` only for a straggler (on the others the largest difference is waiting)."""
    row = breakdown_row(s.rank, s.breakdown, len(s.calls), hostname=s.hostname, device_name=s.device_name,
                        true_step_time_s=s.true_step_time_s)
    if straggler is not None:
        row.straggler, row.slowest_op, row.slowest_op_excess_s = True, straggler.slowest_op, straggler.slowest_op_excess_s
    return row


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


def write_merged(report: Report, out_dir: str | os.PathLike[str], *, png: bool = True, html: bool = True) -> list[Path]:
    """The merged report.json, with roofline.png and report.html unless left out; the paths written."""
    from roofline.render.outputs import report_renderers, write_outputs

    written, _ = write_outputs(report, Path(out_dir), report_renderers(png=png, html=html))
    return written

"""Analyse a job's ranks apart and keep only their summaries: in this process, in a pool of worker processes
(``--jobs N``), or on a Dask cluster (``--cluster ADDRESS``).

Each task is one rank: a trace file to analyse, or a RUN_DIR/rank{r} directory whose report.json and trace are
read. A worker returns the rank's ``RankSummary``, and its Report only when it is likely the base: rank 0, or the
first file (the base when two files claim one rank). Memory grows with the number of ranks by a summary each,
not a Report each, and no Report crosses a process boundary for nothing (pickling them was the serial part of
a pooled merge). A job with no rank 0 has its base rank analysed once more, here.

Dask distributed rather than Ray: it is plain Python processes talking to a scheduler, installs from PyPI with no
native runtime, and runs the same code on a laptop (LocalCluster) and on a cluster the user already runs (HPC
batch systems and Kubernetes have Dask deployments), which is where one trace per GPU of a large job sits. Its
workers must be able to import roofline and read the trace paths (a shared filesystem).
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Iterator

from roofline.distributed.rank_summary import RankSummary, summarize_rank
from roofline.errors import RooflineError
from roofline.report import Report

# (kind, path, rank or position, ranks in the job, ceilings file, partial)
Task = tuple[str, str, int, int, "str | None", bool]
CONNECT_TIMEOUT_S = 30


def summarize_task(task: Task, keep_report: bool = False) -> tuple[int, RankSummary, Report | None]:
    """(position or rank of the task, the rank's summary, its Report if ``keep_report`` or it may be the base) --
    run in a worker."""
    kind, path, number, ranks, ceilings_file, partial = task
    from roofline.distributed.merge import job_world

    if kind == "dir":
        from roofline.distributed.comm import read_timeline

        directory = Path(path)
        trace = next((directory / n for n in ("trace.json.gz", "trace.json") if (directory / n).is_file()), None)
        if trace is None:
            raise RooflineError(f"{directory} has a report.json but no trace.json.gz: profile that rank again")
        report = Report.load(directory / "report.json")
        timeline = read_timeline(trace)
        rank = number
    else:
        from roofline.analyze.trace_file import analyze_trace
        from roofline.capture.kineto import load_trace
        from roofline.distributed.comm import _int, timeline_of
        from roofline.distributed.merge import rank_of_trace

        loaded = load_trace(path)
        timeline = timeline_of(loaded)
        report = analyze_trace(loaded, ceilings_file, partial=partial)
        del loaded
        rank = rank_of_trace(timeline, path, number)
        info = timeline.metadata.get("distributedInfo")
        if isinstance(info, dict):
            report.environment.world_size = _int(info.get("world_size"))
            report.environment.backend = info.get("backend")
        report.environment.rank = rank
    world = job_world(ranks, [report.environment.world_size])
    keep = keep_report or rank == 0 or (kind == "trace" and number == 0)
    return number, summarize_rank(rank, report, timeline, world), report if keep else None


def summarize_all(tasks: list[Task], *, jobs: int = 1, cluster: str | None = None) -> tuple[list[RankSummary], Report]:
    """Every rank's summary (ranks by position when two trace files claim one) and the base rank's Report."""
    if not tasks:
        raise RooflineError("nothing to merge: no ranks")
    if cluster:
        results = _on_cluster(tasks, cluster)
    elif jobs > 1 and len(tasks) > 1:
        results = _in_processes(tasks, jobs)
    else:
        results = map(summarize_task, tasks)
    summaries: dict[int, RankSummary] = {}
    reports: dict[int, Report] = {}
    for number, summary, report in results:
        summaries[number] = summary
        if report is not None:
            reports[number] = report
    numbers = sorted(summaries)
    if len({summaries[n].rank for n in numbers}) != len(numbers):
        for position, number in enumerate(numbers):
            summaries[number].rank = position
    base = min(numbers, key=lambda n: summaries[n].rank)
    if base not in reports:
        task = next(t for t in tasks if t[2] == base)
        reports[base] = summarize_task(task, keep_report=True)[2]
    return [summaries[n] for n in numbers], reports[base]


def _in_processes(tasks: list[Task], jobs: int) -> Iterator[tuple[int, RankSummary, Report]]:
    """Results as workers finish them (not in task order), so finished Reports are dropped early. Fork where
    there is fork: workers start without importing roofline again."""
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=multiprocessing.get_context(method)) as pool:
        futures = [pool.submit(summarize_task, task) for task in tasks]
        try:
            for future in as_completed(futures):
                yield future.result()
        finally:
            for future in futures:
                future.cancel()


def _on_cluster(tasks: list[Task], address: str) -> Iterator[tuple[int, RankSummary, Report]]:
    try:
        from dask.distributed import Client, as_completed as dask_completed
    except ImportError:
        raise RooflineError("--cluster needs Dask distributed: pip install 'roofline[cluster]'") from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError) as exc:
        raise RooflineError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    with client:
        futures = client.map(summarize_task, tasks, pure=False)
        for future, result in dask_completed(futures, with_results=True):
            future.release()
            yield result


def default_jobs() -> int:
    """Worker processes for ``--jobs 0``: the CPUs this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:
        return os.cpu_count() or 1



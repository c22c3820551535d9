"""Analyse a job's ranks apart and keep only their summaries: in this process, in a pool of worker processes
(``--jobs N``), or on a Dask cluster (``--cluster ADDRESS``).

Each task is one rank: a trace file to analyse, or a RUN_DIR/rank{r} directory whose report.json and trace are
read. Tasks travel in chunks, large ones first and single ranks last (``chunked``): one round trip per chunk, not
per rank, and a worker slowed by a busy machine leaves the rest to the others. A worker reads its
ranks by path and sends back their ``RankSummary``s as MessagePack (rank_summary.encode_summaries): a few kB a
rank, never a Report. Memory grows with the number of ranks by a summary each.

The merge also needs one whole Report, the base rank's (the lowest). This process analyses the first task itself
while the workers run the others (it is rank 0 in every job whose files come in rank order), so no Report crosses
a process boundary; when the base turns out to be another task (rank 0 not first, no rank 0), that one is
analysed again here.

Dask distributed rather than Ray: it is plain Python processes talking to a scheduler, installs from PyPI with no
native runtime, and runs the same code on a laptop (LocalCluster) and on a cluster the user already runs (HPC
batch systems and Kubernetes have Dask deployments), which is where one trace per GPU of a large job sits. Its
workers must be able to import roofline and read the trace paths (a shared filesystem), and its scheduler to
import roofline too (Dask unpickles the task graph there); this process reads the first trace itself.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack
from pathlib import Path
from typing import Iterator

import msgspec

from roofline.distributed.rank_summary import RankSummary, decode_summaries, encode_summaries, summarize_rank
from roofline.errors import RooflineError
from roofline.gcpause import cyclic_gc_paused
from roofline.report import Report

# (kind, path, rank or position, ranks in the job, ceilings file, partial)
Task = tuple[str, str, int, int, "str | None", bool]
CONNECT_TIMEOUT_S = 30
CHUNKS_PER_WORKER = 4

_TASKS = msgspec.msgpack.Decoder(list[tuple[str, str, int, int, str | None, bool]])


def analyze_rank(task: Task) -> tuple[int, RankSummary, Report]:
    """(position or rank of the task, the rank's summary, its Report)."""
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
        rank, recorded = number, False
    else:
        from roofline.analyze.trace_file import analyze_trace
        from roofline.capture.kineto import load_trace
        from roofline.distributed.comm import _int, timeline_of
        from roofline.distributed.merge import rank_of_trace, recorded_rank

        loaded = load_trace(path)
        timeline = timeline_of(loaded)
        report = analyze_trace(loaded, ceilings_file, partial=partial)
        del loaded
        rank = rank_of_trace(timeline, path, number)
        recorded = recorded_rank(timeline) is not None
        info = timeline.metadata.get("distributedInfo")
        if isinstance(info, dict):
            report.environment.world_size = _int(info.get("world_size"))
            report.environment.backend = info.get("backend")
        report.environment.rank = rank
    world = job_world(ranks, [report.environment.world_size])
    summary = summarize_rank(rank, report, timeline, world)
    summary.rank_recorded = recorded
    return number, summary, report


def summarize_chunk(chunk: bytes) -> bytes:
    """Run in a worker: a MessagePack list of tasks in, their ``(number, RankSummary)`` pairs out (MessagePack).
    The cycle collector pauses meanwhile: each rank's analysis makes many short-lived acyclic objects, and the
    command's own process analyses with it paused too (cli/trace.py)."""
    with cyclic_gc_paused():
        out = []
        for task in _TASKS.decode(chunk):
            number, summary, _ = analyze_rank(task)
            out.append((number, summary))
        return encode_summaries(out)


def chunked(tasks: list[Task], workers: int) -> list[bytes]:
    """Contiguous runs of tasks, large first and single ranks last (guided self-scheduling: each chunk is the
    remaining tasks over ``workers * CHUNKS_PER_WORKER``), each encoded for the trip to a worker. Few round trips,
    and a worker that finishes early finds small chunks left, so none waits long on another's last chunk."""
    out, start = [], 0
    while start < len(tasks):
        size = -(-(len(tasks) - start) // (max(workers, 1) * CHUNKS_PER_WORKER))
        out.append(msgspec.msgpack.encode(tasks[start:start + size]))
        start += size
    return out


def summarize_all(tasks: list[Task], *, jobs: int = 1, cluster: str | None = None) -> tuple[list[RankSummary], Report]:
    """Every rank's summary (ranks by position when two trace files claim one) and the base rank's Report."""
    if not tasks:
        raise RooflineError("nothing to merge: no ranks")
    first, rest = tasks[0], tasks[1:]
    summaries: dict[int, RankSummary] = {}
    reports: dict[int, Report] = {}
    with ExitStack() as stack:
        if rest and cluster:
            batches: Iterator[bytes] | None = _on_cluster(rest, cluster, stack)
        elif rest and jobs > 1:
            batches = _in_processes(rest, jobs, stack)
        else:
            batches = None
        number, summary, report = analyze_rank(first)  # here, while the workers run the rest
        summaries[number], reports[number] = summary, report
        if batches is None:
            for task in rest:
                number, summary, report = analyze_rank(task)
                summaries[number] = summary
                if summary.rank == 0:
                    reports[number] = report
                del report
        else:
            for batch in batches:
                summaries.update(decode_summaries(batch))
    numbers = sorted(summaries)
    if len({summaries[n].rank for n in numbers}) != len(numbers):
        _refuse_more_traces_than_ranks([summaries[n] for n in numbers])
        _refuse_a_recorded_rank_twice([summaries[n] for n in numbers])
        for position, number in enumerate(numbers):
            summaries[number].rank = position
    base = min(numbers, key=lambda n: summaries[n].rank)
    if base not in reports:
        reports[base] = analyze_rank(next(t for t in tasks if t[2] == base))[2]
    return [summaries[n] for n in numbers], reports[base]


def _refuse_more_traces_than_ranks(found: list[RankSummary]) -> None:
    """Traces that claim a rank twice, more of them than the world size the job records: several profiler cycles
    (tensorboard_trace_handler writes a file per cycle) or runs of each rank, not ranks. Taken by position, a 2-rank
    job's two cycles made 'a 4-rank job'."""
    world = max((s.world_size or 0 for s in found), default=0)
    if not world or len(found) <= world:
        return
    ranks = Counter(s.rank for s in found)
    rank, times = ranks.most_common(1)[0]
    names = ", ".join(Path(s.path).name for s in found if s.rank == rank)
    raise RooflineError(f"{len(found)} traces for a job of {world} ranks: rank {rank} is in {times} of them ({names}): "
                        "several profiler cycles or runs of each rank (tensorboard_trace_handler writes a file per "
                        "cycle); give one trace per rank")


def _refuse_a_recorded_rank_twice(found: list[RankSummary]) -> None:
    """Two traces whose distributedInfo records the same rank are not two ranks of one job: torch.distributed gives
    each process of a job its own global rank, so they are two runs (or profiler cycles) of one rank, or ranks of
    two jobs. Taken by position, two cycles of rank 0 of a 4-rank job made 'ranks 0 and 1'. Ranks read from file
    names or positions (no distributedInfo) are still placed by position: node-local names repeat across nodes."""
    recorded = Counter(s.rank for s in found if s.rank_recorded)
    rank, times = recorded.most_common(1)[0] if recorded else (None, 0)
    if times < 2:
        return
    names = ", ".join(Path(s.path).name for s in found if s.rank_recorded and s.rank == rank)
    raise RooflineError(f"{times} traces record rank {rank} in their distributedInfo ({names}): one process's runs or "
                        "profiler cycles, or ranks of different jobs, not ranks of one job; give one trace per rank "
                        "of one run (compare runs with `roofline diff` of their report.json)")


def _in_processes(tasks: list[Task], jobs: int, stack: ExitStack) -> Iterator[bytes]:
    """Chunks submitted now, results as workers finish them. Fork where there is fork: workers start with roofline
    imported. The first error cancels the chunks not started."""
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    workers = min(jobs, len(tasks))
    pool = _cancelling_pool(workers, method, stack)
    futures = [pool.submit(summarize_chunk, chunk) for chunk in chunked(tasks, workers)]

    def results() -> Iterator[bytes]:
        for future in as_completed(futures):
            yield future.result()

    return results()


def _cancelling_pool(workers: int, method: str, stack: ExitStack) -> ProcessPoolExecutor:
    """A process pool shut down when ``stack`` closes, its tasks not yet started cancelled (an error or the end)."""
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method))
    stack.callback(pool.shutdown, wait=True, cancel_futures=True)
    return pool


def _on_cluster(tasks: list[Task], address: str, stack: ExitStack) -> Iterator[bytes]:
    """Chunks submitted to the cluster now (one Dask task each, a few per worker thread), results gathered as
    they finish. Importing Dask's client (~0.4 s) and connecting would leave the cluster idle: meanwhile a forked
    process analyses ranks from the end of the list here (``_Meanwhile``), and the cluster gets those it has not
    started. Connecting and submitting happen before this process analyses its own rank."""
    meanwhile = _Meanwhile(tasks, stack) if len(tasks) > 1 and _Meanwhile.can_start() else None
    try:
        from dask.distributed import Client, as_completed as dask_completed
    except ImportError:
        raise RooflineError("--cluster needs Dask distributed: pip install 'roofline[cluster]'") from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError) as exc:
        raise RooflineError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    stack.enter_context(client)
    left, here = meanwhile.stop() if meanwhile else (tasks, [])
    threads = sum(w.get("nthreads", 1) for w in client.scheduler_info().get("workers", {}).values())
    futures = client.map(summarize_chunk, chunked(left, max(threads, 1)), pure=False) if left else []
    stack.callback(_cancel, client, futures)

    def results() -> Iterator[bytes]:
        for future in here:
            yield future.result()
        if not futures:
            return
        try:
            for future, batch in dask_completed(futures, with_results=True):
                future.release()
                yield batch
        except RooflineError:
            raise
        except (ImportError, AttributeError, RuntimeError) as exc:
            if not _environment_mismatch(exc):
                raise
            raise RooflineError(f"the Dask cluster at {address} cannot run roofline's tasks ({exc!s:.200}): its "
                                "scheduler and workers need roofline installed, the same version as here") from None

    return results()


class _Meanwhile:
    """One forked process analysing ranks, one at a time from the end of the list, until ``stop``. Forked before
    Dask is imported, and only from a process with no other thread (a child would inherit their locks held): not
    from one whose Dask client (or anything else) already runs threads."""

    @staticmethod
    def can_start() -> bool:
        return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1

    def __init__(self, tasks: list[Task], stack: ExitStack) -> None:
        pool = _cancelling_pool(1, "fork", stack)
        self.pending = [(t, pool.submit(summarize_chunk, msgspec.msgpack.encode([t]))) for t in reversed(tasks)]

    def stop(self) -> tuple[list[Task], list]:
        """(the tasks not started here, in their order; the futures of those started here: done, running, or the
        one queued to its process)."""
        left, started = [], []
        for task, future in self.pending:
            if future.cancel():
                left.append(task)
            else:
                started.append(future)
        return left[::-1], started


def _environment_mismatch(exc: BaseException) -> bool:
    """Whether a cluster's error says that it lacks this roofline: Dask's scheduler unpickles the task graph (it
    needs roofline importable too) and its workers import the task's function."""
    text = str(exc)
    return ("roofline" in text and isinstance(exc, (ImportError, AttributeError))) or "deserializ" in text


def _cancel(client, futures: list) -> None:
    pending = [f for f in futures if not f.done()]
    if pending:
        client.cancel(pending)


def default_jobs() -> int:
    """Worker processes for ``--jobs 0``: the CPUs this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:
        return os.cpu_count() or 1

"""Ranks analysed apart (worker processes, a Dask cluster) merge into the same Report as ranks analysed here."""

import gzip
import json
import os
import subprocess
import sys

import pytest
from rank_traces import write_rank_trace as _trace

from roofline.analyze.trace_file import analyze_trace_file
from roofline.distributed import fanout
from roofline.distributed.merge import merge_run_dir, merge_trace_files
from roofline.distributed.rank_summary import decode_summaries, encode_summaries
from roofline.errors import RooflineError
from roofline.report import CollectiveSyncSite, Report


@pytest.fixture
def rank_traces(tmp_path):
    return [_trace(tmp_path / "r1.json.gz", 1, 500, 200, sleep_us=1500),
            _trace(tmp_path / "r0.json.gz", 0, 500, 1700),
            _trace(tmp_path / "r2.json.gz", 2, 520, 1650, world=3)]


def _same_report(a, b):
    da, db = json.loads(a.to_json()), json.loads(b.to_json())
    for d in (da, db):
        d["environment"].pop("timestamp", None)
    assert da == db


def test_worker_processes_merge_as_this_process_does(rank_traces):
    here = merge_trace_files(rank_traces)
    pooled = merge_trace_files(rank_traces, jobs=2)
    _same_report(here, pooled)
    assert [r.rank for r in pooled.ranks] == [0, 1, 2]
    assert pooled.environment.world_size == 3
    assert pooled.distributed.stragglers[0].rank == 1
    assert pooled.ranks[1].slowest_op.startswith("sleep")
    assert pooled.distributed.base_rank == 0 and pooled.environment.rank is None


def test_two_files_whose_names_give_one_rank_are_ranked_by_position(tmp_path):
    """Without distributedInfo a rank comes from the file name, and node-local names repeat across nodes."""
    for node in ("node0", "node1"):
        (tmp_path / node).mkdir()
    paths = [_trace(tmp_path / "node0" / "rank0.json.gz", 0, 500, 300, distributed=False),
             _trace(tmp_path / "node1" / "rank0.json.gz", 0, 900, 100, distributed=False)]
    for path in paths:
        _with_collective(path)
    merged = merge_trace_files(paths, jobs=2)
    assert [r.rank for r in merged.ranks] == [0, 1]
    assert merged.distributed.base_rank == 0 and merged.ranks[0].compute_time_s < merged.ranks[1].compute_time_s


def test_two_files_recording_one_rank_are_refused_naming_them(tmp_path):
    """distributedInfo's rank is the process's own global rank: two traces recording rank 0 of a 4-rank job are
    two runs (or cycles) of rank 0, which by position were merged as 'ranks 0 and 1'."""
    paths = [_trace(tmp_path / "x.json.gz", 0, 500, 300, world=4), _trace(tmp_path / "y.json.gz", 0, 900, 100, world=4)]
    for jobs in (1, 2):
        with pytest.raises(RooflineError, match=r"2 traces record rank 0 in their distributedInfo \(x.json.gz, "
                                                r"y.json.gz\)"):
            merge_trace_files(paths, jobs=jobs)


def _with_collective(path):
    """Put back the all-reduce kernel a one-process trace leaves out (the job shows in its collectives only)."""
    payload = json.loads(gzip.decompress(open(path, "rb").read()))
    payload["traceEvents"].append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                                   "pid": 0, "tid": 13, "ts": 3000, "dur": 100,
                                   "args": {"device": 0, "stream": 13, "correlation": 2}})
    open(path, "wb").write(gzip.compress(json.dumps(payload).encode()))


def test_a_job_without_rank_0_takes_its_lowest_rank_as_the_base(tmp_path):
    paths = [_trace(tmp_path / "r2.json.gz", 2, 500, 300, world=4), _trace(tmp_path / "r1.json.gz", 1, 900, 100, world=4)]
    merged = merge_trace_files(paths, jobs=2)
    assert merged.distributed.base_rank == 1 and merged.workload == "r1.json.gz"
    assert [r.rank for r in merged.ranks] == [1, 2]


def test_run_dir_merge_in_worker_processes(tmp_path, rank_traces):
    for path in rank_traces:
        rank = int(json.loads(gzip.decompress(open(path, "rb").read()))["distributedInfo"]["rank"])
        directory = tmp_path / "run" / f"rank{rank}"
        directory.mkdir(parents=True)
        analyze_trace_file(path).save(directory / "report.json")
        (directory / "trace.json.gz").write_bytes(open(path, "rb").read())
    _same_report(merge_run_dir(tmp_path / "run"), merge_run_dir(tmp_path / "run", jobs=2))


def test_a_bad_rank_in_a_worker_is_one_clear_error(tmp_path, rank_traces):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(RooflineError, match="no traceEvents"):
        merge_trace_files(rank_traces + [str(bad)], jobs=2)


def test_ranks_analysed_here_while_dask_loads_are_not_sent_to_the_cluster(tmp_path):
    """Stopped at once and after its process has finished some: every task is either left for the cluster (in
    its order) or started here, never both, never neither. (Before the tests that start a LocalCluster here.)"""
    from contextlib import ExitStack

    if not fanout._Meanwhile.can_start():
        pytest.skip("another thread runs here (a LocalCluster's): forking would be unsafe")
    paths = [_trace(tmp_path / f"r{r}.json.gz", r, 500, 1700, world=6) for r in range(6)]
    tasks = [("trace", p, i, 6, None, False) for i, p in enumerate(paths)]
    for settle in (False, True):
        with ExitStack() as stack:
            meanwhile = fanout._Meanwhile(tasks, stack)
            if settle:
                meanwhile.pending[0][1].result()
            left, started = meanwhile.stop()
            numbers = sorted([t[2] for t in left] + [n for f in started for n, _ in decode_summaries(f.result())])
        assert numbers == list(range(6)) and left == sorted(left, key=lambda t: t[2])
        assert not settle or [t[2] for t in left] != list(range(6))


@pytest.fixture(scope="module")
def dask_scheduler():
    """A LocalCluster of two single-threaded worker processes, as `--cluster` meets an existing one."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster:
        yield cluster.scheduler_address


def test_dask_cluster_merges_as_this_process_does(rank_traces, dask_scheduler):
    merged = merge_trace_files(rank_traces, cluster=dask_scheduler)
    _same_report(merge_trace_files(rank_traces), merged)
    assert merged.distributed.stragglers[0].rank == 1


def test_a_fresh_process_analyses_ranks_while_dask_loads_and_merges_the_same(tmp_path, rank_traces, dask_scheduler):
    """As the CLI runs: no thread before Dask's client, so a forked process analyses ranks meanwhile."""
    code = ("import sys\nfrom roofline.distributed import fanout\n"
            "from roofline.distributed.merge import merge_trace_files\n"
            "stop = fanout._Meanwhile.stop\n"
            "def counted(self):\n    left, started = stop(self)\n    print(len(left) + len(started), file=sys.stderr)\n"
            "    return left, started\n"
            "fanout._Meanwhile.stop = counted\n"
            f"merge_trace_files({rank_traces!r}, cluster={dask_scheduler!r}).save({str(tmp_path / 'r.json')!r})")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.stderr.strip().splitlines()[-1] == "2"  # the two ranks after the first went through it
    _same_report(merge_trace_files(rank_traces), Report.load(tmp_path / "r.json"))


def test_many_ranks_in_chunks_merge_identically_here_in_processes_and_on_a_cluster(tmp_path, dask_scheduler,
                                                                                  monkeypatch):
    """Ten ranks, rank 3 the straggler, rank 0 not the first file (so the base is analysed again here), sent in
    uneven chunks: the three ways give one report, its exposed communication computed from the summaries."""
    monkeypatch.setattr(fanout, "CHUNKS_PER_WORKER", 2)
    paths = [_trace(tmp_path / f"r{r}.json.gz", r, 500, 200 if r == 3 else 1700, world=10,
                    sleep_us=1500 if r == 3 else 0) for r in (5, 0, 1, 2, 3, 4, 6, 7, 8, 9)]
    here = merge_trace_files(paths)
    pooled = merge_trace_files(paths, jobs=2)
    clustered = merge_trace_files(paths, cluster=dask_scheduler)
    _same_report(here, pooled)
    _same_report(here, clustered)
    assert [r.rank for r in here.ranks] == list(range(10))
    assert [s.rank for s in here.distributed.stragglers] == [3]
    assert here.distributed.base_rank == 0 and here.workload == "r0.json.gz"
    exposed = [r.exposed_communication_s for r in here.ranks]
    assert exposed[3] == pytest.approx(200e-6) and exposed[0] == exposed[9] == pytest.approx(1700e-6)


def test_chunks_are_contiguous_shrink_to_single_ranks_and_cover_every_task_once():
    tasks = [("trace", f"r{i}.json.gz", i, 255, None, False) for i in range(255)]
    sizes = [len(fanout._TASKS.decode(c)) for c in fanout.chunked(tasks, 2)]
    assert sizes[0] == 32 and sizes[-1] == 1 and sizes == sorted(sizes, reverse=True)
    assert 20 < len(sizes) < 50  # a few dozen round trips, not 255
    assert [t for c in fanout.chunked(tasks, 2) for t in fanout._TASKS.decode(c)] == tasks
    assert len(fanout.chunked(tasks[:3], 2)) == 3


def test_a_summary_survives_its_trip_from_a_worker_unchanged(rank_traces):
    number, summary, _ = fanout.analyze_rank(("trace", rank_traces[0], 0, 3, None, False))
    summary.syncs.append(CollectiveSyncSite("train.py:12", ["aten::item"], ["c10d::allreduce_"], 2, 1e-3, 1.0))
    assert summary.calls and summary.costs and summary.breakdown.steps == 1
    decoded = decode_summaries(encode_summaries([(number, summary)]))
    assert decoded == [(number, summary)]
    assert isinstance(decoded[0][1].syncs[0], CollectiveSyncSite)


def test_unreachable_cluster_is_one_clear_error(rank_traces, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(fanout, "CONNECT_TIMEOUT_S", 1)
    with pytest.raises(RooflineError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        merge_trace_files(rank_traces, cluster="tcp://127.0.0.1:9")


def test_merging_traces_never_imports_torch(rank_traces):
    """torch costs ~2 s and ~750 MB per process; a worker per rank would pay it for nothing (the collective ceilings'
    cache path once imported device/ceilings.py, which imports torch)."""
    code = ("import sys\nfrom roofline.distributed.merge import merge_trace_files\n"
            f"merge_trace_files({rank_traces!r})\nprint('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.stdout.strip() == "False"


def test_a_cluster_without_this_roofline_is_named_as_such():
    """The errors Dask raised when its scheduler had another roofline (no summarize_chunk) or none."""
    assert fanout._environment_mismatch(RuntimeError("Error during deserialization of the task graph. This frequently"))
    assert fanout._environment_mismatch(AttributeError(
        "Can't get attribute 'summarize_chunk' on <module 'roofline.distributed.fanout'>"))
    assert fanout._environment_mismatch(ModuleNotFoundError("No module named 'roofline'"))
    assert not fanout._environment_mismatch(AttributeError("'NoneType' object has no attribute 'ts'"))

"""One rank's trace of a job whose collectives ran on the host (gloo on the CPU): the report carries the rank's own
row (communication once per collective, hidden or exposed) and the doctor judges its exposed time."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from roofline.analyze.trace_file import analyze_trace_file
from roofline.doctor import diagnose
from roofline.intervals import length, union

DATA = Path(__file__).resolve().parents[1] / "data" / "devtraces"
GLOO = "torch2.1.2_cpu_ddp_gloo_rank{}.pt.trace.json.gz"


def x(cat, name, ts, dur, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _collective_spans_per_step(path: Path) -> float:
    """The union of the trace's gloo spans and c10d calls inside its steps, per step, read from the raw JSON."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name", "").startswith("ProfilerStep#")]
    lo, hi = min(s for s, _ in steps), max(e for _, e in steps)
    spans = [(max(e["ts"], lo), min(e["ts"] + e["dur"], hi)) for e in events
             if e.get("ph") == "X" and e["name"].startswith(("gloo:", "c10d::")) and e["ts"] < hi]
    return length(union(spans)) / 1e6 / len(steps)


@pytest.mark.parametrize("rank, severity", [(0, "warning"), (1, "critical")])
def test_a_gloo_rank_alone_gets_its_exposed_communication(rank, severity):
    path = DATA / GLOO.format(rank)
    report = analyze_trace_file(path)
    [row] = report.ranks
    assert row.rank == rank and row.profiled_steps == 2 and row.collectives_per_step == 1.0
    assert row.communication_time_s == pytest.approx(_collective_spans_per_step(path))
    assert row.hidden_communication_share == 0.0  # DDP's one bucket is all-reduced after the whole backward
    assert row.exposed_communication_s == pytest.approx(row.communication_time_s)
    [finding] = [f for f in diagnose(report) if f.rule == "exposed-communication"]
    assert finding.severity == severity and finding.locations == ["c10d::allreduce_"]
    assert finding.evidence["ranks_traced"] == 1 and finding.evidence["backend"] == "gloo"
    assert "wait for slower ranks" in finding.title and "roofline trace" in finding.fix
    assert finding.estimated_savings_s == pytest.approx(2 * row.exposed_communication_s)


def test_the_merge_replaces_the_one_rank_row_and_judges_the_least_exposed_rank():
    from roofline.distributed.merge import merge_trace_files

    report = merge_trace_files([DATA / GLOO.format(r) for r in (0, 1)])
    report.findings = diagnose(report)
    assert [r.rank for r in report.ranks] == [0, 1]
    [finding] = [f for f in report.findings if f.rule == "exposed-communication"]
    assert finding.evidence["rank"] == 0 and "ranks_traced" not in finding.evidence


def _write(tmp_path, events, **meta):
    path = tmp_path / "rank0.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, **meta}))
    return path


def test_collectives_at_once_on_two_gloo_threads_count_once(tmp_path):
    """Two buckets all-reduced side by side on gloo's two worker threads: 300 us of wall time in communication,
    not the 550 us their spans sum to; the 100 us an op ran beside them is hidden."""
    events = [x("user_annotation", "ProfilerStep#1", 0, 1000),
              x("cpu_op", "aten::mm", 120, 100, **{"Input Dims": [[64, 64], [64, 64]],
                                                   "Input type": ["float", "float"]}),
              x("cpu_op", "c10d::allreduce_", 100, 5), x("cpu_op", "c10d::allreduce_", 110, 5),
              x("user_annotation", "gloo:all_reduce", 100, 300, tid=2),
              x("user_annotation", "gloo:all_reduce", 150, 250, tid=3)]
    report = analyze_trace_file(_write(tmp_path, events, distributedInfo={"backend": "gloo", "rank": 0,
                                                                           "world_size": 2}))
    [row] = report.ranks
    assert row.communication_time_s == pytest.approx(300e-6)
    assert row.hidden_communication_share == pytest.approx(100 / 300)
    assert row.exposed_communication_s == pytest.approx(200e-6)
    assert report.summary.notes[-1] == ("collectives (backend gloo, rank 0 of 2): gloo:all_reduce x2 (300 us of wall "
                                        "time; 550 us summed over the 2 threads that ran them at once), "
                                        "c10d::allreduce_ x2 (10 us host time)")
    [finding] = [f for f in diagnose(report) if f.rule == "exposed-communication"]
    assert finding.evidence["exposed_communication_s"] == pytest.approx(200e-6)


def test_no_row_without_ops_beside_the_collectives_and_a_gpu_rank_judged_on_its_kernels(tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "distributed"))
    from rank_traces import write_rank_trace

    spans_only = [x("user_annotation", "ProfilerStep#1", 0, 1000), x("user_annotation", "gloo:all_reduce", 10, 900,
                                                                     tid=2)]
    report = analyze_trace_file(_write(tmp_path, spans_only, distributedInfo={"backend": "gloo", "rank": 0}))
    assert report.ranks == [] and not diagnose(report, rules=["exposed-communication"])
    gpu = analyze_trace_file(write_rank_trace(tmp_path / "rank1.json.gz", 1, compute_us=500, comm_us=1600))
    [row] = gpu.ranks  # tests/analyze/test_one_gpu_rank_comm.py: the NCCL kernels on the device timeline
    assert row.rank == 1 and row.communication_time_s > row.compute_time_s
    [finding] = diagnose(gpu, rules=["exposed-communication"])
    assert finding.evidence["ranks_traced"] == 1

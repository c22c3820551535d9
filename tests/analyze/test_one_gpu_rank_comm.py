"""One GPU rank's trace with NCCL kernels: the report carries the rank's own row (communication on the device
timeline, hidden where a compute kernel ran beside it, exposed where none did) and the doctor judges its exposed
time, saying one rank cannot tell the transfer from a wait for slower ranks. HTA's NCCL rank traces read "no
communication finding" before, with up to a quarter of their step in exposed NCCL kernels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.analyze.trace_file import analyze_trace_file
from roofline.doctor import diagnose
from roofline.intervals import intersection, length, union

HTA = Path(__file__).resolve().parents[1] / "data" / "hta" / "trace_filter"


def _x(cat, name, ts, dur, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _launched(op, ts, dur, correlation, kernel, k_ts, k_dur, stream, **shapes):
    return [_x("cpu_op", op, ts, dur, **shapes),
            _x("cuda_runtime", "cudaLaunchKernel", ts + 1, 3, correlation=correlation),
            {**_x("kernel", kernel, k_ts, k_dur, tid=stream, correlation=correlation, stream=stream, device=0),
             "pid": 0}]


def _rank_trace(tmp_path, nccl_start_us: float) -> Path:
    """Two steps of 1,000 us: a 400 us GEMM on stream 7 at 100 us, a 300 us NCCL all-reduce on stream 20."""
    mm = {"Input Dims": [[1024, 1024], [1024, 1024]], "Input type": ["float", "float"]}
    events = []
    for step, base in enumerate((0, 1000)):
        events.append(_x("user_annotation", f"ProfilerStep#{step}", base, 1000))
        events += _launched("aten::mm", base + 10, 20, 2 * step + 1, "sm80_xmma_gemm_f32f32", base + 100, 400, 7, **mm)
        events += _launched("c10d::allreduce_", base + 40, 20, 2 * step + 2,
                            "ncclDevKernel_AllReduce_Sum_f32_RING_LL", base + nccl_start_us, 300, 20)
    path = tmp_path / "rank0.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events,
                                "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8}}))
    return path


@pytest.mark.parametrize("nccl_start_us, exposed_us", [(600, 300), (400, 200), (150, 0)])
def test_a_gpu_rank_alone_gets_its_exposed_nccl_time(tmp_path, nccl_start_us, exposed_us):
    report = analyze_trace_file(_rank_trace(tmp_path, nccl_start_us))
    [row] = report.ranks
    assert row.rank == 0 and row.profiled_steps == 2 and row.collectives_per_step == 1.0
    assert row.communication_time_s == pytest.approx(300e-6)
    assert row.exposed_communication_s == pytest.approx(exposed_us * 1e-6)
    assert row.hidden_communication_share == pytest.approx(1 - exposed_us / 300)
    found = [f for f in diagnose(report) if f.rule == "exposed-communication"]
    if exposed_us / 1000 < 0.05:
        assert not found
        return
    [finding] = found
    assert finding.evidence["ranks_traced"] == 1 and finding.evidence["backend"] == "nccl"
    assert finding.locations == ["c10d::allreduce_"] and "wait for slower ranks" in finding.title
    assert finding.estimated_savings_s == pytest.approx(2 * exposed_us * 1e-6)


def test_a_gpu_trace_without_nccl_kernels_has_no_rank_row(tmp_path):
    path = _rank_trace(tmp_path, 600)
    data = json.loads(path.read_text())
    for event in data["traceEvents"]:
        event["name"] = event["name"].replace("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "vectorized_elementwise")
    path.write_text(json.dumps(data))
    assert analyze_trace_file(path).ranks == []


def _device_split(path: Path) -> tuple[float, float]:
    """NCCL kernel time and its part beside other device events, inside the trace's ProfilerSteps, from the raw
    JSON."""
    import gzip

    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name", "").startswith("ProfilerStep#")]
    lo, hi = min(s for s, _ in steps), max(e for _, e in steps)
    device = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    hi = max([hi] + [e["ts"] + e["dur"] for e in device if e["ts"] < hi])

    def spans(nccl):
        return union([(max(e["ts"], lo), min(e["ts"] + e["dur"], hi)) for e in device
                      if ("nccl" in e["name"].lower()) == nccl and e["ts"] < hi and e["ts"] + e["dur"] > lo])

    comm, work = spans(True), spans(False)
    return length(comm), length(intersection(comm, work))


def test_hta_nccl_rank_trace_gets_its_row_from_its_kernels():
    path = HTA / "sampled_rank-0.json.gz"
    report = analyze_trace_file(path)
    [row] = report.ranks
    comm_us, hidden_us = _device_split(path)
    steps = row.profiled_steps
    assert comm_us > 0
    assert row.communication_time_s == pytest.approx(comm_us / 1e6 / steps)
    assert row.exposed_communication_s == pytest.approx((comm_us - hidden_us) / 1e6 / steps)

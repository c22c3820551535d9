"""benchmarks/learn_efficiency.py's H200 sources: the saved ete runs' report archives (tgz or xz parts), one run left
out on request, and the shipped CPU entries kept when not measuring again (issue 21)."""

from __future__ import annotations

import pytest

from benchmark_scripts import load_benchmark
from roofline.analyze.efficiency import EfficiencyTable, Entry, shipped_table
from roofline.report import Ceilings, OpRecord, Report

H200 = Ceilings(device="cuda", device_name="GPU X", memory_bandwidth_bytes_per_s=4e12,
                peak_flops_per_s={"float32": 5e13, "bfloat16": 7.5e14})


@pytest.fixture(scope="module")
def learn():
    return load_benchmark("learn_efficiency")


def _run(root, name: str, time_s: float):
    from ete_common import pack_reports

    staging, out = root / "staging" / name, root / "runs" / name
    staging.mkdir(parents=True)
    out.mkdir(parents=True)
    op = OpRecord(name="aten::mm", dtype="float32", flops=2e9, bytes=1.2e7, time_s=time_s, count=1)
    Report(ceilings=H200, ops=[op]).save(staging / "mm.round1.report.json")
    pack_reports(sorted(staging.glob("*.json")), out)
    return f"runs/{name}"


def test_the_saved_runs_fp32_matmuls_are_learned_but_the_run_left_out(learn, tmp_path, monkeypatch):
    monkeypatch.setattr(learn, "REPO", tmp_path)
    runs = (_run(tmp_path, "a", 8e-5), _run(tmp_path, "b", 4e-5))  # 4e-5 s of roofline time: 0.5 and 1.0
    monkeypatch.setattr(learn, "ETE_RUNS", runs)
    monkeypatch.setattr(learn, "committed_reports", lambda: iter(()))
    labels = [label for label, _ in learn.gpu_reports()]
    assert labels == ["runs/a/mm.round1.report.json", "runs/b/mm.round1.report.json"]
    table = learn.learn_table(learn.gpu_reports(leave_out="a"))
    assert table.entries["GPU X"]["mm|1e-05|float32"].q50 == pytest.approx(1.0) and len(table.sources) == 1
    # the shipped CPU entries kept, the GPU ones the learned table's
    both = learn.with_shipped_cpu(EfficiencyTable({"GPU X": {"k": Entry(1, 1, 1, 1)}}, ["s"]))
    assert both.entries["GPU X"] == {"k": Entry(1, 1, 1, 1)} and both.entries["cpu"] == shipped_table().entries["cpu"]
    assert "NVIDIA H200" not in both.entries and any(s.startswith("cpu:") for s in both.sources)


def test_the_leave_one_run_out_check_compares_against_the_lookup_order_of_before():
    loro = load_benchmark("ete_efficiency_loro")
    half = OpRecord(name="aten::addmm", dtype="bfloat16", flops=1.0, bytes=1.0)
    assert loro.keys_before(half, 2e-6) == ["addmm|1e-06|bfloat16", "addmm|1e-06", "matmul|1e-06|bfloat16",
                                            "matmul|1e-06", "*|1e-06"]
    assert loro.keys_kind_first(half, 2e-6)[:3] == ["addmm|1e-06|bfloat16", "addmm|1e-06|16-bit", "addmm|1e-06"]
    table = EfficiencyTable({"GPU X": {"addmm|1e-06": Entry(0.1, 0.1, 0.1, 1),
                                       "matmul|1e-06|bfloat16": Entry(0.4, 0.4, 0.4, 9)}})
    assert loro.lookup_with(loro.keys_before)(table, H200, half, 2e-6).q50 == 0.1

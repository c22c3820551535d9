"""benchmarks/cuda_graphs_gpu.py off the GPU: it writes its summary whatever happens to each case (skipped on a CPU,
an error kept with its traceback while the other cases go on), and refuses an unknown case."""

from __future__ import annotations

import json

import torch

from benchmark_scripts import load_benchmark


def test_on_a_cpu_every_case_is_skipped_and_the_summary_written(tmp_path, monkeypatch, capsys):
    bench = load_benchmark("cuda_graphs_gpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert bench.main([str(tmp_path), "--cases", "hand_graph_analyze,reduce_overhead_profile"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["cases"] == {"hand_graph_analyze": {"skipped": "needs a CUDA GPU"},
                                "reduce_overhead_profile": {"skipped": "needs a CUDA GPU"}}
    assert bench.main([str(tmp_path), "--cases", "no_such_case"]) == 2


def test_a_failing_case_keeps_its_error_and_the_next_case_still_runs(tmp_path, monkeypatch):
    bench = load_benchmark("cuda_graphs_gpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "stand-in")
    monkeypatch.setattr(bench, "_ceilings", lambda: object())
    ran = []

    def boom(ceilings):
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    def later(ceilings):
        ran.append("later")
        raise ValueError("second")

    monkeypatch.setattr(bench, "cases", lambda *a: {"boom": boom, "later": later})
    assert bench.main([str(tmp_path)]) == 0
    cases = json.loads((tmp_path / "summary.json").read_text())["cases"]
    assert cases["boom"]["error"].startswith("RuntimeError: CUDA error") and "Traceback" in cases["boom"]["traceback"]
    assert ran == ["later"] and cases["later"]["error"] == "ValueError: second"

"""The hand-written Triton decode as rows of `roofline lab` (lab/fast_rows.py): skipped with the reason off CUDA,
rendered with tokens, roof share, token agreement and the kernel-class breakdown, and measured on a GPU."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch

from roofline.cli import main
from roofline.lab import runner
from roofline.lab.bench import PeakDecode
from roofline.lab.fast_rows import (FAST, FAST_L2, FAST_PDL, FAST_PDL_V2, FAST_PERSIST, FAST_PREFETCH,
                                   FastDecodeRow, measure_fast_decode)
from roofline.lab.render import decode_rows_table, kernel_class_tables
from roofline.report import KernelClasses, KernelClassTime


def test_decode_only_on_cpu_says_why_the_triton_rows_are_skipped(tmp_path, monkeypatch, cpu_ceilings,
                                                                  capsys):
    plan = runner.LabPlan(2, 8, 4, 1, 0, False, [1, 2], 8, 4,
                          config_overrides={"dim": 64, "n_layers": 1, "n_heads": 4, "n_kv_heads": 2, "ffn_dim": 128,
                                            "vocab_size": 1024})
    monkeypatch.setattr(runner, "make_plan", lambda model, device, quick: plan)
    monkeypatch.setattr(runner, "measured_ceilings", lambda device, ceilings_file, progress: cpu_ceilings)
    out = tmp_path / "lab"
    # No WikiText-2 needed: the batch-1 decode runs on a seeded random prompt.
    assert main(["lab", "--quick", "--device", "cpu", "--decode-only", "--data", str(tmp_path / "none"),
                 "-o", str(out)]) == 0
    data = json.loads((out / "lab.json").read_text())
    assert data["stages"] == [] and data["sweep"] is None and data["doctor"] == {"naive": None, "fixed": None}
    fast = data["peak"]["fast"]
    assert [r["title"] for r in fast] == [FAST, FAST_PDL, FAST_PDL_V2, FAST_PREFETCH, FAST_L2, FAST_PERSIST]
    assert all(r["skipped"].startswith("skipped: Triton's kernels need a CUDA GPU (this run is on cpu)") for r in fast)
    assert all(r["tokens_per_s"] is None for r in fast)
    markdown = (out / "lab.md").read_text()
    assert "### Hand-written decode kernels (Triton), batch 1" in markdown and "| + Triton GEMV | - |" in markdown
    assert "## Stages" not in markdown and "## The doctor" not in markdown and "Prompt: a seeded random prompt of 8 tokens, then 4 greedy" in markdown
    printed = capsys.readouterr().out
    assert "+ Triton GEMV: skipped: Triton's kernels need a CUDA GPU" in printed


def _peak(fast) -> SimpleNamespace:
    peak = PeakDecode(tokens_per_s=250.0, ms_per_token=4.0, bytes_per_token=16.1e9, theoretical_tokens_per_s=288.0,
                      share_of_memory_roof=250 / 288, bandwidth_bytes_per_s=4.64e12, context=256,
                      prefill_tokens_per_s=1e4, prefill_ms=25.6, compiled=True, fast=fast)
    return SimpleNamespace(peak=peak)


def test_rows_show_speed_roof_share_agreement_and_kernel_classes():
    classes = KernelClasses(
        classes=[KernelClassTime("matrix products", time_s=3.3e-3, kernels=160, bytes=15.0e9,
                                 achieved_bytes_per_s=4.5e12, share_of_roof=0.97),
                 KernelClassTime("attention", time_s=0.1e-3, kernels=32, bytes=0.07e9, achieved_bytes_per_s=0.7e12,
                                 share_of_roof=0.15)],
        kernel_time_s=3.4e-3, span_s=3.9e-3, gaps_s=0.5e-3, overlapped_s=0.02e-3, unit="token", per_step=64)
    rows = [FastDecodeRow(FAST, 242.0, 4.13, 16.1e9, 0.84, 64, 64, None, None, classes, 0.73e-3),
            FastDecodeRow(FAST_PDL, 245.0, 4.08, 16.1e9, 0.85, 64, 17, 17, 0.5, classes, 0.68e-3)]
    result = _peak(rows)
    table = decode_rows_table(result)
    assert "| + Triton GEMV | 242.0 | 4.130 | 16.1 GB | 84.0% | yes, 64/64 as the eager fixed model |" in table
    assert "17/64: first differs at token 17; the eager model's top-2 logits 0.5 ulp apart there" in table
    assert "| fixed, compiled | 250.0 | 4.000 |" in table
    classes_md = kernel_class_tables(result)
    assert "| + Triton GEMV | matrix products | 3,300.0 | 160.0 | 15 GB | 4.5 TB/s | 97.0% |" in classes_md
    assert "| + Triton GEMV | between kernels in the CUDA graph (graphed time - kernel time) | 730.0 |" in classes_md
    assert "ran under an earlier kernel (PDL) | 20.0 |" in classes_md
    skipped = _peak([FastDecodeRow(FAST, skipped="skipped: Triton is not importable here")])
    assert "| + Triton GEMV | - | - | - | - | skipped: Triton is not importable here |" in decode_rows_table(skipped)
    assert kernel_class_tables(skipped) == ""


@pytest.mark.cuda
def test_fast_rows_on_a_gpu():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    from roofline.models.llama import LlamaConfig, build_llama
    from roofline.report import Ceilings

    micro = LlamaConfig(dim=128, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=192, vocab_size=256)
    model = build_llama(micro, dtype=torch.float16, device=torch.device("cuda"), seed=3)
    model.setup_caches(1, 96)
    ceilings = Ceilings(device="cuda", memory_bandwidth_bytes_per_s=4.6e12, peak_flops_per_s={"float16": 7e14})
    rows = measure_fast_decode(model, ceilings, context=32, steps=16, warmup=2)
    assert [r.title for r in rows] == [FAST, FAST_PDL, FAST_PDL_V2, FAST_PREFETCH, FAST_L2, FAST_PERSIST]
    for r in rows:
        if r.title == FAST_PERSIST and r.skipped:
            # the tuning kept the three kernels: the row says so with both steps' figures (measured on the H200,
            # 2026-12-02: 18.9 us against the fastest persistent candidate's 20.5 us at this micro size)
            assert r.skipped.startswith("not measured: the tuning kept the three kernels") and " us" in r.skipped
            continue
        assert not r.skipped, r.skipped
        assert r.tokens_per_s > 0 and r.compared_tokens == 16
        assert r.first_divergence is None or r.logit_gap_ulps is not None
        by = {c.name: c for c in r.breakdown.classes}
        # 4 products a layer + the head (the persistent row: qkv and the persistent kernel where it was chosen)
        assert by["matrix products"].kernels in (pytest.approx(2 * 4 + 1), pytest.approx(2 * 2 + 1))
        assert by["matrix products"].achieved_bytes_per_s > 0 and by["attention"].kernels == pytest.approx(2)


def test_the_gpu_suite_measures_the_shared_memory_roof_and_runs_the_rows_of_each_model(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmark_scripts import load_benchmark

    stages = load_benchmark("gpu_suite").stages("issue19-20", tmp_path)
    names = [s[0] for s in stages]
    assert names == ["env", "ceilings", "cuda_tests_issue19_20", "lab_decode_llama-tiny", "lab_decode_llama-1b",
                     "lab_decode_llama-8b"]
    assert sum(s[2] for s in stages) <= 570  # one device call (600 s at most), with room for its start
    repo = Path(__file__).resolve().parents[2]
    assert all((repo / arg).is_file() for arg in stages[2][1] if arg.startswith("tests/"))
    lab = stages[-1][1]
    assert lab[lab.index("--ceilings") + 1] == str(tmp_path / "ceilings_h200.json") and "--decode-only" in lab


def test_persistent_row_kept_three_kernels_note_gives_the_tunings_figures():
    from roofline.lab.fast_rows import kept_three_kernels

    note = kept_three_kernels([({"persistent": None}, 768.1), ({"wo": [2, 2048]}, 817.9),
                               ({"wo": [2, 512]}, 3683.8), ({"wo": [4, 512]}, float("inf"))])
    assert note.startswith("not measured: the tuning kept the three kernels")
    assert "768.1 us" in note and "fastest of 2 working candidates 817.9 us" in note and "1 failed" in note
    assert kept_three_kernels([({"persistent": None}, 700.0), ({"wo": [2, 512]}, float("inf"))]).count(
        "no candidate ran") == 1

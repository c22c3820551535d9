"""Issue 19's second attention kernel beside the first: the attention benchmark's --v2 columns (in Triton's
interpreter at tiny sizes), the issue19-kernels suite's stages, and its summary table from the stages' JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.lab.kernels import triton_available

from benchmark_scripts import BENCHMARKS, load_benchmark

SRC = Path(__file__).resolve().parents[2] / "src"


def test_the_attention_benchmark_times_version_2_at_its_own_slices_beside_the_current_kernel(tmp_path):
    if not triton_available():
        pytest.skip("Triton is not installed")
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "decode_attention_context.py"), str(tmp_path / "out"), "--device", "cpu",
         "--shape", "4", "2", "32", "--context", "40", "--max-seqs", "96", "--t-per-split", "16", "--v2",
         "--v2-t-per-split", "16", "64", "--layers", "1", "--replays", "1", "--rounds", "1"],
        env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads((tmp_path / "out" / "decode_attention_context.json").read_text())["rows"]
    assert [(r["t_per_split"], r["kernel"]) for r in rows] == [(16, "new"), (16, "v2"), (64, "v2")]
    for row in rows:
        assert "error" not in row, row
        assert row["max_abs_error_vs_torch"] < 2e-3 and row["graph_max_abs_error_vs_torch"] < 2e-3
        assert row["counters_reset"] and row["median_us"] > 0
    assert rows[2]["live_programs"] == 2  # 64-slot slices at slot 40: one live slice per KV head, no merge
    table = done.stdout.strip().splitlines()
    assert table[-5].startswith("| 96 | 64 | 4 (2) | - |")  # the current kernel is not timed at 64 here
    assert table[-1].startswith("| 96 | ") and table[-1].count("(16)") == 1


def test_the_issue19_kernels_suite_fits_one_device_call_and_names_files_that_exist(tmp_path):
    suite = load_benchmark("gpu_suite")
    stages = suite.stages("issue19-kernels", tmp_path)
    assert [s[0] for s in stages] == ["env", "attention_ctx256", "attention_ctx1024", "decode_fast_llama-1b",
                                      "lab_decode_llama-1b", "summary"]
    assert sum(s[2] for s in stages) <= 470  # under 8 minutes, whatever each stage takes
    repo = Path(__file__).resolve().parents[2]
    assert all((repo / arg).is_file() for _, argv, _ in stages for arg in argv if arg.startswith("benchmarks/"))
    assert "--decode-only" in stages[4][1]
    assert all("--v2" in argv for name, argv, _ in stages if name.startswith("attention"))
    assert "--attention-v2" in stages[3][1]


def _attention_json(context: int, max_seq: int, rows: list[tuple[str, int, float | None]]) -> dict:
    return {"context": context, "rows": [
        {"max_seq": max_seq, "kernel": k, "t_per_split": p, **({"median_us": us} if us else {"error": "boom: x"})}
        for k, p, us in rows]}


def test_the_summary_puts_both_kernels_and_both_decodes_side_by_side(tmp_path, capsys):
    (tmp_path / "attention_ctx256").mkdir()
    (tmp_path / "attention_ctx256" / "decode_attention_context.json").write_text(json.dumps(_attention_json(
        256, 328, [("new", 16, 7.5), ("new", 32, 7.0), ("v2", 128, None), ("v2", 512, 3.5)])))
    variant = lambda rate, share, attn, same: {  # noqa: E731
        "tokens_per_s": rate, "ms_per_token": 1e3 / rate, "share_of_memory_roof": share,
        "runs_tokens_per_s": [rate - 1, rate + 1], "tokens": {"same": same, "compared": 64,
                                                               "first_divergence": None if same == 64 else same,
                                                               "logit_gap_ulps": None if same == 64 else 1.0},
        "breakdown": {"classes": {"matmul": {"us_per_token": 716.0, "achieved_bytes_per_s": 2.89e12},
                                  "attention": {"us_per_token": attn}}, "gap_us_per_token": 0.5}}
    decode = {"models": {"llama-1b": {"notes": [], "fast": {"tuning": {"attention_t_per_split": 32},
                                                            "attention_v2": {"t_per_split": 512}},
                                      "variants": {"+ Triton GEMV + PDL": variant(1200.0, 0.54, 167.0, 64),
                                                   "+ Triton GEMV + PDL + attention v2": variant(1300.0, 0.585, 80.0, 40)}}}}
    (tmp_path / "decode_fast_llama-1b.json").write_text(json.dumps(decode))
    lab = tmp_path / "lab_decode" / "llama-1b"
    lab.mkdir(parents=True)
    breakdown = {"classes": [{"name": "matrix products", "time_s": 716e-6, "achieved_bytes_per_s": 2.89e12},
                             {"name": "attention", "time_s": 90e-6}]}
    (lab / "lab.json").write_text(json.dumps({"peak": {"fast": [
        {"title": "+ Triton GEMV + PDL + attention v2", "tokens_per_s": 1290.0, "share_of_memory_roof": 0.58,
         "same_tokens": 64, "compared_tokens": 64, "logit_gap_ulps": None, "skipped": "", "breakdown": breakdown},
        {"title": "+ Triton GEMV", "skipped": "failed: RuntimeError: x"}]}}))
    script = load_benchmark("issue19_kernels_summary")
    assert script.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| 256 | 328 | 7.00 (32) | 3.50 (512) | 0.50 |" in out
    assert "v2 errors: boom: x" in out
    assert "| llama-1b | + Triton GEMV + PDL + attention v2 | 1,300.0 (1,299.0-1,301.0) | 769.2 | 58.5% |" in out
    assert "40/64 (first differs at 40, eager top-2 gap 1.0 ulp)" in out
    assert "llama-1b: attention v2 -64.1 us/token, 58.5% of roof vs 54.0% (aim 65%)" in out
    assert "tuned to 512 slots a program (v1: 32)" in out
    assert "| llama-1b | + Triton GEMV + PDL + attention v2 | 1,290.0 | 58.0% | 716 (2.89) | 90 | 64/64 |" in out
    assert "| llama-1b | + Triton GEMV | failed: RuntimeError: x |" in out
    assert "lab llama-1b: best row + Triton GEMV + PDL + attention v2 at 58.0% of roof (aim 65%)" in out
    assert json.loads((tmp_path / "summary.json").read_text())["attention"][0]["v2_over_new"] == 0.5
    assert script.main([str(tmp_path / "nonexistent")]) == 2


def test_the_issue19_prefetch_suite_fits_one_device_call_and_times_old_and_new_with_both_models_lab_rows(tmp_path):
    suite = load_benchmark("gpu_suite")
    stages = suite.stages("issue19-prefetch", tmp_path)
    assert [s[0] for s in stages] == ["env", "decode_fast_llama-1b", "lab_decode_llama-1b", "lab_decode_llama-8b",
                                      "summary"]
    assert sum(s[2] for s in stages) <= 540  # the suite's budget; about 400 s expected
    repo = Path(__file__).resolve().parents[2]
    assert all((repo / arg).is_file() for _, argv, _ in stages for arg in argv
               if arg.startswith("benchmarks/") and not arg.endswith(".json"))
    assert (repo / "benchmarks/results/h200/issue19-20/ceilings_h200.json").is_file()
    assert "--prefetch" in stages[1][1] and "--baseline" in stages[1][1]
    assert all("--decode-only" in argv for name, argv, _ in stages if name.startswith("lab"))


def test_the_summary_sets_deep_prefetch_against_pdl_and_attention_v2(tmp_path, capsys):
    def variant(rate, share, matmul, tokens):
        return {"tokens_per_s": rate, "ms_per_token": 1e3 / rate, "share_of_memory_roof": share,
                "runs_tokens_per_s": [rate - 1, rate + 1], "generated_tokens": tokens,
                "tokens": {"same": 64, "compared": 64, "first_divergence": None},
                "breakdown": {"classes": {"matmul": {"us_per_token": matmul, "achieved_bytes_per_s": 3e12},
                                          "attention": {"us_per_token": 150.0}}, "gap_us_per_token": -60.0}}
    old_tile = {"block_n": 2, "block_k": 1024, "split_k": 1, "num_warps": 4, "reduce_each": False, "unroll": 1,
                "stages": 1}
    deep = {**old_tile, "block_n": 8, "block_k": 512, "num_warps": 8, "prefetch": 4, "early_launch": True}
    candidates = {"qkv prefetch": [{**deep, "early_launch": False, "us": 4.6}, {**old_tile, "prefetch": 1,
                                                                                "early_launch": False, "us": 5.0}],
                  "qkv in the step": [{**deep, "early_launch": False, "us": 790.0},
                                      {**old_tile, "prefetch": 1, "early_launch": False, "us": 800.0}],
                  "qkv early launch": [{**deep, "early_launch": False, "us": 790.0}, {**deep, "us": 788.5}]}
    decode = {"models": {"llama-1b": {"notes": [], "fast": {
        "tuning": {"attention_t_per_split": 32, "configs": {"qkv": old_tile}}, "attention_v2": {"t_per_split": 256},
        "prefetch": {"configs": {"qkv": deep}, "attention_early_launch": True, "candidates_us": {
            **candidates, "attention early launch": [{"early_launch": False, "us": 789.0},
                                                     {"early_launch": True, "us": 788.5}]}}},
        "variants": {"+ Triton GEMV + PDL + attention v2": variant(1250.0, 0.56, 711.0, [1, 2, 3, 4]),
                     "+ Triton GEMV + PDL + attention v2 + deep prefetch": variant(1400.0, 0.63, 620.0, [1, 2, 5, 4]),
                     "+ Triton GEMV + PDL + attention v2 + deep prefetch + L2 prefetch":
                         variant(1500.0, 0.675, 580.0, [1, 2, 5, 4])}}}}
    decode["models"]["llama-1b"]["fast"]["l2_prefetch"] = {"bytes": 3 << 21, "chunk": 4096, "candidates_us": [
        {"l2_prefetch_bytes": 0, "chunk": 32768, "us": 714.0},
        {"l2_prefetch_bytes": 3 << 21, "chunk": 4096, "us": 667.0}], "evict_first": ["w13"],
        "evict_first_us": {"qkv evict first": [667.0, 668.0], "w13 evict first": [667.0, 665.5]}}
    (tmp_path / "decode_fast_llama-1b.json").write_text(json.dumps(decode))
    script = load_benchmark("issue19_kernels_summary")
    assert script.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "attention alone" not in out  # this suite has no attention stages
    assert "llama-1b: deep prefetch -85.7 us/token (products -91 us), 63.0% of roof vs 56.0% (aim 65%)" in out
    assert ("| llama-1b | qkv | 2x1024 w4 | 8x512 w8 prefetch 4 early launch | 5.00 -> 4.60 | 800.0 -> 788.5 |"
            in out)
    assert "attention early launch: on (a step 789.0 us without, 788.5 us with in the tuning)" in out
    assert "deep prefetch's tokens: 2/4 the same as PDL + attention v2's (first differs at 2)" in out
    assert "llama-1b: L2 prefetch -47.6 us/token (products -40 us), 67.5% of roof vs 63.0% (aim 65%)" in out
    assert ("L2 prefetch from attention tuned to 6.0 MB a layer in 4 KB requests (a step 714.0 us at 0.0 MB/32 KB, "
            "667.0 us at 6.0 MB/4 KB" in out)
    assert "evict-first weight loads kept for: w13 (a step without/with: qkv 667.0/668.0; w13 667.0/665.5)" in out
    assert json.loads((tmp_path / "summary.json").read_text())["tiles"][0]["after_step_us"] == 788.5

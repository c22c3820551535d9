"""benchmarks/decode_attention_context.py (issue 19's attention-alone timing): its CPU path in Triton's
interpreter at tiny sizes, with another kernel file side by side, and its refusals."""

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


def test_the_attention_benchmark_runs_in_the_interpreter_and_checks_every_configuration(tmp_path):
    if not triton_available():
        pytest.skip("Triton is not installed")
    other = SRC / "roofline" / "lab" / "kernels" / "triton_attention.py"  # stands in for an older kernel's file
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "decode_attention_context.py"), str(tmp_path / "out"), "--device", "cpu",
         "--shape", "4", "2", "32", "--context", "20", "--max-seqs", "24", "96", "--t-per-split", "16",
         "--layers", "2", "--replays", "1", "--rounds", "2", "--old-kernel", str(other)],
        env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads((tmp_path / "out" / "decode_attention_context.json").read_text())
    rows = data["rows"]
    assert [(r["max_seq"], r["kernel"]) for r in rows] == [(24, "new"), (24, "old"), (96, "new"), (96, "old")]
    for row in rows:
        assert "error" not in row, row
        assert row["max_abs_error_vs_torch"] < 2e-3 and row["counters_reset"]
        assert row["live_programs"] == 4 and len(row["rounds_us"]) == 2 and row["median_us"] > 0
    assert [r["programs"] for r in rows] == [4, 4, 12, 12]
    assert "not a kernel's figure" in data["timing"] and data["gpu"].startswith("cpu")
    assert done.stdout.strip().splitlines()[-1].startswith("| 96 | 16 | 12 (4) |")


@pytest.mark.parametrize("args, says", [
    (["--context", "400"], "must be a slot of every cache"),
    (["--shape", "6", "4", "64"], "--shape"),
    (["--old-kernel", "/nonexistent/attention.py"], "no such file"),
    ([], "TRITON_INTERPRET=1"),  # on CPU only the interpreter runs the kernel (this process has none)
])
def test_the_attention_benchmark_refuses_bad_input_in_one_line(tmp_path, monkeypatch, capsys, args, says):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    script = load_benchmark("decode_attention_context")
    assert script.main([str(tmp_path / "out"), "--device", "cpu", "--max-seqs", "328", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0]
    assert not (tmp_path / "out").exists()


def test_the_gpu_suite_times_the_attention_then_runs_its_cuda_tests_and_the_lab_rows(tmp_path, monkeypatch):
    suite = load_benchmark("gpu_suite")
    old = tmp_path / "old.py"
    monkeypatch.setattr(suite, "OLD_ATTENTION", old)
    stages = suite.stages("issue19-attention", tmp_path)
    assert [s[0] for s in stages] == ["env", "attention_context", "cuda_tests_decode_fast", "lab_decode_llama-1b"]
    assert sum(s[2] for s in stages) <= 570  # one device call (600 s at most), with room for its start
    repo = Path(__file__).resolve().parents[2]
    assert all((repo / arg).is_file() for _, argv, _ in stages for arg in argv
               if arg.startswith(("tests/", "benchmarks/")))
    assert "--old-kernel" not in stages[1][1]  # no old kernel file made: the new kernel alone
    old.write_text("")
    assert suite.stages("issue19-attention", tmp_path)[1][1][-2:] == ["--old-kernel", str(old)]

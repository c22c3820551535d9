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


CRASHING_KERNEL = """
import os

from roofline.lab.kernels.triton_attention import decode_attention_kernel as _real


class _Crashing:  # the process dies on a 96-slot cache, as one does at a CUDA fault
    fn = _real.fn

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            if args[1].shape[2] == 96:
                os._exit(134)
            return _real[grid](*args, **kwargs)
        return launch


decode_attention_kernel = _Crashing()
"""


def test_the_attention_benchmark_checks_every_configuration_and_survives_one_that_kills_its_process(tmp_path):
    if not triton_available():
        pytest.skip("Triton is not installed")
    # The current kernel stands in for an older kernel's file, except that on the 96-slot cache it kills its
    # process: the 96-slot process runs again without it, and the 24-slot one is not touched.
    other = tmp_path / "crashing_attention.py"
    other.write_text(CRASHING_KERNEL)
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "decode_attention_context.py"), str(tmp_path / "out"), "--device", "cpu",
         "--shape", "4", "2", "32", "--context", "20", "--max-seqs", "24", "96", "--t-per-split", "16",
         "--layers", "2", "--replays", "1", "--rounds", "2", "--old-kernel", str(other)],
        env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads((tmp_path / "out" / "decode_attention_context.json").read_text())
    rows = data["rows"]
    assert [(r["max_seq"], r["kernel"]) for r in rows] == [(24, "new"), (24, "old"), (96, "new"), (96, "old")]
    crashed = rows.pop()
    assert crashed["error"].startswith("the process died: exit code 134") and "median_us" not in crashed
    for row in rows:
        assert "error" not in row, row
        assert row["max_abs_error_vs_torch"] < 2e-3 and row["graph_max_abs_error_vs_torch"] < 2e-3
        assert row["counters_reset"]
        assert row["live_programs"] == 4 and len(row["rounds_us"]) == 2 and row["median_us"] > 0
    assert [r["programs"] for r in rows] == [4, 4, 12]
    assert "not a kernel's figure" in data["timing"] and data["gpu"].startswith("cpu")
    assert done.stdout.strip().splitlines()[-1].startswith("| 96 | 16 | 12 (4) |")
    assert done.stdout.strip().splitlines()[-1].endswith("| failed | - |")


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


@pytest.mark.cuda
def test_a_timed_graph_keeps_alive_every_tensor_it_reads_and_writes():
    # torch.cuda.graph empties the allocator's cache before capturing: a tensor the graph uses, freed meanwhile,
    # left earlier graphs pointing at unmapped memory (the illegal memory access of issue 19's first H200 run).
    import gc
    import weakref

    import torch

    script = load_benchmark("decode_attention_context")

    def make():
        x = torch.randn(1 << 20, device="cuda")
        y = torch.empty_like(x)

        def launch_all():
            torch.mul(x, 2, out=y)

        return script._Timer(launch_all, torch.device("cuda"), 1, 2), weakref.ref(x), weakref.ref(y)

    timer, x, y = make()
    gc.collect()
    torch.cuda.empty_cache()
    assert x() is not None and y() is not None
    y().zero_()
    assert timer() > 0
    torch.cuda.synchronize()
    assert torch.equal(y(), x() * 2)

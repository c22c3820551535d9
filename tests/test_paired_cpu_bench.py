"""benchmarks/paired_cpu.py: each round runs both trees' `roofline trace` once and reports CPU time paired by round."""

import shutil
import sys
from pathlib import Path

import pytest

from benchmark_scripts import load_benchmark

SRC = Path(__file__).resolve().parents[1] / "src"
TRACE = Path(__file__).resolve().parent / "data" / "h200" / "bad_syncs_fwd_fp32.json.gz"


def test_quartiles_of_few_runs_are_min_median_max():
    bench = load_benchmark("paired_cpu")
    assert bench.quartiles([3.0, 1.0, 2.0]) == (1.0, 2.0, 3.0)
    assert bench.quartiles([1.0, 2.0, 3.0, 4.0, 5.0])[1] == 3.0


@pytest.mark.skipif(shutil.which("/usr/bin/time") is None, reason="needs /usr/bin/time")
def test_one_round_of_two_trees(tmp_path, monkeypatch, capsys):
    bench = load_benchmark("paired_cpu")
    monkeypatch.setattr(sys, "argv", ["paired_cpu.py", "--trace", str(TRACE), "--before", str(SRC), "--after",
                                      str(SRC), "--rounds", "1", "--keep", str(tmp_path)])
    bench.main()
    out = capsys.readouterr().out
    assert "round 1 before" in out and "round 1 after" in out
    assert "paired after-before cpu: median" in out
    assert (tmp_path / "before" / "report.json").read_bytes() == (tmp_path / "after" / "report.json").read_bytes()

"""benchmarks/ete_common.py, what the GPU harness and its offline re-prediction share: no torch, file names, the
scenario's arguments, and the paired measurement of a what-if's change."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def common():
    return load_benchmark("ete_common")


def test_it_loads_without_torch(common):
    import subprocess

    code = ("import sys; sys.path.insert(0, 'benchmarks'); import ete_common, ete_offline; "
            "print('torch' in sys.modules)")
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=repo,
                         env={"PYTHONPATH": str(repo / "src"), "PATH": ""})
    assert out.stdout.strip() == "False"


def test_names_scenarios_and_pairs(common):
    assert common.slug("source:llama-tiny seq 512 -> 2048") == "source_llama-tiny_seq_512-to-2048"
    assert common.change_of({"scenario": {"batch": "8 -> 32", "dtype": "float32 -> bfloat16"}}) == {
        "batch": 32, "dtype": "bfloat16"}
    out = common.paired([10.0, 20.0, 10.0], [5.0, 16.0, 7.0])
    assert out["paired_ratios"] == [0.5, 0.8, 0.7] and out["measured_change"] == pytest.approx(0.7)
    assert out["measured_change_spread"] == pytest.approx(0.15)   # quartiles 0.6 and 0.75
    assert common.paired([10.0], [5.0, 6.0]) == {} and common.paired([], []) == {}
    assert common.predicted_change([6.0, 3.0, 4.0], [10.0, 10.0, 5.0]) == pytest.approx(0.6)
    assert common.within(0.8, common.WHATIF_WITHIN) and not common.within(None, common.WHATIF_WITHIN)

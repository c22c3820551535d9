"""benchmarks/host_stability.py (issue 21): the affinity modes and the per-mode statistics of a short CPU run."""

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

from host_stability import _parse_cpulist, pin_cpus  # noqa: E402


def test_cpulist_ranges_and_singles():
    assert _parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]


def test_pin_modes_stay_within_the_allowed_cpus():
    allowed = set(os.sched_getaffinity(0))
    cpu = torch.device("cpu")
    assert pin_cpus("free", cpu) == sorted(allowed)
    node = pin_cpus("node", cpu)
    assert node and set(node) <= allowed
    core = pin_cpus("core", cpu)
    assert len(core) == 1 and core[0] in node


def test_short_cpu_run_writes_stats_per_mode_and_loop(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "host_stability.py"), str(tmp_path),
                           "--device", "cpu", "--rounds", "2", "--window-s", "0.01"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "host_stability.json").read_text())
    assert set(result["stats"]) == {"free", "node", "core"}
    for by in result["stats"].values():
        assert set(by) == {"dispatch", "python"}
        for s in by.values():
            assert s["n"] == 2 and 0 < s["min"] <= s["median"] <= s["max"]
    assert "| core | python |" in (tmp_path / "host_stability.md").read_text()
    assert os.sched_getaffinity(0)  # the test process itself is untouched


def test_host_level_probe_cpu_run_times_windows_beside_the_host_probe(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "host_level_probe.py"), str(tmp_path),
                           "--device", "cpu", "--seconds", "0.3", "--workloads", "mlp forward"],
                          capture_output=True, text=True, env=env, timeout=180)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "host_level_probe.json").read_text())
    (summary,) = result["summary"]
    windows = result["windows"]["mlp forward"]
    assert summary["workload"] == "mlp forward" and summary["windows"] == len(windows) >= 1
    assert all(w["step_s"] > 0 and w["probe_us"] > 0 for w in windows)
    assert summary["min_s"] <= summary["median_s"] <= summary["max_s"]
    assert result["device_bound"] is None and result["smi_samples"] == 0
    bad = subprocess.run([sys.executable, str(REPO / "benchmarks" / "host_level_probe.py"), str(tmp_path),
                          "--device", "cpu", "--workloads", "nope"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert bad.returncode == 2 and "unknown workload" in bad.stderr

"""Third-party noise (Kineto's log lines, c10's C++ warnings such as the CPU allocator's "Memory block of unknown
size" while profiling) stays off the user's stderr unless --verbose."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import torch
model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(6):
    model(torch.randn(8, 32)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
"""


def _doctor_stderr(tmp_path: Path, *verbose: str) -> str:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"), "OMP_NUM_THREADS": "1"}
    env.pop("KINETO_LOG_LEVEL", None)
    env.pop("TORCH_CPP_LOG_LEVEL", None)
    done = subprocess.run([sys.executable, "-m", "roofline", *verbose, "doctor", str(script)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_profiling_a_script_prints_no_third_party_lines(tmp_path):
    stderr = _doctor_stderr(tmp_path)
    assert "CPUAllocator" not in stderr and "profiler_start" not in stderr and "USDT" not in stderr, stderr


def test_verbose_lets_kineto_through(tmp_path):
    assert "profiler_start" in _doctor_stderr(tmp_path, "--verbose")


def test_torch_compiles_warning_about_rooflines_own_module_hooks_is_kept_off_stderr(monkeypatch):
    import warnings

    from roofline.cli import quiet_third_party

    monkeypatch.setenv("KINETO_LOG_LEVEL", "6")
    monkeypatch.setenv("TORCH_CPP_LOG_LEVEL", "ERROR")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_third_party()
        warnings.warn("Using `torch.compile(module)` when there are global hooks on modules (e.g., from "
                      "`register_module_forward_hook`); this will cause the hooks to fire an extra time", UserWarning)
        warnings.warn("the user's own warning", UserWarning)
    assert [str(w.message) for w in caught] == ["the user's own warning"]


def test_torchs_python_loggers_are_held_at_error_level(monkeypatch):
    """Inductor logs "No CUDA runtime is found" at WARNING when a model is torch.compile'd on a CPU-only machine."""
    import warnings

    from roofline.cli import quiet_third_party

    monkeypatch.delenv("TORCH_LOGS", raising=False)
    monkeypatch.setenv("KINETO_LOG_LEVEL", "6")
    monkeypatch.setenv("TORCH_CPP_LOG_LEVEL", "ERROR")
    with warnings.catch_warnings():
        quiet_third_party()
    code = "import logging, torch; print(logging.getLogger('torch.utils.cpp_extension').getEffectiveLevel())"
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ), capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "40", done.stderr

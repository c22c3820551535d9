"""`roofline profile` of a script that keeps its model on the CPU of a GPU machine: the report's device is the CPU,
its roofs the CPU's, and the doctor says the GPU went unused (analyze/unused_gpu.py, doctor/rules/model_on_cpu.py).

Without a GPU, the run is made on the CPU and its record told it ran on cuda with the H200's roofs (what the harness
records on the H200 host); the cuda-marked test runs it for real there (< 1 min):
    PYTHONPATH=src python3 -m pytest -m cuda tests/cli/test_cpu_on_gpu_profile.py
"""

from __future__ import annotations

import dataclasses
import json
import textwrap

import pytest

from roofline.cli import main
from roofline.report import Ceilings

SCRIPT = textwrap.dedent("""
    import torch, torch.nn as nn
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 8))  # never moved to the GPU
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 128), torch.randint(0, 8, (32,))
    for _ in range(8):
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad()
""")
H200 = Ceilings(device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.8e12,
                peak_flops_per_s={"float32": 5.1e13}, launch_overhead_s=5e-6, source="measured")


def _profile(tmp_path, capsys, *extra: str) -> tuple[dict, str]:
    script = tmp_path / "train_on_cpu.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    assert main(["profile", "-o", str(out), "--timed", "1", "--active", "2", *extra, str(script)]) == 0
    captured = capsys.readouterr()
    return json.loads((out / "report.json").read_text()), captured.out + captured.err


def _check(report: dict, text: str, gpu: str) -> None:
    from roofline.device.host import cpu_name

    assert report["ceilings"]["device"] == "cpu" and report["ceilings"]["device_name"] == cpu_name()
    assert report["environment"]["device_name"] == cpu_name()
    assert f"roofline profile: train_on_cpu.py on {cpu_name()}" in text
    assert report["extra"]["unused_gpu"]["name"] == gpu
    finding = next(f for f in report["findings"] if f["rule"] == "model-on-cpu")
    assert finding["title"].startswith(f"the model ran on the CPU though {gpu} is present")
    # the console's notes (the roofline report's, printed before the findings)
    assert f"the ops ran on the CPU ({cpu_name()}) though {gpu} is present" in " ".join(text.split())


@pytest.mark.slow
def test_profile_of_a_cpu_model_on_a_cuda_run_reports_the_cpu_and_the_unused_gpu(tmp_path, capsys, monkeypatch):
    from roofline.capture.profiling import StepProfiler

    record = StepProfiler.record
    monkeypatch.setattr(StepProfiler, "record",
                        lambda self: dataclasses.replace(record(self), device="cuda", ceilings=H200))
    report, text = _profile(tmp_path, capsys, "--device", "cpu")
    _check(report, text, "NVIDIA H200")
    assert report["extra"]["unused_gpu"]["roofs"]["peak_flops_per_s"] == {"float32": 5.1e13}


@pytest.mark.cuda
def test_on_a_gpu_machine_a_cpu_model_is_judged_against_this_cpu(tmp_path, capsys):
    import torch

    report, text = _profile(tmp_path, capsys)  # the default device: cuda
    _check(report, text, torch.cuda.get_device_name(0))
    assert report["extra"]["unused_gpu"]["roofs"]["source"].startswith("measured")

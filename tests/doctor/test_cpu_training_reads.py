"""A real CPU training loop (AdamW, run unchanged under `roofline profile`): AdamW's .item() on its step counters
is a plain read of a value on the CPU, never a host-device sync finding (sweep_models3_2026-12-02.md, item 3)."""

from __future__ import annotations

import json
import textwrap

from roofline.cli import main

SCRIPT = textwrap.dedent("""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    x, y = torch.randn(16, 32), torch.randn(16, 8)
    for _ in range(8):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
""")


def test_adamw_step_counter_reads_on_a_cpu_run_are_no_host_device_sync(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    ceilings = tmp_path / "ceilings.json"
    ceilings.write_text(json.dumps({"device": "cpu", "device_name": "test cpu", "memory_bandwidth_bytes_per_s": 2e10,
                                    "peak_flops_per_s": {"float32": 1e11}, "launch_overhead_s": 5e-6}))
    out = tmp_path / "out"
    assert main(["profile", "--device", "cpu", "--ceilings", str(ceilings), "--timed", "1", "--active", "2",
                 "-o", str(out), str(script)]) == 0
    assert main(["doctor", str(out / "report.json"), "-o", str(tmp_path / "doctor")]) == 0
    printed = capsys.readouterr().out
    report = json.loads((tmp_path / "doctor" / "report.json").read_text())
    assert report["ceilings"]["device"] == "cpu"
    reads = [o for o in report["ops"] if o["name"] == "aten::_local_scalar_dense"]
    assert len(reads) == 4 * report["steps"], "AdamW (for-loop) reads each of the 4 parameters' step counters"
    assert {o["phase"] for o in reads} == {"optimizer"}
    assert [f for f in report["findings"] if f["rule"] == "host-device-sync"] == []
    assert "host-device sync" not in printed
    assert not [n for n in report["summary"]["notes"] if n.startswith("syncs found on CPU tensors")], "none found"

"""`roofline profile SCRIPT` prints what `analyze` and `trace` print, by the same renderers: the op table (--top),
the doctor's findings (--findings) and the files written, after the profile's own step time, memory and syncs; also
when the script raised after its profiled steps (the report of those steps is still written)."""

from __future__ import annotations

import json
import textwrap

import pytest

from roofline.cli import main
from roofline.render.findings import FindingsRenderer
from roofline.report import Report

SCRIPT = textwrap.dedent("""
    import sys
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    for _ in range(6):
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad()
    if sys.argv[1:] == ["fail"]:
        raise ValueError("the script's own bug")
""")


def _ceilings(tmp_path):
    """Roofs with a launch overhead far above these tiny ops' time: the doctor finds them launch-bound."""
    path = tmp_path / "ceilings.json"
    path.write_text(json.dumps({"device": "cpu", "device_name": "test cpu", "memory_bandwidth_bytes_per_s": 2e10,
                                "peak_flops_per_s": {"float32": 1e11}, "launch_overhead_s": 1e-3}))
    return path


def _profile(tmp_path, capsys, *options: str, script_args: tuple[str, ...] = ()) -> tuple[int, str, str, Report]:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    code = main(["profile", "--device", "cpu", "--ceilings", str(_ceilings(tmp_path)), "--timed", "1", "--warmup",
                 "0", "--active", "2", *options, "-o", str(out), str(script), *script_args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err, Report.load(out / "report.json")


@pytest.mark.slow
def test_profile_prints_the_op_table_findings_and_files_as_analyze_and_trace_do(tmp_path, capsys, one_thread):
    code, printed, _, report = _profile(tmp_path, capsys, "--top", "3", "--findings", "1")
    assert code == 0
    assert report.findings, "the doctor's findings of this run, which the console must show"
    assert "Step time" in printed and "Host-device syncs" in printed
    assert f"Top 3 op calls by host time, summed over 2 steps (of {len(report.ops)} ops)" in printed
    findings = FindingsRenderer(1).render(report)
    assert "Doctor: 1 finding(s)" in findings and report.findings[0].rule in findings
    assert findings.strip() in printed
    if len(report.findings) > 1:
        assert f"({len(report.findings) - 1} more finding(s) not shown; --findings 0 to see all)" in printed
    wrote = " ".join(printed[printed.rindex("wrote "):].split())
    assert wrote.startswith(f"wrote {tmp_path / 'out' / 'report.json'}") and wrote.endswith("report.html")
    assert printed.index("Step time") < printed.index("Top 3 op calls") < printed.index("Doctor:") < printed.index("wrote")


@pytest.mark.slow
def test_a_script_that_raised_after_its_steps_still_prints_its_findings(tmp_path, capsys, one_thread):
    code, printed, err, report = _profile(tmp_path, capsys, "--run-to-end", "--findings", "0", script_args=("fail",))
    assert code == 2
    assert "roofline: error: train.py raised ValueError: the script's own bug" in err
    assert report.findings and FindingsRenderer(0).render(report).strip() in printed
    assert "wrote " in printed

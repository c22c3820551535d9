"""`roofline doctor` on an unmodified script calling Hugging Face generate(): its per-token sync is the finding."""

from __future__ import annotations

import json

import pytest
from benchmark_scripts import BENCHMARKS, load_benchmark

pytest.importorskip("transformers")


@pytest.mark.slow
def test_doctor_names_generates_per_token_sync_with_file_line(tmp_path, capsys, one_thread):
    from roofline.cli import main

    out = tmp_path / "doctor"
    assert main(["doctor", "--device", "cpu", "-o", str(out), str(BENCHMARKS / "hf_generate.py"), "--tokens", "12"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["profile"]["step_source"] == "forward"
    assert not [s for s in report["syncs"] if s["kind"] == "to(cpu)"], "x.to(y.device) moves nothing"
    (finding,) = load_benchmark("generate_syncs").per_token_sync_findings(report)
    assert finding["locations"][0].startswith("transformers/generation/")
    assert "every forward" in capsys.readouterr().out

import json

import pytest

from benchmark_scripts import load_benchmark
from roofline.errors import RooflineError
from roofline.lab import runner
from roofline.lab.studies import StudyOptions, attention, run_study


def test_the_gpu_driver_runs_both_studies_on_cpu(tmp_path, monkeypatch, wikitext_dir, cpu_ceilings, capsys):
    monkeypatch.setattr(runner, "measured_ceilings", lambda device, ceilings_file, progress: cpu_ceilings)
    monkeypatch.setattr(attention, "CPU_SEQS", (16,))
    script = load_benchmark("lab_studies")
    assert script.main(["--device", "cpu", "--quick", "--data", str(wikitext_dir), "-o", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "studies.json").read_text())
    assert [(r["study"], r["model"], r["status"]) for r in summary["runs"]] == [
        ("fp8", "llama-tiny", "ok"), ("attention", "llama-tiny", "ok")]
    assert (tmp_path / "fp8" / "llama-tiny" / "fp8.md").is_file()
    assert (tmp_path / "attention" / "llama-tiny" / "attention.png").is_file()
    assert "greedy tokens equal to" in capsys.readouterr().out


def test_an_unknown_study_is_one_clear_error(tmp_path):
    with pytest.raises(RooflineError, match="unknown study"):
        run_study("int4", StudyOptions(), tmp_path)

"""benchmarks/rediagnose_lab.py: a committed lab folder's doctor reports re-diagnosed with this checkout's rules (no
device: the doctor reads the report only), findings.txt, lab.json and lab.md following them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from benchmark_scripts import load_benchmark

from roofline.doctor import diagnose
from roofline.report import Report

LAB = Path(__file__).resolve().parents[2] / "docs" / "lab" / "h200" / "llama-tiny"


def test_a_lab_folder_is_rediagnosed_in_place_and_the_second_pass_changes_nothing(tmp_path):
    folder = tmp_path / "llama-tiny"
    shutil.copytree(LAB, folder)
    naive = folder / "doctor" / "naive" / "report.json.gz"
    report = Report.load(naive)
    report.findings = report.findings[:1]  # as if written by an older doctor with one finding
    report.save(naive)
    script = load_benchmark("rediagnose_lab")
    changes = script.rediagnose(folder)
    assert changes and all(line.startswith("llama-tiny/") for line in changes)
    expected = [f.title for f in diagnose(Report.load(naive))]
    assert [f.title for f in Report.load(naive).findings] == expected
    assert [f["title"] for f in json.loads((folder / "lab.json").read_text())["doctor"]["naive"]] == expected
    markdown = (folder / "lab.md").read_text()
    naive_section = markdown.split("## The doctor on the naive model")[1].split("## ")[0]
    assert all(title in naive_section for title in expected)
    assert "## The doctor on the fixed model" in markdown and "## Sample" in markdown
    assert expected[0].split(":")[0] in (folder / "doctor" / "naive" / "findings.txt").read_text()
    assert script.rediagnose(folder) == []

"""The lab's output folder is written whole or not at all: a checkpoint replaces every lab file together."""

from __future__ import annotations

import json

import pytest

from roofline.lab import render
from roofline.lab.runner import LabPlan, LabResult
from roofline.report import Ceilings, Environment


def _result(model: str) -> LabResult:
    plan = LabPlan(2, 8, 4, 1, 0, False, [1, 2], 8, 4)
    config = {"dim": 64, "n_layers": 1, "n_heads": 4, "n_kv_heads": 2, "ffn_dim": 128, "vocab_size": 1024}
    return LabResult(model=model, config=config, device="cpu", dtype="float32", plan=plan, ceilings=Ceilings(),
                     environment=Environment(), prompts=[], sample_output="", stages=[], agreement=[], sweep=None,
                     peak=None, pending=["everything"])


def _previous_run(out):
    (out / "doctor" / "naive").mkdir(parents=True)
    (out / "doctor" / "naive" / "report.json").write_text("{}")
    (out / "views.png").write_bytes(b"old")
    (out / "lab.json").write_text(json.dumps({"model": "old"}))
    (out / "lab.md").write_text("old")


def test_a_checkpoint_leaves_no_file_of_a_previous_run(tmp_path):
    out = tmp_path / "lab"
    out.mkdir()
    _previous_run(out)
    written = render.write_lab(_result("new"), out)
    assert sorted(p.name for p in out.iterdir()) == ["lab.json", "lab.md"]
    assert json.loads((out / "lab.json").read_text())["model"] == "new"
    assert sorted(written) == [out / "lab.json", out / "lab.md"]


def test_a_write_stopped_midway_keeps_the_previous_files_and_no_temporary(tmp_path, monkeypatch):
    out = tmp_path / "lab"
    out.mkdir()
    _previous_run(out)

    def stopped(result):
        raise KeyboardInterrupt

    monkeypatch.setattr(render, "lab_markdown", stopped)
    with pytest.raises(KeyboardInterrupt):
        render.write_lab(_result("new"), out)
    assert json.loads((out / "lab.json").read_text())["model"] == "old"
    assert (out / "views.png").read_bytes() == b"old" and (out / "doctor" / "naive" / "report.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab"]

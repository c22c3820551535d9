"""Bad input anywhere on the CLI: one `roofline: error:` line and exit 2, never a traceback; outputs whole or not."""

from __future__ import annotations

import json
import os

import pytest
from benchmark_scripts import load_benchmark

from roofline.errors import RooflineError
from roofline.io import atomic_directory
from roofline.render.outputs import OUTPUT_FILES, write_outputs
from roofline.report import OpRecord, Report


@pytest.mark.slow
def test_every_listed_bad_input_is_one_line_and_exit_2(tmp_path, monkeypatch, one_thread):
    bad = load_benchmark("bad_inputs")
    bad._files(tmp_path)
    monkeypatch.chdir(tmp_path)
    failures = []
    for case in bad.cases(tmp_path):
        code, stdout, stderr = bad.run_case(case.argv)
        result = bad.verdict(case, code, stderr)
        if result != "ok":
            failures.append(f"{case.name}: {result}: {bad.message(stdout, stderr)}")
    assert failures == []


def _report(workload: str = "w") -> Report:
    return Report(workload=workload, ops=[OpRecord(name="aten::mm", flops=1e6, bytes=1e3, time_s=1e-3)])


def test_an_interrupted_write_leaves_the_previous_outputs_untouched(tmp_path, monkeypatch):
    out = tmp_path / "out"
    write_outputs(_report("old"), out, png=False)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def interrupted(*args, **kwargs):
        yield "<!DOCTYPE html>"  # part of the page is written, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr("roofline.render.html.html_chunks", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_outputs(_report("new"), out, png=False)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"], "no temporary directory left behind"


def test_a_new_run_replaces_the_whole_set_and_keeps_the_users_own_files(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "trace.json.gz").write_bytes(b"a previous run's trace")
    write_outputs(_report("new"), out, png=False)
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json"], "a stale trace beside a new report"
    assert json.loads((out / "report.json").read_text())["workload"] == "new"

    (out / "notes.txt").write_text("mine")
    (out / "roofline.png").write_bytes(b"old png")
    write_outputs(_report("newer"), out, png=False, html=False)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "report.json"]
    assert (out / "notes.txt").read_text() == "mine"


def test_atomic_directory_refuses_a_file_and_cleans_up_after_an_error(tmp_path):
    existing = tmp_path / "file"
    existing.write_text("x")
    with pytest.raises(RooflineError, match="existing file"):
        with atomic_directory(existing, OUTPUT_FILES):
            pass
    with pytest.raises(ValueError):
        with atomic_directory(tmp_path / "new", OUTPUT_FILES) as tmp:
            (tmp / "report.json").write_text("{}")
            raise ValueError("renderer failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_written_directory_has_the_permissions_of_any_new_directory(tmp_path):
    out = tmp_path / "out"
    write_outputs(_report(), out, png=False, html=False)
    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o777 & ~mask

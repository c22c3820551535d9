"""A torch.profiler trace with no op to place on a roofline is bad input for every command that reads a trace: a
profile that recorded nothing, one holding only a record_function range, one whose op lies outside its profiled
step. Each is one `roofline: error:` line naming what the trace holds, exit 2 and no output left, for `trace`,
`doctor TRACE` and `trace` of several files alike (an empty report with exit 0 told the user nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

from roofline.analyze.trace_file import analyze_trace_file
from roofline.cli import main
from roofline.errors import RooflineError

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    """Real torch.profiler traces: nothing recorded; one record_function range around Python work only."""
    folder = tmp_path_factory.mktemp("traces")
    with profile(activities=[ProfilerActivity.CPU]) as empty:
        pass
    empty.export_chrome_trace(str(folder / "empty_profile.json"))
    with profile(activities=[ProfilerActivity.CPU]) as annotated:
        with record_function("data loading"):
            sum(range(1000))
    annotated.export_chrome_trace(str(folder / "only_annotation.json"))
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=2)) as scheduled:
        for _ in range(3):
            torch.ones(4).sum()
            scheduled.step()
    scheduled.export_chrome_trace(str(folder / "scheduled.json"))
    return {"empty": folder / "empty_profile.json", "annotation": folder / "only_annotation.json",
            "scheduled": folder / "scheduled.json"}


def _one_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("roofline: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("command", ["trace", "doctor"])
def test_a_trace_with_only_a_record_function_range_is_refused_naming_the_range(traces, tmp_path, capsys, command):
    out = tmp_path / "out"
    assert main([command, str(traces["annotation"]), "-o", str(out)]) == 2
    line = _one_error(capsys)
    assert line == (f"roofline: error: {traces['annotation']} holds no op to place on a roofline: only 1 "
                    "record_function range ('data loading'); record the model's steps inside "
                    "torch.profiler.profile(record_shapes=True), or let roofline record them: `roofline profile "
                    "SCRIPT.py` or `roofline analyze FILE.py:factory`")
    assert not out.exists()


@pytest.mark.parametrize("command", ["trace", "doctor"])
def test_a_profile_that_recorded_nothing_is_refused_the_same_way(traces, tmp_path, capsys, command):
    out = tmp_path / "out"
    assert main([command, str(traces["empty"]), "-o", str(out)]) == 2
    line = _one_error(capsys)
    assert line.startswith(f"roofline: error: {traces['empty']} has no profiler events")
    assert ("the profiler recorded nothing; record the model's steps inside "
            "torch.profiler.profile(record_shapes=True), or let roofline record them: `roofline profile "
            "SCRIPT.py` or `roofline analyze FILE.py:factory`; ") in line
    assert not out.exists()


def test_a_scheduled_profile_exported_after_its_with_block_says_to_export_from_on_trace_ready(traces, tmp_path, capsys):
    """The usual mistake with a schedule: prof.export_chrome_trace after the `with` block writes only the last,
    unfinished cycle (every completed one went to on_trace_ready), which recorded nothing. It was told to record
    the model inside torch.profiler.profile, which it had."""
    assert main(["trace", str(traces["scheduled"]), "-o", str(tmp_path / "out")]) == 2
    line = _one_error(capsys)
    assert "the profiler recorded nothing" in line
    assert ("a profiler given a schedule hands each finished cycle to on_trace_ready and keeps only the last, "
            "unfinished one for an export after its `with` block: pass on_trace_ready=torch.profiler."
            "tensorboard_trace_handler(DIR)") in line


def test_several_traces_one_of_them_with_nothing_to_place_is_refused_naming_it(traces, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["trace", str(H200 / "bad_syncs_fwd_fp32.json.gz"), str(traces["annotation"]), "-o", str(out)]) == 2
    assert _one_error(capsys).startswith(f"roofline: error: {traces['annotation']} holds no op to place on a roofline")
    assert not out.exists()


def test_an_op_outside_the_profiled_step_is_named_with_the_step(tmp_path):
    def x(cat, name, ts, dur):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": {}}

    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": [
        x("user_annotation", "ProfilerStep#1", 0.0, 10.0), x("cpu_op", "aten::add", 50.0, 5.0)]}))
    with pytest.raises(RooflineError) as caught:
        analyze_trace_file(path)
    assert str(caught.value).startswith(f"{path} holds no op to place on a roofline: its 1 op ('aten::add') lies "
                                        "outside its 1 profiled step; record")



def test_a_trace_holding_only_collectives_still_reports_them(tmp_path):
    """A gloo job's CPU trace may place no op yet time its collectives (HTA's cpu_only rank trace): kept."""
    def x(cat, name, ts, dur):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": {}}

    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": [
        x("user_annotation", "ProfilerStep#1", 0.0, 10.0), x("user_annotation", "gloo:all_reduce", 50.0, 30.0)]}))
    report = analyze_trace_file(path)
    assert report.ops == [] and report.summary.notes[-1] == "collectives: gloo:all_reduce x1 (30 us host time)"

"""What torch.profiler writes for steps, recorded for real on the CPU, and how the trace reader reads it.

torch.profiler.profile(...) without a schedule records no step marker at all, even with prof.step() each
iteration (its record_steps is off): the reader says so and what to do. With a schedule, or with the user's own
record_function('ProfilerStep#N') spans, the steps are read, one per marker, and each op lands in its step.
"""

from __future__ import annotations

import json

import pytest
import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

from roofline.capture.kineto import NO_STEPS_WARNING, load_trace


def _train_step(model: torch.nn.Module) -> None:
    model(torch.randn(4, 16)).sum().backward()


def _record(tmp_path, how: str):
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 16)
    path = tmp_path / f"{how}.json"
    options = {}
    if how == "schedule":
        options = {"schedule": schedule(wait=0, warmup=1, active=3, repeat=1),
                   "on_trace_ready": lambda p: p.export_chrome_trace(str(path))}
    with profile(activities=[ProfilerActivity.CPU], **options) as prof:
        for i in range(5 if how == "schedule" else 3):
            if how == "record_function":
                with record_function(f"ProfilerStep#{i}"):
                    _train_step(model)
            else:
                _train_step(model)
                prof.step()
    if how != "schedule":
        prof.export_chrome_trace(str(path))
    return path


def test_without_a_schedule_torch_records_no_step_and_the_note_says_what_to_do(tmp_path):
    path = _record(tmp_path, "no-schedule")
    names = {e.get("name", "") for e in json.loads(path.read_text())["traceEvents"]}
    assert not [n for n in names if "step" in n.lower() and n.startswith("Profiler")], "torch marked no step"
    trace = load_trace(path)
    assert trace.steps == [] and {op.step for op in trace.ops} == {None}
    assert NO_STEPS_WARNING in trace.warnings
    assert "pass schedule=torch.profiler.schedule(" in NO_STEPS_WARNING
    assert "record_function('ProfilerStep#N')" in NO_STEPS_WARNING


@pytest.mark.parametrize("how", ["schedule", "record_function"])
def test_step_markers_torch_writes_are_read_one_step_each(tmp_path, how):
    trace = load_trace(_record(tmp_path, how))
    assert len(trace.steps) == 3
    assert [op.step for op in trace.ops if op.name == "aten::addmm"] == [0, 1, 2]
    assert NO_STEPS_WARNING not in trace.warnings

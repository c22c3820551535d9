"""A trace trimmed to a time window (in a viewer, or by a script keeping the events that start before a time) keeps
the spans across the window's edge whole: its last ProfilerStep ran on past every event kept, and that empty time
counted as step time and device idle (the H200 fixture below trimmed mid-step: 13.9 ms idle of 15.1 ms, where the
window holds 10.3 of 11.5)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

from roofline.capture.kineto import load_trace

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "h200" / "bad_syncs_fwd_fp32.json.gz"


def _trimmed(tmp_path, clip: bool) -> Path:
    """The fixture with the events after the middle of its last step left out; ``clip``: the spans across that time
    end there too (the edge as a clipping viewer writes it), else they keep their whole length."""
    trace = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    steps = [e for e in trace["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")
             and e.get("cat") == "user_annotation"]
    edge = steps[-1]["ts"] + steps[-1]["dur"] / 2
    kept = []
    for event in trace["traceEvents"]:
        if isinstance(event.get("ts"), (int, float)) and event["ts"] > edge:
            continue
        if clip and event.get("ph") == "X" and event["ts"] + event["dur"] > edge:
            event = {**event, "dur": edge - event["ts"]}
        kept.append(event)
    path = tmp_path / f"trimmed_{clip}.json"
    path.write_text(json.dumps({**trace, "traceEvents": kept}))
    return path


def test_a_last_step_past_everything_recorded_ends_where_the_record_does(tmp_path):
    whole, clipped = load_trace(_trimmed(tmp_path, clip=False)), load_trace(_trimmed(tmp_path, clip=True))
    assert [s.number for s in whole.steps] == [s.number for s in clipped.steps] == [1, 2]
    assert whole.steps[0] == clipped.steps[0]
    # the record ends with a kernel or op running a little past the edge: the window ends with it, not 3.9 ms later
    assert whole.steps[1].end_us == pytest.approx(clipped.steps[1].end_us, abs=50.0)
    said = [w for w in whole.warnings if w.startswith("ProfilerStep#2 runs ")]
    assert len(said) == 1 and "ms past the end of the record (the profiler's span of its record goes on" in said[0]
    assert not [w for w in clipped.warnings if "past the end of the record" in w]


def test_a_whole_trace_keeps_its_steps(tmp_path):
    """A trace as torch.profiler wrote it records more after its last step (the profiler's own calls, kernels still
    running, a CPU-only run's step() frames): its steps stay as written."""
    recorded = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    markers = {e["name"]: e["dur"] for e in recorded["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")
               and e.get("cat") == "user_annotation"}
    trace = load_trace(FIXTURE)
    assert {f"ProfilerStep#{s.number}": s.dur_us for s in trace.steps} == markers
    path = tmp_path / "cpu.json"
    model = torch.nn.Linear(16, 16)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=0, warmup=1, active=2, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for _ in range(4):
            model(torch.randn(4, 16)).sum().backward()
            prof.step()
    written = {e["name"]: e["dur"] for e in json.loads(path.read_text())["traceEvents"]
               if e.get("name", "").startswith("ProfilerStep#")}
    cpu = load_trace(path)
    assert len(cpu.steps) == 2
    assert {f"ProfilerStep#{s.number}": s.dur_us for s in cpu.steps} == pytest.approx(written)
    assert not [w for w in cpu.warnings if "past the end of the record" in w]


def test_a_step_closed_after_the_record_window_ends_with_the_window(tmp_path):
    """HTA's triton_example.json: a ProfilerStep#1 of 13.3 s in a record window of 1.8 ms (the step closed long after
    the profiler stopped) made 13.3 s of step time, all of it device idle."""
    trace = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    events = trace["traceEvents"]
    step = next(e for e in events if e.get("name") == "ProfilerStep#2")
    window_end = next(e for e in events if e.get("name") == "Record Window End")
    assert window_end["ts"] > step["ts"] + step["dur"]
    window_end["ts"] = step["ts"] + step["dur"] / 2 + 0.25  # the window ends mid-step, and the step goes on 10 s
    step["dur"] += 10e6
    events[:] = [e for e in events if not (isinstance(e.get("ts"), (int, float)) and e is not window_end
                                           and e["ts"] > window_end["ts"])]
    path = tmp_path / "late_step.json"
    path.write_text(json.dumps(trace))
    loaded = load_trace(path)
    # the window's end, or the op or kernel still running there
    assert window_end["ts"] <= loaded.steps[-1].end_us < window_end["ts"] + 100.0
    said = [w for w in loaded.warnings if w.startswith("ProfilerStep#2 runs 10 s past the end of the record (the "
                                                       "profiler's record window, which Kineto's 'Record Window End' "
                                                       "marks, ends before it)")]
    assert len(said) == 1

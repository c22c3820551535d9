"""Source lines of ops in a loop inside a function that was already running when profiling began.

torch's Python tracer names such a frame by the line it was on when profiling began and never updates it, so every
op below it used to be placed at that one line. The reader now takes the line each call was made from (the trace's
CallFrom argument, which newer torch records) and labels a running frame by its function, never its stale line.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

from roofline.capture.kineto import load_trace

SCRIPT = Path(__file__).resolve().parents[1] / "data" / "scripts" / "loop_in_function.py"
LINE_WITH_PROFILE, LINE_FORWARD, LINE_LOSS, LINE_STEP = 15, 17, 18, 20
IN_MAIN = "loop_in_function.py, in main()"


@pytest.fixture(scope="module")
def user_trace(tmp_path_factory) -> Path:
    """The trace the script writes with its own torch.profiler (with_stack=True), as a user's would be."""
    path = tmp_path_factory.mktemp("trace") / "loop.json"
    saved = sys.argv[:]
    sys.argv[:] = [str(SCRIPT), str(path)]
    try:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    finally:
        sys.argv[:] = saved
    return path


def _has_call_sites(path: Path) -> bool:
    events = json.loads(path.read_text())["traceEvents"]
    return any("CallFrom" in (e.get("args") or {}) for e in events if e.get("cat") == "python_function")


def _sources(path: Path) -> dict[str, set[str]]:
    """Per op name, its sources with the file's directory left out (it depends on where the test runs from)."""
    trace = load_trace(path)
    sources: dict[str, set[str]] = {}
    for op in trace.ops:
        sources.setdefault(op.name, set()).add((op.source or "").rsplit("/", 1)[-1])
    return sources


def _stale_note(path: Path) -> list[str]:
    return [w for w in load_trace(path).warnings if w.startswith("source lines:")]


def test_the_line_each_op_was_called_from_not_the_line_main_was_on_when_profiling_began(user_trace):
    if not _has_call_sites(user_trace):
        pytest.skip("this torch records no call sites (CallFrom): test_without_call_sites covers it")
    sources = _sources(user_trace)
    assert sources["aten::addmm"] == {f"loop_in_function.py:{LINE_FORWARD}"}  # forward, both Linear layers
    assert sources["aten::nll_loss_forward"] == {f"loop_in_function.py:{LINE_LOSS}"}
    assert sources["Optimizer.step#SGD.step"] == {f"loop_in_function.py:{LINE_STEP}"}
    assert sources["aten::div"] == {IN_MAIN}  # `/ 2` is called from main itself: no line recorded for it
    assert not any(s.endswith(f":{LINE_WITH_PROFILE}") for names in sources.values() for s in names)
    (note,) = _stale_note(user_trace)
    assert f"{IN_MAIN} (named at line {LINE_WITH_PROFILE})" in note


def test_without_call_sites_a_running_frame_is_labelled_by_its_function(user_trace, tmp_path):
    """An older torch's trace (no CallFrom, as 2.11 writes): the stale line is not shown as any op's line."""
    data = json.loads(user_trace.read_text())
    for event in data["traceEvents"]:
        (event.get("args") or {}).pop("CallFrom", None)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    sources = _sources(old)
    assert sources["aten::addmm"] == {IN_MAIN} and sources["aten::div"] == {IN_MAIN}
    assert not any(s.endswith(f":{LINE_WITH_PROFILE}") for names in sources.values() for s in names)
    assert len(_stale_note(old)) == 1


@pytest.mark.parametrize("source, shown", [
    ("src/app/train.py:12", "app/train.py:12"),
    ("src/app/train.py, in main()", "app/train.py, in main()"),  # the label keeps its function, not a bogus line
    ("train.py, in <module>", "train.py, in <module>"),
    ("src/app/train.py", "app/train.py"),
    (None, "-"),
])
def test_the_console_shortens_a_line_and_a_function_label_alike(source, shown):
    from roofline.render.console import _short_source

    assert _short_source(source) == shown


@pytest.mark.parametrize("name, starts", [
    ("torch/autograd/profiler.py(422): _start_trace", True),
    ("/usr/lib/python3.12/site-packages/torch/profiler/profiler.py(409): start_trace", True),
    ("torch/profiler/profiler.py(1313): step", False),
    ("my/torch/autograd/profiler_tools.py(3): _start_trace", False),
    ("train.py(5): start_trace", False),
])
def test_the_frames_that_start_tracing_are_recognised(name, starts):
    from roofline.capture.kineto import _STARTS_PROFILER, _frame_kind

    assert (_frame_kind(name) is _STARTS_PROFILER) is starts


def _x(cat, name, ts, dur, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _write(tmp_path, events) -> Path:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def test_roofline_call_site_ranges_place_ops_where_torch_records_no_call_site(tmp_path):
    """The script runner's range around a top-level forward (a cpu_op the trace moved to an overlap thread) is read
    as that thread's frame, never as an op; where the trace holds CallFrom, torch's own call sites rule instead."""
    from roofline.capture.kineto import CALL_SITE_PREFIX

    events = [
        _x("python_function", "train.py(21): main", 0.0, 1000.0),
        _x("python_function", "torch/autograd/profiler.py(422): _start_trace", 1.0, 2.0),
        _x("cpu_op", CALL_SITE_PREFIX + "src/train.py:18", 100.0, 50.0, tid="1 overlap 1"),
        _x("cpu_op", "aten::addmm", 110.0, 10.0),
        _x("cpu_op", "aten::div", 200.0, 5.0),
    ]
    trace = load_trace(_write(tmp_path, events))
    assert [(op.name, op.source) for op in trace.ops] == [("aten::addmm", "src/train.py:18"),
                                                          ("aten::div", "train.py, in main()")]
    events.insert(3, _x("python_function", "torch/nn/modules/module.py(1787): _call_impl", 105.0, 40.0,
                        CallFrom="train.py:18"))
    trace = load_trace(_write(tmp_path, events))
    assert [(op.name, op.source) for op in trace.ops] == [("aten::addmm", "train.py:18"),
                                                          ("aten::div", "train.py, in main()")]

"""The Chrome trace we export: the structural check finds each broken rule; normalised real traces pass it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from roofline.render.chrome_trace import (
    chrome_trace_from_report,
    normalize_chrome_trace,
    read_chrome_trace,
    validate_chrome_trace,
    write_chrome_trace,
)
from roofline.report import KernelRecord, OpRecord, Report

DATA = Path(__file__).resolve().parents[1] / "data" / "h200"


def _x(name: str, ts: float, dur: float, tid: int = 1) -> dict:
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid}


def test_a_nested_trace_is_valid() -> None:
    trace = {"traceEvents": [_x("step", 0, 10), _x("op", 1, 4), _x("inner", 1, 2), _x("op2", 5, 5),
                             {"ph": "i", "name": "mark", "ts": 3, "pid": 1, "tid": 1, "s": "t"},
                             {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}}]}
    assert validate_chrome_trace(trace) == []


@pytest.mark.parametrize(
    "events, problem",
    [
        ([_x("a", 0, 10), _x("b", 5, 10)], "partially overlaps"),
        ([_x("a", -1, 1)], "negative timestamp"),
        ([{"ph": "B", "name": "a", "ts": 0, "pid": 1, "tid": 1}], "must be 'X' events"),
        ([{"ph": "X", "name": "a", "ts": 0, "pid": 1, "tid": 1}], "non-negative 'dur'"),
        ([_x("a", 0, -2)], "non-negative 'dur'"),
        ([{"ph": "X", "name": "a", "ts": float("nan"), "dur": 1, "pid": 1, "tid": 1}], "finite number"),
        ([{"ph": "X", "name": "a", "ts": 0, "dur": 1}], "without pid/tid"),
        ([{"ph": "Q", "name": "a", "ts": 0}], "unknown phase"),
    ],
)
def test_each_broken_rule_is_reported(events: list[dict], problem: str) -> None:
    problems = validate_chrome_trace({"traceEvents": events})
    assert any(problem in p for p in problems), problems


def test_not_a_trace_is_reported() -> None:
    assert validate_chrome_trace([1, 2]) and validate_chrome_trace({"events": []})


def test_same_overlap_on_another_thread_is_fine() -> None:
    assert validate_chrome_trace({"traceEvents": [_x("a", 0, 10, tid=1), _x("b", 5, 10, tid=2)]}) == []


def test_normalize_shifts_time_clips_tiny_overruns_and_moves_real_overlaps() -> None:
    raw = {"traceEvents": [_x("parent", 1000, 10), _x("child", 1001, 9.0005), _x("neighbour", 1005, 50),
                           {"ph": "B", "name": "old", "ts": 1000, "pid": 1, "tid": 1}]}
    fixed = normalize_chrome_trace(raw)
    assert validate_chrome_trace(fixed) == []
    by_name = {e["name"]: e for e in fixed["traceEvents"] if e["ph"] == "X"}
    assert by_name["parent"]["ts"] == 0 and by_name["child"]["dur"] == 9.0
    assert by_name["neighbour"]["tid"] == "1 overlap 1"
    assert fixed["otherData"]["roofline_moved_events"] == 1 and fixed["otherData"]["roofline_dropped_events"] == 1


@pytest.mark.parametrize("name", ["bad_syncs_fwd_fp32.json.gz", "resnet50_fwd_fp32_b32.json.gz"])
def test_real_h200_traces_are_valid_once_normalised(name: str) -> None:
    raw = read_chrome_trace(DATA / name)
    assert validate_chrome_trace(raw) != [], "Kineto's export breaks strict nesting; the check must see it"
    fixed = normalize_chrome_trace(raw)
    assert validate_chrome_trace(fixed) == []
    kept = sum(1 for e in fixed["traceEvents"] if e["ph"] == "X")
    assert kept == sum(1 for e in raw["traceEvents"] if e.get("ph") == "X")


def test_trace_from_a_report_alone_is_valid(tmp_path: Path) -> None:
    report = Report(ops=[OpRecord("aten::mm", time_s=1e-3, start_s=0.0), OpRecord("aten::add", time_s=2e-4)],
                    kernels=[KernelRecord("gemm", start_s=1e-5, dur_s=9e-4, stream=7)])
    trace = chrome_trace_from_report(report)
    assert validate_chrome_trace(trace) == []
    path = write_chrome_trace(trace, tmp_path / "t.json.gz")
    assert json.loads(gzip.decompress(path.read_bytes()))["traceEvents"] == trace["traceEvents"]

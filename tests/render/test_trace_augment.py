"""The augmented trace stays a valid Chrome trace and carries the roofline args and counter tracks."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from roofline.errors import RooflineError
from roofline.render.trace_augment import BANDWIDTH_TRACK, FLOPS_TRACK, augment_trace, write_augmented_trace
from roofline.report import OpRecord, Report

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "h200" / "bad_syncs_fwd_fp32.json.gz"


def chrome_trace_problems(data: dict) -> list[str]:
    """Why a trace is not valid for Perfetto: X events need numeric ts >= 0 and dur >= 0 (µs), and events on one
    thread must nest strictly (each one ends before the one enclosing it does, or starts after it ended)."""
    problems = []
    threads: dict[tuple, list[tuple[float, float, str]]] = {}
    for event in data["traceEvents"]:
        ph = event.get("ph")
        if ph in ("X", "C", "i", "s", "f") and not isinstance(event.get("ts"), (int, float)):
            problems.append(f"{event.get('name')}: ts missing")
            continue
        if ph in ("X", "C") and event["ts"] < 0:
            problems.append(f"{event.get('name')}: negative ts")
        if ph == "C" and not all(isinstance(v, (int, float)) for v in event.get("args", {}).values()):
            problems.append(f"{event.get('name')}: counter with a non-numeric value")
        if ph == "X":
            dur = event.get("dur")
            if not isinstance(dur, (int, float)) or dur < 0:
                problems.append(f"{event.get('name')}: bad dur {dur!r}")
                continue
            threads.setdefault((event.get("pid"), event.get("tid")), []).append((event["ts"], event["ts"] + dur, event.get("name")))
    eps = 1e-3
    for key, spans in threads.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack: list[float] = []
        for start, end, name in spans:
            while stack and stack[-1] <= start + eps:
                stack.pop()
            if stack and end > stack[-1] + eps:
                problems.append(f"{name} on {key} overlaps its enclosing event")
            stack.append(end)
    return problems


def _fixture() -> dict:
    return json.loads(gzip.decompress(FIXTURE.read_bytes()))


def _report_of_first_step(trace: dict) -> tuple[Report, dict[int, str]]:
    """Ops = the outermost cpu_ops of ProfilerStep#1, with External ids, as the lead's pipeline fills them."""
    events = trace["traceEvents"]
    step = next(e for e in events if e.get("name", "").startswith("ProfilerStep#") and e.get("cat") == "user_annotation")
    lo, hi = step["ts"], step["ts"] + step["dur"]
    cpu = sorted((e for e in events if e.get("cat") == "cpu_op" and lo <= e["ts"] < hi), key=lambda e: (e["ts"], -e["dur"]))
    ops, end = [], -1.0
    for e in cpu:
        if e["ts"] >= end:
            ext = e["args"]["External id"]
            ops.append(OpRecord(name=e["name"], module="block", flops=2e9, bytes=1e7, time_s=5e-5, arithmetic_intensity=200.0,
                                achieved_flops_per_s=4e13, achieved_bytes_per_s=2e11, efficiency=0.62, bound="compute",
                                index=len(ops), external_id=ext))
            end = e["ts"] + e["dur"]
    return Report(workload="bad-syncs", ops=ops), {op.external_id: op.name for op in ops}


def test_validator_catches_overlap_and_negative_ts():
    bad = {"traceEvents": [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 5, "dur": 10},
        {"ph": "X", "name": "c", "pid": 1, "tid": 2, "ts": -1, "dur": 1},
    ]}
    assert len(chrome_trace_problems(bad)) == 2


def test_clean_trace_stays_strictly_nested():
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 10.0, "dur": 50.0, "args": {"External id": 7}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 12.0, "dur": 40.0, "args": {"External id": 8}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20.0, "dur": 5.0, "args": {"External id": 8}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 30.0, "dur": 20.0, "args": {"External id": 8}},
        {"ph": "X", "cat": "kernel", "name": "relu", "pid": 0, "tid": 7, "ts": 50.0, "dur": 4.0, "args": {"External id": 99}},
    ]
    op = OpRecord(name="aten::linear", flops=1e9, bytes=1e6, time_s=2e-5, achieved_flops_per_s=5e13, achieved_bytes_per_s=5e10,
                  efficiency=0.5, bound="compute", external_id=7)
    data = augment_trace({"traceEvents": events}, Report(ops=[op]))
    assert chrome_trace_problems(data) == []
    gemm = next(e for e in data["traceEvents"] if e["name"] == "gemm")
    assert gemm["args"]["roofline.op"] == "aten::linear" and gemm["args"]["roofline.pct_of_roof"] == 50.0
    relu = next(e for e in data["traceEvents"] if e["name"] == "relu")
    assert "roofline.op" not in relu["args"]
    bw = [e for e in data["traceEvents"] if e["ph"] == "C" and e["name"].startswith(BANDWIDTH_TRACK)]
    assert [(e["ts"], e["args"]["GB/s"]) for e in bw] == [(30.0, 50.0), (50.0, 0)]


def test_augmented_trace_stays_valid_and_carries_args(tmp_path):
    trace = _fixture()
    report, names = _report_of_first_step(trace)
    out = write_augmented_trace(FIXTURE, report, tmp_path / "trace.json.gz")
    data = json.loads(gzip.decompress(out.read_bytes()))
    assert sorted(chrome_trace_problems(data)) == sorted(chrome_trace_problems(trace)), "augmenting adds no violation"
    original = [(e.get("ts"), e.get("dur")) for e in trace["traceEvents"]]
    assert [(e.get("ts"), e.get("dur")) for e in data["traceEvents"][: len(original)]] == original
    events = data["traceEvents"]
    annotated_ops = [e for e in events if e.get("cat") == "cpu_op" and "roofline.flops" in e.get("args", {})]
    assert {e["args"]["External id"] for e in annotated_ops} == set(names)
    first = annotated_ops[0]["args"]
    assert first["roofline.bound"] == "compute"
    assert first["roofline.pct_of_roof"] == pytest.approx(62.0)
    assert first["roofline.arithmetic_intensity"] == pytest.approx(200.0)
    assert first["roofline.bytes"] == 1e7

    kernels = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "roofline.op" in e.get("args", {})]
    assert kernels, "kernels launched by report ops must carry the op's figures"
    assert all(k["args"]["roofline.op"] in set(names.values()) for k in kernels)
    memcpy = [(i, k) for i, k in enumerate(events) if k in kernels and k["cat"] == "gpu_memcpy"]
    assert memcpy
    assert all(k["args"]["bytes"] == trace["traceEvents"][i]["args"]["bytes"] for i, k in memcpy), "Kineto's own args are kept"
    gemm = next(k for k in kernels if "gemm" in k["name"])
    assert gemm["args"]["roofline.op"] == "aten::linear", "a kernel of aten::addmm belongs to the enclosing report op"

    counters = [e for e in events if e.get("ph") == "C"]
    tracks = {c["name"].split(" stream")[0] for c in counters}
    assert tracks == {BANDWIDTH_TRACK, FLOPS_TRACK}
    assert len(counters) == 4 * len(kernels)
    bw = [c for c in counters if c["name"].startswith(BANDWIDTH_TRACK)]
    assert max(c["args"]["GB/s"] for c in bw) == pytest.approx(200.0)
    assert data["roofline"]["annotated_kernels"] == len(kernels)


def test_accepts_a_dict_and_leaves_it_untouched():
    trace = _fixture()
    report, _ = _report_of_first_step(trace)
    before = len(trace["traceEvents"])
    out = augment_trace(trace, report)
    assert len(trace["traceEvents"]) == before
    assert len(out["traceEvents"]) > before
    assert not any(k.startswith("roofline.") for e in trace["traceEvents"] for k in (e.get("args") or {}))
    # only the annotated events are copied: the others are the caller's own objects (no deep copy of a large trace)
    annotated = [i for i, e in enumerate(out["traceEvents"][:before]) if "roofline.bound" in (e.get("args") or {})]
    assert annotated and all(out["traceEvents"][i] is not trace["traceEvents"][i] for i in annotated)
    plain = [i for i in range(before) if i not in set(annotated)]
    assert plain and all(out["traceEvents"][i] is trace["traceEvents"][i] for i in plain)


def test_bad_trace_is_a_roofline_error(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text("{not json")
    with pytest.raises(RooflineError):
        augment_trace(bad, Report())
    with pytest.raises(RooflineError):
        augment_trace({"no": "events"}, Report())


def test_a_collectives_message_is_in_its_args_and_an_unrecorded_one_is_null():
    """As in report.json: a collective's recorded message is known though its row is unmodelled; one the trace
    did not size is null, not 0; a barrier's is 0 (it sends nothing)."""
    from roofline.render.chrome_trace import chrome_trace_from_report
    from roofline.render.trace_augment import op_args

    comm = {"bound": "communication", "time_s": 1e-3, "modeled": False}
    ops = [OpRecord(name="c10d::allreduce_", bytes=4096.0, **comm), OpRecord(name="c10d::allgather_", **comm),
           OpRecord(name="c10d::barrier", **comm), OpRecord(name="aten::mystery", bound="unmodeled", modeled=False)]
    assert [op_args(op)["roofline.bytes"] for op in ops] == [4096.0, None, 0.0, None]
    events = chrome_trace_from_report(Report(kind="trace", ops=ops))["traceEvents"]
    assert [e["args"]["bytes"] for e in events if e.get("cat") == "op"] == [4096.0, None, 0.0, None]


def test_a_trace_of_begin_end_pairs_is_written_back_as_complete_events_with_the_same_figures(tmp_path):
    """A trace whose spans are B/E pairs (Perfetto's JSON export): its trace.json.gz kept the pairs (which our Chrome
    trace promises never to hold) and annotated no op, kernel or counter, as only complete cpu_ops were looked at."""
    from tests.kineto_events import as_begin_end_pairs

    trace = _fixture()
    report, _ = _report_of_first_step(trace)
    pairs = tmp_path / "pairs.json"
    pairs.write_text(json.dumps(as_begin_end_pairs(trace)))
    expected = augment_trace(FIXTURE, report)
    data = augment_trace(pairs, report)
    assert not [e for e in data["traceEvents"] if e.get("ph") in ("B", "E")]
    assert data["roofline"] == expected["roofline"] and data["roofline"]["annotated_kernels"]

    def annotated(events):
        return sorted((e.get("name"), e.get("cat"), e["ts"], round(e.get("dur", 0.0), 3),
                       json.dumps(e.get("args"), sort_keys=True)) for e in events if e.get("ph") in ("X", "C"))

    assert annotated(data["traceEvents"]) == annotated(expected["traceEvents"])

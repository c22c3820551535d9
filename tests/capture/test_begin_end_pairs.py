"""Traces whose spans are begin/end pairs (ph B/E: Perfetto's JSON export, trace re-writers) read as the complete
events they stand for: the report of such a trace is the report of the torch.profiler trace it was made from. They
were refused ("its N timed events are begin/end pairs ... give it the trace torch.profiler wrote")."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import msgspec
import pytest

from roofline.analyze.trace_file import analyze_trace_file
from roofline.capture import kineto
from roofline.capture.kineto import load_trace
from tests.kineto_events import as_begin_end_pairs, write_trace, x

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "h200" / "bad_syncs_fwd_fp32.json.gz"
_ANY_FLOAT = pytest.approx


@pytest.fixture(scope="module")
def pair_of_traces(tmp_path_factory) -> tuple[Path, Path]:
    """The H200 fixture as recorded, and with its host spans (ops, annotations, runtime calls, Python frames,
    syncs) written as B/E pairs."""
    directory = tmp_path_factory.mktemp("begin_end")
    trace = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    complete = directory / "complete.json"
    complete.write_text(json.dumps(trace))
    pairs = directory / "pairs.json"
    pairs.write_text(json.dumps(as_begin_end_pairs(trace)))
    return complete, pairs


def _ops(trace):
    return [(op.name, op.pid, op.tid, op.ts_us, op.parent, op.depth, op.step, op.module, op.source, op.external_id,
             op.input_dims, op.is_annotation, op.is_backward) for op in trace.ops]


def test_a_trace_of_begin_end_pairs_reads_as_the_complete_events_it_stands_for(pair_of_traces):
    complete, pairs = (load_trace(p) for p in pair_of_traces)
    assert len(pairs.ops) == len(complete.ops) > 100
    assert _ops(pairs) == _ops(complete)
    assert [op.dur_us for op in pairs.ops] == [op.dur_us for op in complete.ops]  # to the ns, as written
    assert [(k.name, k.correlation, k.external_id) for k in pairs.kernels] == \
        [(k.name, k.correlation, k.external_id) for k in complete.kernels]
    assert [(s.name, s.call, s.correlation) for s in pairs.syncs] == \
        [(s.name, s.call, s.correlation) for s in complete.syncs]
    assert [(l.name, l.op, l.correlation) for l in pairs.launches] == \
        [(l.name, l.op, l.correlation) for l in complete.launches]
    assert pairs.steps == complete.steps and pairs.has_stack and pairs.has_shapes
    assert pairs.warnings == complete.warnings


def test_its_report_is_the_complete_traces(pair_of_traces):
    """Op times, kernels joined to ops, FLOPs, findings: all as from the trace torch.profiler wrote (times to the ns:
    a pair's duration is the difference of two timestamps of ~5e12 us, each a float to ~1 ns)."""
    complete, pairs = (analyze_trace_file(p) for p in pair_of_traces)
    assert len(pairs.ops) == len(complete.ops) > 10 and any(op.kernels for op in pairs.ops)
    assert any(op.flops for op in pairs.ops)
    left, right = (dict(_flat(r.to_dict())) for r in (complete, pairs))
    for where in [k for k in left if k.startswith((".workload", ".extra.trace.path", ".environment.timestamp"))]:
        del left[where], right[where]
    assert left.keys() == right.keys()
    assert {k: v for k, v in right.items() if type(v) is not float} == \
        {k: v for k, v in left.items() if type(v) is not float}
    floats = [k for k, v in left.items() if type(v) is float]
    assert [right[k] for k in floats] == _ANY_FLOAT([left[k] for k in floats], rel=1e-6, abs=1e-12)


def _flat(value, where=""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _flat(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _flat(item, f"{where}[{i}]")
    else:
        yield where, value


def test_pairs_that_straddle_the_split_are_paired(pair_of_traces, monkeypatch):
    """load_trace(split=True) reads a large trace's second half in a forked child: a span begun in one half and
    ended in the other (the profiler step open across the middle) must still be one event."""
    monkeypatch.setattr(kineto, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setattr(kineto.threading, "active_count", lambda: 1)
    _, pairs = pair_of_traces
    one, split = load_trace(pairs), load_trace(pairs, split=True)
    assert _ops(split) == _ops(one) and [op.dur_us for op in split.ops] == [op.dur_us for op in one.ops]
    assert split.steps == one.steps and len(split.steps) == 2
    assert [(l.name, l.op) for l in split.launches] == [(l.name, l.op) for l in one.launches]
    assert split.warnings == one.warnings


def _b(name, ts, pid=1, tid=1, cat="cpu_op", **args):
    return {"ph": "B", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "args": args}


def _e(ts, pid=1, tid=1, **fields):
    return {"ph": "E", "pid": pid, "tid": tid, "ts": ts, **fields}


def test_an_end_closes_the_latest_open_begin_of_its_thread_and_merges_its_args(tmp_path):
    events = [
        _b("ProfilerStep#3", 0, cat="user_annotation"),
        _b("aten::linear", 10, **{"External id": 1}),
        _b("aten::addmm", 10, **{"External id": 2, "Input Dims": [[4, 8], [8, 8], [8]]}),  # starts with its parent
        _b("aten::relu", 12, tid=2, **{"External id": 5}),  # another thread in between
        _e(20, **{"args": {"Input Dims": [[8], [4, 8], [8, 8]], "Sequence number": 7}}),  # E's args win
        _e(20),  # the same end: aten::linear, as long as its child
        _e(15, tid=2),
        _e(30, name="ProfilerStep#3", cat="user_annotation"),
        x("kernel", "gemm", 12.0, 3.0, pid=0, tid=7, correlation=9, **{"External id": 2}),
    ]
    trace = load_trace(write_trace(tmp_path, events))
    by_name = {op.name: op for op in trace.ops}
    step, linear, addmm, relu = (by_name[n] for n in ("ProfilerStep#3", "aten::linear", "aten::addmm", "aten::relu"))
    assert (linear.ts_us, linear.dur_us, addmm.ts_us, addmm.dur_us) == (10.0, 10.0, 10.0, 10.0)
    assert addmm.parent == linear.index and linear.parent == step.index  # the child stays the child at equal times
    assert addmm.input_dims == [[8], [4, 8], [8, 8]] and addmm.sequence_number == 7
    assert (relu.tid, relu.dur_us, relu.parent) == (2, 3.0, -1)
    assert [s.number for s in trace.steps] == [3] and trace.steps[0].dur_us == 30.0
    assert not any("begin" in w or "end events" in w for w in trace.warnings)


def test_unmatched_begins_and_ends_are_counted_warned_once_and_skipped(tmp_path):
    events = [
        _e(1),  # nothing open yet
        _b("ProfilerStep#0", 2, cat="user_annotation"),
        _b("aten::mm", 3, **{"External id": 1, "Input Dims": [[2, 2], [2, 2]]}),
        _e(5),
        _b("aten::add", 6, tid=3),  # never ended
        _e(7, tid=4),  # no begin on its thread
        _b("aten::bad", "soon"), _e(9),  # no usable ts
    ]
    trace = load_trace(write_trace(tmp_path, events))
    assert [op.name for op in trace.ops] == ["aten::mm"]  # the open ProfilerStep#0 and aten::add are skipped
    assert trace.ops[0].dur_us == 2.0
    said = [w for w in trace.warnings if "(ph B)" in w or "(ph E)" in w]
    assert said == ["2 begin events (ph B) never ended; 2 end events (ph E) with no open begin on their thread; "
                    "1 begin/end pairs without a usable ts: skipped"]


def test_a_span_held_back_by_an_open_one_is_read_when_that_one_never_ends(tmp_path):
    """A child that starts with its parent waits for the parent to end (to keep the order of equal spans); a parent
    cut off at a trimmed trace's end still lets its children through."""
    events = [_b("ProfilerStep#1", 0, cat="user_annotation"), _b("aten::mm", 0), _e(4)]
    trace = load_trace(write_trace(tmp_path, events))
    assert [(op.name, op.dur_us) for op in trace.ops] == [("aten::mm", 4.0)]
    assert any("1 begin events (ph B) never ended" in w for w in trace.warnings)


def test_begin_end_structs_stay_the_readers_events():
    """A pair becomes the reader's own event struct, so that the complete-event path reads it unchanged."""
    ev = kineto._Event(ph="B", cat="cpu_op", name="a", pid=1, tid=1, ts=1.0)
    pairs = kineto.BeginEndPairs()
    assert pairs.add(ev) == []
    (done,) = pairs.add(kineto._Event(ph="E", pid=1, tid=1, ts=3.5))
    assert isinstance(done, kineto._Event) and msgspec.structs.asdict(done) == {
        "ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1.0, "dur": 2.5, "args": None}


def test_every_span_as_a_pair_kernels_and_the_profilers_own_too(tmp_path):
    """Kernels, copies and Kineto's span of its record ("Trace") written as pairs as well: the record's span was taken
    for where the record ends and never stacked, so its end was left over ('1 end events (ph E) with no open begin')."""
    trace = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    every = {e.get("cat") for e in trace["traceEvents"] if e.get("ph") == "X"}
    assert {"Trace", "kernel", "gpu_memcpy"} <= every
    path = tmp_path / "every.json"
    path.write_text(json.dumps(as_begin_end_pairs(trace, every)))
    pairs, complete = load_trace(path), load_trace(FIXTURE)
    assert pairs.warnings == complete.warnings
    assert _ops(pairs) == _ops(complete) and pairs.steps == complete.steps
    assert [(k.name, k.ts_us, k.dur_us, k.correlation) for k in pairs.kernels] == \
        [(k.name, k.ts_us, k.dur_us, k.correlation) for k in complete.kernels]

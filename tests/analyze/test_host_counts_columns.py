"""fill_host_counts on columns (numpy) gives exactly what the per-event walk it replaced gave, on real H200 traces
(a training step with autograd's engine frames, a compiled graph whose annotations are kept as ops around chosen
children, syncs) and on a hand-written one with launches outside every op."""

from __future__ import annotations

import bisect
import copy
import json
from pathlib import Path

import pytest

from roofline.analyze import pipeline
from roofline.analyze.host_events import is_top_level
from roofline.analyze.join import children_index, subtree
from roofline.capture.kineto import load_trace
from roofline.report import Ceilings

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"
CEIL = Ceilings(device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.8e12,
                peak_flops_per_s={"float32": 67e12, "float16": 989e12}, launch_overhead_s=5e-6)
FIELDS = ("profiled_events", "profiled_top_level", "runtime_calls")


def _per_event(trace, event_to_report, ops, children) -> None:
    """The per-event walk fill_host_counts was (commit dc128ca), kept as the reference; since, an event in nested
    chosen subtrees counts once, for the innermost (a CPU op's own-time row holds its children's rows)."""
    owner: dict[int, int] = {}
    by_external_id: dict[int, int] = {}
    for event, index in event_to_report.items():
        events = subtree(event, children)
        own = _outside_nested(event, children, event_to_report)
        ops[index].profiled_events = len(own)
        ops[index].profiled_top_level = sum(is_top_level(trace, j) for j in own)
        ops[index].runtime_calls = 0
        for j in events:
            owner[j] = index
            external_id = trace.ops[j].external_id
            if external_id is not None:
                by_external_id.setdefault(external_id, index)
    starts: dict = {}
    for event, index in event_to_report.items():
        ev = trace.ops[event]
        starts.setdefault(ev.step, []).append((ev.ts_us, index))
    starts = {step: sorted(pairs) for step, pairs in starts.items()}

    def nxt(step, ts_us):
        pairs = starts.get(step)
        if not pairs:
            return None
        i = bisect.bisect_left([t for t, _ in pairs], ts_us)
        return pairs[i][1] if i < len(pairs) else None

    for j, ev in enumerate(trace.ops):
        if j not in owner and not ev.name.startswith("ProfilerStep#"):
            index = nxt(ev.step, ev.ts_us)
            if index is not None:
                ops[index].profiled_events += 1
                ops[index].profiled_top_level += is_top_level(trace, j)
    for launch in trace.launches:
        index = owner.get(launch.op)
        if index is None and launch.external_id is not None:
            index = by_external_id.get(launch.external_id)
        if index is None:
            index = nxt(trace.step_of(launch.ts_us) if trace.steps else None, launch.ts_us)
        if index is not None:
            ops[index].runtime_calls += 1


def _outside_nested(event: int, children, chosen) -> list[int]:
    """``event`` and the events below it that no other chosen event holds."""
    out, stack = [event], list(children.get(event, []))
    while stack:
        j = stack.pop()
        if j not in chosen:
            out.append(j)
            stack.extend(children.get(j, []))
    return out


def _both(monkeypatch, trace, event_to_report=None):
    """(columns', per-event walk's) counts of every report op, the second on a copy of the same ops."""
    seen = {}
    real = pipeline.fill_host_counts

    def both(trace, mapping, ops):
        mapping = event_to_report if event_to_report is not None else mapping
        reference = copy.deepcopy(ops)
        _per_event(trace, mapping, reference, children_index(trace))
        real(trace, mapping, ops)
        seen["reference"] = [tuple(getattr(op, f) for f in FIELDS) for op in reference]
        seen["ops"] = ops

    monkeypatch.setattr(pipeline, "fill_host_counts", both)
    pipeline.report_from_trace(trace, CEIL)
    return [tuple(getattr(op, f) for f in FIELDS) for op in seen["ops"]], seen["reference"]


@pytest.mark.parametrize("name", ["llama_tiny_train_fp16_b2_s256", "llama_tiny_fwd_fp16_compiled",
                                  "bad_syncs_fwd_fp32"])
def test_columns_match_the_per_event_walk_on_real_traces(monkeypatch, name):
    path = H200 / f"{name}.json.gz"
    if not path.exists():
        pytest.skip(f"fixture {path.name} not present")
    counts, reference = _both(monkeypatch, load_trace(path))
    assert counts == reference
    assert sum(c[0] for c in counts) > len(counts)  # nested aten events counted, not one per op
    assert any(c[2] for c in counts)


def test_nested_chosen_events_follow_the_mapping_order_like_the_walk(monkeypatch):
    """A mapping whose chosen events nest (an op kept around chosen children, listed after them and before):
    events outside every op, launches by External id and by enclosing op go where the walk sent them."""
    path = H200 / "llama_tiny_train_fp16_b2_s256.json.gz"
    if not path.exists():
        pytest.skip(f"fixture {path.name} not present")
    trace = load_trace(path)
    pipeline._ensure_attributed(trace)
    parents = [op.index for op in trace.ops if op.parent >= 0 and not trace.ops[op.parent].name.startswith("Prof")]
    kids = [i for i in parents[:400:3]]
    outer = sorted({trace.ops[i].parent for i in kids})
    mapping = {e: i for i, e in enumerate(kids[:60] + outer + kids[60:])}
    counts, reference = _both(monkeypatch, trace, mapping)
    assert counts == reference


def test_launches_outside_every_op_count_by_external_id_or_for_the_next_op(monkeypatch, tmp_path):
    def x(cat, name, ts, dur, **args):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}

    dims = {"Input Dims": [[8], [8]], "Input type": ["float", "float"]}
    events = [x("user_annotation", "ProfilerStep#1", 0, 100),
              x("cpu_op", "aten::add", 10, 10, **{"External id": 1}, **dims),
              x("cuda_runtime", "cudaLaunchKernel", 25, 1, correlation=11, **{"External id": 1}),
              x("user_annotation", "marker", 30, 2),
              x("cuda_runtime", "cudaGetDevice", 33, 1, correlation=12),
              x("cpu_op", "aten::mul", 40, 10, **{"External id": 2}, **dims),
              x("cuda_runtime", "cudaLaunchKernel", 41, 1, correlation=13, **{"External id": 2}),
              x("cuda_runtime", "cudaDeviceSynchronize", 120, 1, correlation=14),
              {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 50, "dur": 2,
               "args": {"correlation": 13, "device": 0, "stream": 7}}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    counts, reference = _both(monkeypatch, load_trace(path))
    assert counts == reference
    # add: its event and its launch (by External id, after its span); mul: the marker and the call before it
    assert counts == [(1, 1, 1), (2, 2, 2)]

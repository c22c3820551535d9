"""The op a launch or memory event ran in, found on columns (kineto._enclosing_ops), against the stack walk that
found it before: ops pushed in time order (longest first at equal starts), popped once ended, the stack emptied at a
profiler step's op; an instant at an op's start is inside it, one at its end is not."""

import json

import numpy as np
import pytest

from roofline.capture.kineto import _enclosing_ops, load_trace


def _stack_walk(op_threads, op_ts, op_ends, step_ops, threads, ts):
    """Parents of the ops and the enclosing op of each instant, by walking ops and instants with one stack per
    thread, in the order the sweep reads them: (thread, start, longest first, ops before instants)."""
    n = len(op_ts)
    items = [(op_threads[i], op_ts[i], -op_ends[i], 0, i) for i in range(n)]
    items += [(threads[e], ts[e], -ts[e], 1, e) for e in range(len(ts))]
    items.sort()
    parents = np.full(n, -1, dtype=np.int32)
    found = np.full(len(ts), -1, dtype=np.int64)
    stack: list[int] = []
    thread = None
    for th, t, _, kind, i in items:
        if th != thread:
            thread, stack = th, []
        while stack and op_ends[stack[-1]] <= t:
            stack.pop()
        if kind == 0:
            if i in step_ops:
                stack = []
            if stack:
                parents[i] = stack[-1]
            stack.append(i)
        elif stack:
            found[i] = stack[-1]
    return parents, found


@pytest.mark.parametrize("seed", range(40))
def test_enclosing_ops_match_the_stack_walk(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    starts = rng.integers(0, 50, n).astype(np.float64)
    # nested, overlapping and zero-length ops, some starting together
    durs = rng.choice([0.0, 1.0, 2.0, 5.0, 13.0, 40.0], n)
    op_threads_raw = rng.integers(0, 3, n)
    order = np.lexsort((-durs, starts))
    op_ts, op_ends = starts[order], (starts + durs)[order]
    op_threads = op_threads_raw[order].astype(np.int64)
    step_ops = set(rng.choice(n, size=min(n, int(rng.integers(0, 3))), replace=False).tolist())
    m = int(rng.integers(0, 80))
    threads = rng.integers(0, 4, m).astype(np.int64)  # thread 3 has no op
    ts = rng.integers(-2, 60, m).astype(np.float64)
    ts[: m // 4] = rng.choice(np.concatenate([op_ts, op_ends]), m // 4)  # instants at ops' starts and ends
    parents, expected = _stack_walk(op_threads.tolist(), op_ts.tolist(), op_ends.tolist(), step_ops,
                                    threads.tolist(), ts.tolist())
    found = _enclosing_ops(threads, ts, op_threads, op_ts, op_ends, parents)
    assert found.tolist() == expected.tolist()


def test_no_instants_or_no_ops():
    empty = np.zeros(0)
    assert _enclosing_ops(empty.astype(np.int64), empty, np.zeros(1, np.int64), np.zeros(1), np.ones(1),
                          np.full(1, -1, np.int32)).tolist() == []
    assert _enclosing_ops(np.zeros(2, np.int64), np.ones(2), empty.astype(np.int64), empty, empty,
                          np.zeros(0, np.int32)).tolist() == [-1, -1]


def test_a_trace_gives_launches_and_memory_events_their_op(tmp_path):
    """Through load_trace: a launch inside a child op belongs to the child, one after it to the parent, one on
    another thread or after every op to none; a memory event at an op's end belongs to its parent."""
    def op(name, ts, dur, tid=1):
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": {}}

    def launch(ts, corr, tid=1):
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": tid, "ts": ts,
                "dur": 1, "args": {"correlation": corr}}

    def memory(ts):
        return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
                "args": {"Bytes": 64, "Total Allocated": 64, "Total Reserved": 1024, "Device Id": -1,
                         "Device Type": 0, "Addr": 1}}

    events = [op("aten::linear", 0, 100), op("aten::addmm", 10, 20), launch(15, 1), launch(40, 2), launch(15, 3, 2),
              launch(150, 4), memory(30), memory(10)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    trace = load_trace(path)
    names = [op.name for op in trace.ops]
    by_corr = {launch.correlation: launch.op for launch in trace.launches}
    assert names[by_corr[1]] == "aten::addmm"
    assert names[by_corr[2]] == "aten::linear"
    assert by_corr[3] == -1 and by_corr[4] == -1
    assert sorted(names[m.op] for m in trace.memory) == ["aten::addmm", "aten::linear"]

"""The trace's memory summary worked out on columns equals the event-by-event replay (summarize_memory of
memory_events_from_trace) on traces made to hit its edges: counter totals recorded or not, two devices, a reused
address, frees before any allocation, ties in time and size, and more events than timeline points."""

from __future__ import annotations

import random

import msgspec
import pytest

from roofline.capture.trace_memory import (COUNTER_PROFILER, memory_events_from_trace, memory_from_trace,
                                           summarize_memory)
from roofline.capture.trace_model import CpuOp, MemoryEvent, Trace


def _replayed(trace: Trace) -> bytes:
    events = memory_events_from_trace(trace)
    return msgspec.json.encode(summarize_memory(events, COUNTER_PROFILER))


def _trace(events: list[MemoryEvent]) -> Trace:
    ops = [CpuOp(i, f"aten::op{i}", float(i), 1.0, 1, 1) for i in range(5)]
    ops[2].module, ops[3].source = "layers.0.mlp", "model.py(12): forward"
    return Trace(path="memory.json", ops=ops, memory=events)


def _random_events(seed: int, n: int, *, with_totals: bool, devices: tuple[int, ...]) -> list[MemoryEvent]:
    rng = random.Random(seed)
    live: dict[int, int] = {}
    events, total = [], 0
    for _ in range(n):
        ts = float(rng.randrange(0, n // 3 + 1))  # ties in time
        if live and rng.random() < 0.45:
            addr = rng.choice(list(live))
            size = -live.pop(addr)
        else:
            addr = rng.randrange(0, 40)  # addresses reused
            size = rng.choice([256, 512, 4096, 4096, 1 << 20])  # ties in size
            live[addr] = size
        total += size
        recorded = with_totals and rng.random() < 0.8
        events.append(MemoryEvent(ts, size, addr if rng.random() > 0.05 else None, total if recorded else None,
                                  total + 8192 if recorded else None, rng.choice(devices), 0, rng.randrange(-1, 7)))
    return events


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n", [7, 400, 401, 2_503])
def test_columns_equal_the_replay_on_random_traces(seed, n):
    for with_totals in (False, True):
        for devices in ((0,), (1,), (0, 1)):
            trace = _trace(_random_events(seed, n, with_totals=with_totals, devices=devices))
            assert msgspec.json.encode(memory_from_trace(trace)) == _replayed(trace)


def test_only_frees_peak_at_zero_with_no_live_tensor():
    trace = _trace([MemoryEvent(float(i), -100, i, None, None, 1, 0, -1) for i in range(3)])
    summary = memory_from_trace(trace)
    assert summary.peak_allocated_bytes == 0 and summary.peak_live_tensors == []
    assert msgspec.json.encode(summary) == _replayed(trace)


def test_largest_live_tensors_at_the_peak_name_their_ops():
    events = [MemoryEvent(0.0, 100, 1, None, None, 0, 0, 2), MemoryEvent(1.0, 300, 2, None, None, 0, 0, 3),
              MemoryEvent(2.0, -100, 1, None, None, 0, 0, 2), MemoryEvent(3.0, 50, 3, None, None, 0, 0, -1)]
    summary = memory_from_trace(_trace(events))
    assert summary.peak_allocated_bytes == 400
    assert [(t.bytes, t.op, t.module, t.source) for t in summary.peak_live_tensors] == [
        (300, "aten::op3", "", "model.py(12): forward"), (100, "aten::op2", "layers.0.mlp", None)]
    assert summary.peak_reserved_bytes is None

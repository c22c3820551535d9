"""MemoryTracker and the trace-based memory summary: peaks on known patterns and on real H200 traces."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
import torch

from roofline.capture.memory import (
    COUNTER_DISPATCH,
    MemoryEvent,
    MemoryTracker,
    memory_from_trace,
    summarize_memory,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "h200"
MiB = 1 << 20


def _make_pattern() -> torch.Tensor:
    a = torch.empty(MiB // 4)  # 1 MiB
    b = torch.empty(2 * MiB // 4)  # 2 MiB
    del a
    c = torch.empty(4 * MiB // 4)  # 4 MiB: peak = b + c = 6 MiB
    del b
    d = torch.empty(MiB // 4)  # 1 MiB: live = c + d = 5 MiB, below the peak
    return c + 0 if d is None else c


def test_tracker_peak_on_a_known_allocation_pattern() -> None:
    gc.collect()
    with MemoryTracker() as mem:
        kept = _make_pattern()
        del kept
    summary = mem.summary()
    assert summary.counter == COUNTER_DISPATCH
    assert summary.peak_allocated_bytes == 6 * MiB
    sizes = [t.bytes for t in summary.peak_live_tensors]
    assert sizes == [4 * MiB, 2 * MiB]
    biggest = summary.peak_live_tensors[0]
    assert biggest.shape == [MiB] and biggest.dtype == "float32" and biggest.op.startswith("empty")
    assert biggest.source is not None and biggest.source.endswith(f"test_memory.py:{_make_pattern.__code__.co_firstlineno + 4}")
    assert summary.timeline[-1][1] == 0.0, "everything made in the window was freed"


def test_tracker_names_the_module_that_made_a_tensor() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    x = torch.randn(32, 64)
    with torch.no_grad(), MemoryTracker() as mem:
        model(x)
    modules = {e.module for e in mem.events if e.bytes > 0}
    assert {"0", "2"} <= modules
    assert all(e.op for e in mem.events if e.bytes > 0)


def test_tracker_does_not_count_views_or_inplace_outputs() -> None:
    x = torch.randn(1024)
    with MemoryTracker() as mem:
        y = x.view(32, 32).t()
        x.add_(1)
        y.relu_()
    assert mem.events == []


def test_summary_prefers_the_counters_running_total() -> None:
    events = [
        MemoryEvent(0.0, 100, "cuda:0", 1, total_bytes=1100),
        MemoryEvent(1.0, 50, "cuda:0", 2, total_bytes=1150),
        MemoryEvent(2.0, -100, "cuda:0", 1, total_bytes=1050),
    ]
    summary = summarize_memory(events, "allocated", reference_peak_bytes=1150, reference_counter="ref")
    assert summary.peak_allocated_bytes == 1150
    assert [t.bytes for t in summary.peak_live_tensors] == [100, 50]
    assert summary.reference_peak_bytes == 1150 and summary.reference_counter == "ref"


def test_summary_timeline_is_downsampled_but_keeps_the_peak() -> None:
    events = [MemoryEvent(float(i), 1, "cpu", i) for i in range(5000)]
    events += [MemoryEvent(5000.0 + i, -1, "cpu", i) for i in range(5000)]
    summary = summarize_memory(events, "c")
    assert len(summary.timeline) <= 400
    assert max(b for _, b in summary.timeline) == summary.peak_allocated_bytes == 5000


@pytest.mark.parametrize(
    "name", ["bad_syncs_fwd_fp32.json.gz", "resnet50_fwd_fp32_b32.json.gz", "bert_base_fwd_fp32_b16_s128.json.gz"]
)
def test_trace_peak_matches_max_memory_allocated_within_5_percent(name: str) -> None:
    kineto = pytest.importorskip("roofline.capture.kineto")
    truth = json.loads((DATA / "MANIFEST.json").read_text())["traces"][name]["max_memory_allocated_bytes"]
    summary = memory_from_trace(kineto.load_trace(DATA / name), reference_peak_bytes=truth)
    assert abs(summary.peak_allocated_bytes - truth) <= 0.05 * truth
    assert "allocated" in summary.counter and summary.peak_reserved_bytes >= summary.peak_allocated_bytes
    top = summary.peak_live_tensors[0]
    assert top.bytes > 0 and top.op.startswith("aten::") and top.source


@pytest.mark.cuda
def test_cuda_tracker_peak_matches_max_memory_allocated() -> None:
    x = torch.randn(1024, 1024, device="cuda")
    with MemoryTracker() as mem:
        y = x @ x
        z = y.relu() + 1
        del y, z
    summary = mem.summary()
    assert abs(summary.peak_allocated_bytes - summary.reference_peak_bytes) <= 0.05 * summary.reference_peak_bytes

"""CUDA graph captures under roofline (capture/cuda_graphs.py), exercised on the CPU through a stand-in graph class:
the ops dispatched between capture_begin and capture_end are recorded per graph, each replay under a profiler is
labelled with its graph's capture number, and every patch is undone, also when the user's code raises."""

from __future__ import annotations

import sys

import pytest
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

from fake_cuda_graph import FakeGraph
from roofline.capture.cuda_graphs import GraphCaptures
from roofline.capture.trace_model import GRAPH_REPLAY_LABEL


ORIGINALS = {name: FakeGraph.__dict__[name] for name in ("capture_begin", "capture_end", "replay")}


def _restored() -> bool:
    return all(FakeGraph.__dict__[name] is fn for name, fn in ORIGINALS.items())


def _capture(graph: FakeGraph, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    graph.capture_begin()
    try:
        return torch.relu(a @ b)
    finally:
        graph.capture_end()


def test_the_ops_a_capture_dispatched_are_recorded_and_counted_per_graph():
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    with GraphCaptures(FakeGraph) as graphs:
        first, second = FakeGraph(), FakeGraph()
        _capture(first, a, b)
        torch.sigmoid(a)  # outside any capture: not a graph's
        _capture(second, a.double(), b.double())
    assert _restored()
    assert len(graphs.graphs) == 2
    one, two = (graphs.graphs[n] for n in sorted(graphs.graphs))
    assert two.number > one.number
    assert [op.name for op in one.ops] == ["aten::mm", "aten::relu"]
    assert one.ops[0].cost.flops == 2 * 8 * 16 * 4 and one.ops[0].dtype == "float32"
    assert [op.dtype for op in two.ops] == ["float64", "float64"] and not one.inductor


def test_every_patch_is_undone_and_the_mode_popped_when_the_users_code_raises_inside_a_capture():
    graph = FakeGraph()
    with pytest.raises(ValueError):
        with GraphCaptures(FakeGraph):
            graph.capture_begin()
            torch.ones(3) + 1
            raise ValueError("the user's capture failed")  # never reaches capture_end
    assert _restored()
    assert _get_current_dispatch_mode() is None


def test_a_capture_ended_by_a_failing_capture_end_keeps_no_graph_and_pops_its_mode():
    class Failing(FakeGraph):
        def capture_end(self) -> None:
            raise RuntimeError("operation not permitted when stream is capturing")

    with GraphCaptures(Failing) as graphs:
        graph = Failing()
        graph.capture_begin()
        torch.ones(3) * 2
        with pytest.raises(RuntimeError):
            graph.capture_end()
        assert _get_current_dispatch_mode() is None
    assert graphs.graphs == {} and "capture_end" in Failing.__dict__


def test_nested_sessions_patch_once_and_restore_when_the_last_one_exits():
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    with GraphCaptures(FakeGraph) as outer:
        with GraphCaptures(FakeGraph) as inner:
            graph = FakeGraph()
            _capture(graph, a, b)
        assert not _restored()  # the outer session still watches
        graph.replay()
    assert _restored()
    assert list(inner.graphs) == list(outer.graphs) and outer.replays == 1 and inner.replays == 0


def test_a_graph_captured_under_an_earlier_session_is_known_to_a_later_one_that_sees_it_replay():
    graph = FakeGraph()
    with GraphCaptures(FakeGraph) as first:
        _capture(graph, torch.randn(2, 3), torch.randn(3, 2))
    unseen = FakeGraph()
    unseen.capture_begin()
    unseen.capture_end()  # captured with nothing watching
    with GraphCaptures(FakeGraph) as later:
        graph.replay()
        unseen.replay()
    assert later.graphs == first.graphs and later.replays == 2 and later.unseen_replays == 1


def test_a_replay_under_the_profiler_is_labelled_with_its_capture_number(tmp_path):
    from roofline.capture.kineto import load_trace

    with GraphCaptures(FakeGraph) as graphs:
        graph = FakeGraph()
        _capture(graph, torch.randn(2, 3), torch.randn(3, 2))
        graph.replay()  # no profiler: no label
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            graph.replay()
    assert graph.replays == 2
    (number,) = graphs.graphs
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = load_trace(path)
    labels = [op for op in trace.ops if op.name.startswith(GRAPH_REPLAY_LABEL)]
    assert [op.name for op in labels] == [f"{GRAPH_REPLAY_LABEL}{number}"]
    assert not labels[0].is_annotation  # read as an op of its own, which the replay's kernels go to


def test_the_profiling_context_records_captures_from_its_start_and_restores_the_class(monkeypatch):
    from roofline.capture.profiling import StepProfiler

    monkeypatch.setattr(torch.cuda, "CUDAGraph", FakeGraph)
    graph = FakeGraph()
    a, b = torch.randn(8, 8), torch.randn(8, 8)
    with StepProfiler(wait=1, warmup=0, active=2, device="cpu", detect_syncs=False, whole_block=False) as context:
        for i in range(context.total_steps):
            if i == 0:
                _capture(graph, a, b)
            else:
                graph.replay()
            context.step()
    record = context.record()
    assert _restored()
    assert list(record.graphs) and [op.name for op in next(iter(record.graphs.values())).ops] == ["aten::mm",
                                                                                                  "aten::relu"]


def test_inductors_kernels_launched_inside_a_graph_trees_capture_are_recorded_by_name(monkeypatch):
    """Under torch.compile(mode="reduce-overhead") the capture runs Inductor's code: its Triton kernels launch
    through CachingAutotuner.run, not the dispatcher. While such a capture is open the launcher is wrapped, each
    kernel recorded with its buffers and counted as a trace's triton_* event is; it is restored at capture_end."""
    from roofline.capture import cuda_graphs

    class Launcher:  # stands in for torch._inductor.runtime.triton_heuristics.CachingAutotuner
        def __init__(self, name):
            self.inductor_meta = {"kernel_name": name}

        def run(self, *args, stream=None):
            return None

    original_run = Launcher.__dict__["run"]
    monkeypatch.setattr(cuda_graphs, "_inductor_launcher", lambda: Launcher)
    monkeypatch.setattr(cuda_graphs, "_under_inductor", lambda: True)
    buf_in, buf_out = torch.randn(64, 32), torch.empty(64, 32)
    gelu = Launcher("triton_poi_fused_gelu_0")
    with GraphCaptures(FakeGraph) as graphs:
        graph = FakeGraph()
        graph.capture_begin()
        torch.mm(buf_in, torch.randn(32, 32), out=buf_out)  # an extern call: dispatched
        gelu.run(buf_out, buf_in, 2048, stream=0)
        graph.capture_end()
        assert Launcher.__dict__["run"] is original_run  # unwrapped once the capture ended
        gelu.run(buf_out, buf_in, 2048, stream=0)  # outside a capture: not a graph's
    (captured,) = graphs.graphs.values()
    assert captured.inductor and [op.name for op in captured.ops][-1] == "triton_poi_fused_gelu_0"
    kernel = captured.ops[-1]
    assert kernel.cost.modeled and kernel.cost.bytes == 2 * 64 * 32 * 4 and kernel.cost.flops > 0
    assert sum(op.name == "triton_poi_fused_gelu_0" for op in captured.ops) == 1


def test_a_labelled_replay_takes_the_users_line_and_its_time_is_not_the_tools(tmp_path):
    """The label is opened in roofline's replay wrapper: that frame holds the user's replay (its launch), so it is
    no tool frame (tool_frames.py), and the op takes the line of the user's code that replayed the graph."""
    from roofline.capture.kineto import load_trace
    from roofline.capture.tool_frames import is_tool_frame

    assert not is_tool_frame("roofline/capture/cuda_graphs.py(150): replay")
    assert is_tool_frame("roofline/capture/profiling.py(184): _sync")
    with GraphCaptures(FakeGraph):
        graph = FakeGraph()
        _capture(graph, torch.randn(2, 3), torch.randn(3, 2))
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_stack=True) as prof:
            graph.replay()
            line = sys._getframe().f_lineno - 1
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    (label,) = [op for op in load_trace(path).ops if op.name.startswith(GRAPH_REPLAY_LABEL)]
    assert label.source.endswith(f"test_cuda_graphs.py:{line}")

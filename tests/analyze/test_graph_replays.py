"""A CUDA graph replay's row (analyze/graph_replays.py): the work its capture dispatched, where roofline saw the
capture; unmodelled with a note saying why and what to do where it did not. Synthetic Kineto traces, and the live
paths on the CPU with a stand-in graph class (tests/capture/test_cuda_graphs.py's FakeGraph)."""

from __future__ import annotations

import pytest
import torch

from fake_cuda_graph import FakeGraph
from kineto_events import write_trace, x
from roofline.analyze.graph_replays import (CAPTURE_NOT_GIVEN_NOTE, CAPTURED_BEFORE_NOTE, GRAPH_REPLAY_NOTE,
                                            INDUCTOR_CAPTURE, INDUCTOR_NO_KERNELS)
from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace
from roofline.capture.recording import CapturedGraph, OpRecording, RecordedOp
from roofline.capture.trace_model import GRAPH_REPLAY_LABEL, GRAPH_REPLAY_OP
from roofline.count.registry import OpCost
from roofline.device.cache import ceilings_for_device_name

H200 = [{"id": 0, "name": "NVIDIA H200", "computeMajor": 9, "computeMinor": 0}]
LABEL = f"{GRAPH_REPLAY_LABEL}7"


def _op(name, flops, moved, dtype="float16", modeled=True):
    return RecordedOp(name, [], [], OpCost(flops, moved, modeled), dtype, "", "forward", None)


GRAPH = CapturedGraph(7, [_op("aten::mm", 2e9, 3e6), _op("aten::gelu", 8e6, 4e6), _op("aten::mm", 1e9, 2e6, "float32"),
                          _op("aten::empty", 0.0, 0.0)])


@pytest.fixture(scope="module")
def h200():
    return ceilings_for_device_name("NVIDIA H200")


def _trace(tmp_path, labelled=True, compiled=False, calls=1):
    """Two profiled steps, each replaying the graph ``calls`` times: under roofline's label (or unlabelled) and, for
    ``compiled``, each inside a torch.compile graph call (CUDA graph trees)."""
    events = []
    for step, t0 in enumerate((0, 1000)):
        events.append(x("user_annotation", f"ProfilerStep#{step + 1}", t0, 900))
        for call in range(calls):
            at = t0 + 10 + 300 * call
            if compiled:
                events.append(x("user_annotation", "## Call CompiledFxGraph fabc ##", at - 5, 60))
            if labelled:
                events.append(x("user_annotation", LABEL, at, 30))
            correlation = 50 + 10 * step + call
            events += [x("cuda_runtime", "cudaGraphLaunch", at + 2, 20, correlation=correlation),
                       x("kernel", "sm90_gemm", at + 90, 40, pid=0, tid=7, correlation=correlation, device=0,
                         stream=7),
                       x("kernel", "gelu_kernel", at + 140, 10, pid=0, tid=7, correlation=correlation, device=0,
                         stream=7)]
    return load_trace(write_trace(tmp_path, events, deviceProperties=H200))


def test_a_labelled_replay_row_carries_its_captured_graphs_summed_work(tmp_path, h200):
    report = report_from_trace(_trace(tmp_path), h200, graphs={7: GRAPH})
    rows = [op for op in report.ops if op.name == LABEL]
    assert len(rows) == 2 and all(op.modeled and len(op.kernels) == 2 for op in rows)
    assert rows[0].flops == 3.008e9 and rows[0].bytes == 9e6
    assert rows[0].dtype == "float16" and rows[0].bound in ("compute", "memory")  # most of its FLOPs are fp16
    assert report.summary.total_flops == 2 * 3.008e9 and report.summary.unmodeled_time_share == 0.0
    (note,) = [n for n in report.summary.notes if n.startswith("CUDA graph #7")]
    assert "2 replay row(s)" in note and "4 aten op(s) its capture dispatched (mm x2, gelu x1, empty x1)" in note
    assert "exact" in note and INDUCTOR_CAPTURE not in note
    assert report.extra["cuda_graphs"] == {"7": {"ops": 4, "flops": 3.008e9, "bytes": 9e6, "dtype": "float16",
                                                 "inductor": False, "unmodelled_ops": 0}}


def test_a_replay_with_unmodelled_captured_ops_says_its_count_is_a_lower_bound(tmp_path, h200):
    graph = CapturedGraph(7, [_op("aten::mm", 2e9, 3e6), _op("mylib::fused", 0.0, 0.0, modeled=False)])
    report = report_from_trace(_trace(tmp_path), h200, graphs={7: graph})
    (note,) = [n for n in report.summary.notes if n.startswith("CUDA graph #7")]
    assert "1 captured op(s) have no formula and add nothing (mylib::fused): a lower bound" in note


def test_a_graph_captured_by_inductor_says_how_its_triton_kernels_were_counted(tmp_path, h200):
    kernels = CapturedGraph(7, [_op("aten::mm", 2e9, 3e6), _op("triton_poi_fused_gelu_0", 8e6, 4e6)], inductor=True)
    report = report_from_trace(_trace(tmp_path), h200, graphs={7: kernels})
    (note,) = [n for n in report.summary.notes if n.startswith("CUDA graph #7")]
    assert note.endswith(INDUCTOR_CAPTURE) and "the 2 op(s) its capture ran (mm x1, triton_poi_fused_gelu_0 x1)" in note
    assert [op.flops for op in report.ops if op.name == LABEL] == [2.008e9, 2.008e9]
    extern_only = CapturedGraph(7, [_op("aten::mm", 2e9, 3e6)], inductor=True)
    report = report_from_trace(_trace(tmp_path), h200, graphs={7: extern_only})
    (note,) = [n for n in report.summary.notes if n.startswith("CUDA graph #7")]
    assert note.endswith(INDUCTOR_NO_KERNELS) and "a lower bound" in INDUCTOR_NO_KERNELS


def test_a_labelled_replay_whose_capture_is_not_given_stays_unmodelled_and_says_so(tmp_path, h200):
    report = report_from_trace(_trace(tmp_path), h200)  # `roofline trace` of a file roofline recorded
    rows = [op for op in report.ops if op.name == LABEL]
    assert len(rows) == 2 and not any(op.modeled or op.flops for op in rows)
    assert any(n.startswith(f"{LABEL} unmodelled (2 call(s)") and n.endswith(CAPTURE_NOT_GIVEN_NOTE)
               for n in report.summary.notes), report.summary.notes


def test_an_unlabelled_replay_says_why_it_is_unmodelled_and_what_to_do(tmp_path, h200):
    trace_file = report_from_trace(_trace(tmp_path, labelled=False), h200)
    assert any(n.startswith(f"{GRAPH_REPLAY_OP} unmodelled (2 call(s)") and n.endswith(GRAPH_REPLAY_NOTE)
               for n in trace_file.summary.notes)
    assert "capture the graph while roofline records" in GRAPH_REPLAY_NOTE
    live = report_from_trace(_trace(tmp_path, labelled=False), h200, graphs={})  # roofline watched; no capture seen
    assert any(n.endswith(CAPTURED_BEFORE_NOTE) for n in live.summary.notes)
    assert "captured before roofline began recording" in CAPTURED_BEFORE_NOTE


def test_under_graph_trees_the_recorded_ops_of_the_compiled_call_go_to_its_replay_once(tmp_path, h200):
    """torch.compile(mode="reduce-overhead") analysed live: the counting pass (run eagerly) recorded the model's
    ops, none of which has an event in the timed trace; the graph call's kernels ran inside a CUDA graph replay, so
    no Triton kernel row counts them. Dropping the recorded ops' work (as for a GPU graph call whose kernels are
    rows) lost it all: the replay's row carries it, in place of its capture's partial count (extern mm only)."""
    recording = OpRecording(ops=[_op("aten::addmm", 2e9, 3e6), _op("aten::gelu", 8e6, 4e6),
                                 _op("aten::addmm", 1e9, 2e6)])
    partial = CapturedGraph(7, [_op("aten::mm", 3e9, 5e6)], inductor=True)
    report = report_from_trace(_trace(tmp_path, compiled=True), h200, recording, graphs={7: partial})
    (replay,) = [op for op in report.ops if op.name == LABEL]
    assert replay.modeled and replay.flops == 3.008e9 and replay.bytes == 9e6 and replay.dtype == "float16"
    assert report.summary.total_flops == 3.008e9  # once: the recorded rows keep no work, the capture's is replaced
    assert all(op.flops == 0 for op in report.ops if op.name != LABEL)
    notes = " ".join(report.summary.notes)
    assert "3 of them ran in 1 CUDA graph replay(s)" in notes
    assert "CUDA graph #7 (" not in notes  # its row is not counted from the capture


def test_under_graph_trees_a_replay_whose_recorded_ops_stay_theirs_counts_nothing_itself(tmp_path, h200):
    """Two compiled graph calls in the step, none of the recorded ops matched to an event: which call ran which op
    is unknown, so the recorded rows keep their work (at 0 s) and each replay's row, its capture's count dropped,
    holds its time unmodelled: the work is counted once, not once more per replay."""
    recording = OpRecording(ops=[_op("aten::addmm", 2e9, 3e6), _op("aten::gelu", 8e6, 4e6)])
    partial = CapturedGraph(7, [_op("aten::mm", 2e9, 3e6), _op("triton_poi_fused_gelu_0", 8e6, 4e6)], inductor=True)
    report = report_from_trace(_trace(tmp_path, compiled=True, calls=2), h200, recording, graphs={7: partial})
    rows = [op for op in report.ops if op.name == LABEL]
    assert len(rows) == 2 and not any(op.modeled or op.flops for op in rows) and all(op.time_s for op in rows)
    assert report.summary.total_flops == 2.008e9
    assert any(n.startswith("2 CUDA graph replay row(s) of torch.compile's CUDA graph trees") for n in
               report.summary.notes)


class LazilyGraphed(torch.nn.Module):
    """A model that captures its forward into a graph on its first call and replays it afterwards (the pattern of
    benchmarks/gpu_sweep_cases.py's cuda_graph_replay), on a stand-in graph class."""

    def __init__(self, graph_class) -> None:
        super().__init__()
        self.inner = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 16))
        self.graph_class = graph_class
        self.graph = None

    def forward(self, x):
        if self.graph is None:
            self.graph = self.graph_class()
            self.static_in = x.clone()
            self.graph.capture_begin()
            try:
                self.static_out = self.inner(self.static_in)
            finally:
                self.graph.capture_end()
        self.static_in.copy_(x)
        self.graph.replay()
        return self.static_out


def test_analyze_counts_a_graph_the_model_captured_in_its_warm_up(monkeypatch, cpu_ceilings, tmp_path):
    from roofline.analyze.live import analyze_model
    from roofline.api import count_flops_per_op

    fake = FakeGraph
    monkeypatch.setattr(torch.cuda, "CUDAGraph", fake)
    x_in = torch.randn(8, 32)
    model = LazilyGraphed(fake)
    eager = sum(op.flops for op in count_flops_per_op(model.inner, (x_in,)))
    report = analyze_model(model, (x_in,), device="cpu", ceilings=cpu_ceilings, warmup=1, iters=2)
    rows = [op for op in report.ops if op.name.startswith(GRAPH_REPLAY_LABEL)]
    assert len(rows) == 1 and rows[0].modeled and rows[0].flops == eager > 0
    assert report.summary.total_flops == eager  # the copy_ into the static input adds bytes, no FLOPs
    (graph,) = report.extra["cuda_graphs"].values()
    assert graph["flops"] == eager and graph["ops"] >= 3
    assert "capture_begin" in fake.__dict__ and fake.capture_begin.__name__ == "capture_begin"
    assert fake.__dict__["replay"].__qualname__.startswith("FakeGraph")  # restored
    from roofline.report import Report

    loaded = Report.load(report.save(tmp_path / "report.json.gz"))
    assert [op.flops for op in loaded.ops if op.name == rows[0].name] == [eager]
    assert loaded.extra["cuda_graphs"] == report.extra["cuda_graphs"]


GRAPHED_SCRIPT = '''\
import torch


class Graphed(torch.nn.Module):
    def __init__(s, inner, x):
        super().__init__()
        s.inner, s.static_in = inner, x.clone()
        s.graph = torch.cuda.CUDAGraph()
        s.graph.capture_begin()
        with torch.no_grad():
            s.static_out = inner(s.static_in)
        s.graph.capture_end()

    def forward(s, x):
        s.static_in.copy_(x)
        s.graph.replay()
        return s.static_out


torch.manual_seed(0)
g = Graphed(torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64)), torch.randn(8, 64))
for _ in range(12):
    g(torch.randn(8, 64))
'''


def test_roofline_profile_of_a_script_that_captures_at_its_start_counts_every_replay(tmp_path, monkeypatch,
                                                                                      cpu_ceilings):
    """`roofline profile SCRIPT.py`'s path (profile_script under a ProfilingContext, then report_from_profile): the
    script captures its graph while it builds the model, before any step, and every profiled step replays it."""
    from roofline.analyze.profiled import report_from_profile
    from roofline.api import ProfilingContext, count_flops_per_op
    from roofline.capture.script_runner import profile_script

    monkeypatch.setattr(torch.cuda, "CUDAGraph", FakeGraph)
    script = tmp_path / "graphed.py"
    script.write_text(GRAPHED_SCRIPT)
    context = ProfilingContext(wait=1, timed=1, warmup=1, active=3, device="cpu", whole_block=False,
                               detect_syncs=False)
    run = profile_script(context, script, [])
    assert run.error is None and "capture_begin" in FakeGraph.__dict__
    report = report_from_profile(context.record(), cpu_ceilings, cpu_ceilings=None)
    torch.manual_seed(0)
    inner = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64))
    eager = sum(op.flops for op in count_flops_per_op(inner, (torch.randn(8, 64),)))
    rows = [op for op in report.ops if op.name.startswith(GRAPH_REPLAY_LABEL)]
    assert len(rows) == 3 and all(op.modeled and op.flops == eager > 0 for op in rows)
    assert all(op.source.endswith("graphed.py:16") and op.module == "Graphed_0" for op in rows)  # where it replayed
    assert any(n.startswith("CUDA graph #") and "3 replay row(s)" in n for n in report.summary.notes)

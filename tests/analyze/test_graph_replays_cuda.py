"""CUDA graphs through the live paths on a real GPU (skipped by `make test`; on the device:
`PYTHONPATH=src python3 -m pytest -m cuda tests/analyze/test_graph_replays_cuda.py`): each replay's row carries the
work of the ops its capture ran, the eager model's counted FLOPs. The workloads are benchmarks/cuda_graphs_gpu.py's."""

from __future__ import annotations

import pytest
import torch

from benchmark_scripts import load_benchmark
from roofline.analyze.graph_replays import CAPTURED_BEFORE_NOTE, INDUCTOR_CAPTURE
from roofline.capture.trace_model import GRAPH_REPLAY_LABEL, GRAPH_REPLAY_OP, is_graph_replay

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("cuda_graphs_gpu")


@pytest.fixture(scope="module")
def gpu_ceilings(bench):
    return bench._ceilings()


def _workload(bench):
    inner = bench.mlp(4, 512, "cuda")
    x = torch.randn(64, 512, device="cuda", dtype=torch.float16)
    return inner, x


def _replays(report):
    return [op for op in report.ops if op.name.startswith(GRAPH_REPLAY_LABEL)]


def test_analyze_gives_a_hand_captured_graphs_replay_the_eager_models_flops(bench, gpu_ceilings):
    inner, x = _workload(bench)
    expected = bench.eager_flops(inner, x, False)
    report = bench.analyze(bench.LazilyGraphed(inner), x, gpu_ceilings)
    (row,) = _replays(report)
    assert row.modeled and row.kernels and row.time_s > 0 and row.dtype == "float16"
    assert row.flops == pytest.approx(expected, rel=1e-9) and row.bytes > 0
    assert report.summary.total_flops == pytest.approx(expected, rel=1e-9)
    assert report.summary.unmodeled_time_share < 0.05
    assert any(n.startswith("CUDA graph #") and "exact" in n for n in report.summary.notes)


def test_a_profiling_context_gives_every_profiled_replay_the_eager_models_flops(bench, gpu_ceilings):
    inner, x = _workload(bench)
    expected = bench.eager_flops(inner, x, False)
    report = bench.profile(bench.LazilyGraphed(inner), x, gpu_ceilings)
    rows = _replays(report)
    assert len(rows) == 3 and all(op.modeled and op.flops == pytest.approx(expected, rel=1e-9) for op in rows)
    assert report.summary.unmodeled_time_share < 0.05


def test_a_graph_captured_before_roofline_started_stays_unmodelled_and_says_why(bench, gpu_ceilings):
    inner, x = _workload(bench)
    model = bench.LazilyGraphed(inner)
    model.capture(x)
    report = bench.analyze(model, x, gpu_ceilings)
    rows = [op for op in report.ops if op.name == GRAPH_REPLAY_OP]
    assert len(rows) == 1 and not rows[0].modeled and rows[0].kernels
    assert any(n.endswith(CAPTURED_BEFORE_NOTE) for n in report.summary.notes)


def test_make_graphed_callables_training_step_counts_both_graphs(bench, gpu_ceilings):
    inner, x = _workload(bench)
    expected = bench.eager_flops(inner, x, True)
    report = bench.analyze(bench.LazilyMadeGraphed(inner), x, gpu_ceilings, backward=True)
    rows = _replays(report)
    assert len(rows) == 2 and all(op.modeled and op.flops > 0 for op in rows)  # forward and backward graphs
    assert report.summary.total_flops == pytest.approx(expected, rel=1e-6)


def test_reduce_overhead_counts_the_compiled_graphs_work_once_on_its_replay(bench, gpu_ceilings):
    """CUDA graph trees replay the compiled graph's kernels: no Triton kernel row counts them. analyze's counting
    pass (run eagerly) recorded the model's ops; their work goes to the replay's row, once."""
    torch._dynamo.reset()
    inner, x = _workload(bench)
    expected = bench.eager_flops(inner, x, False)
    report = bench.analyze(torch.compile(inner, mode="reduce-overhead"), x, gpu_ceilings)
    rows = [op for op in report.ops if is_graph_replay(op.name)]
    assert len(rows) == 1 and rows[0].modeled and rows[0].kernels
    assert report.summary.total_flops == pytest.approx(expected, rel=1e-6)
    assert rows[0].flops == pytest.approx(expected, rel=1e-6)


def test_reduce_overhead_under_a_profiling_context_counts_the_captured_kernels(bench, gpu_ceilings):
    """No counting pass here: the replay's row carries what the capture ran, its extern matmuls exactly and its
    Triton kernels estimated from their names and buffers (close to the eager count, not equal)."""
    torch._dynamo.reset()
    inner, x = _workload(bench)
    expected = bench.eager_flops(inner, x, False)
    report = bench.profile(torch.compile(inner, mode="reduce-overhead"), x, gpu_ceilings)
    rows = _replays(report)
    assert len(rows) == 3 and all(op.modeled for op in rows)
    assert rows[0].flops == pytest.approx(expected, rel=0.05)
    assert any(n.endswith(INDUCTOR_CAPTURE) for n in report.summary.notes)

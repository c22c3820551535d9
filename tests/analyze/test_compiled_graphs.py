"""A torch.compile'd model on a CPU, analyzed with its counting pass: the ops Inductor fused into its C++ kernels
(no events of their own) give their work to the compiled graph's row, which held their time unmodelled while they
sat in the table at 0 s (analyze/compiled_graphs.py)."""

from __future__ import annotations

import pytest
import torch

from roofline.analyze.live import analyze_model

GRAPH = "## Call CompiledFxGraph"


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.LayerNorm(256),
                               torch.nn.Linear(256, 64))


@pytest.fixture(scope="module")
def reports(cpu_ceilings):
    x = torch.randn(32, 64)
    eager = analyze_model(_model(), (x,), device=torch.device("cpu"), ceilings=cpu_ceilings, warmup=1, iters=2)
    torch._dynamo.reset()
    compiled = analyze_model(torch.compile(_model()), (x,), device=torch.device("cpu"), ceilings=cpu_ceilings,
                             warmup=1, iters=2)
    return eager, compiled


def test_the_compiled_graph_row_carries_the_fused_ops_work(reports):
    eager, compiled = reports
    (graph,) = [op for op in compiled.ops if op.name.startswith(GRAPH)]
    fused = {op.name: op for op in eager.ops if op.name in ("aten::gelu", "aten::native_layer_norm")}
    assert len(fused) == 2
    assert graph.modeled and graph.bound in ("memory", "compute") and graph.time_s > 0
    assert graph.flops == pytest.approx(sum(op.flops for op in fused.values()))
    assert graph.bytes == pytest.approx(sum(op.bytes for op in fused.values()))  # as if unfused: an upper bound
    assert graph.dtype == "float32" and graph.arithmetic_intensity > 0
    # their own rows keep their names with no work (no double count): the totals are the eager model's
    rows = [op for op in compiled.ops if op.name in fused]
    assert len(rows) == 2 and all(op.flops == op.bytes == op.time_s == 0 for op in rows)
    assert compiled.summary.total_flops == pytest.approx(eager.summary.total_flops)
    assert compiled.summary.unmodeled_time_share == 0.0


def test_the_notes_say_what_the_graph_row_holds(reports):
    _, compiled = reports
    notes = " ".join(compiled.summary.notes)
    assert "2 op(s) ran fused inside 1 torch.compile graph call(s) on the CPU (gelu x1, native_layer_norm x1)" in notes
    assert "as if unfused (an upper bound" in notes
    assert "found no event in the timed trace (time counted as 0)" not in notes  # the fused ops are accounted for
    assert f"({GRAPH}" not in notes.split("op(s) ran fused")[0]  # not listed among unmodelled own-time rows

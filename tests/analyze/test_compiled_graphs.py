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


def _gpu_trace(graph_spans):
    from roofline.capture.trace_model import CpuOp, Trace

    trace = Trace(path="compiled.json", has_gpu=True)
    trace.ops = [CpuOp(i, f"{GRAPH} g{i} ##", start, end - start, 1, 1, is_annotation=True, step=0)
                 for i, (start, end) in enumerate(graph_spans)]
    trace.ops.append(CpuOp(len(trace.ops), "aten::addmm", 110.0, 5.0, 1, 1, step=0))  # the first Linear, timed
    return trace


def test_on_a_gpu_the_recorded_ops_a_graph_ran_give_way_to_its_kernel_rows():
    """A compiled MLP on the H200 (torch 2.11, 2026-12-03): its second Linear ran as the graph's extern aten::mm
    and gelu + layer norm as one triton_* kernel, each a row counted from the trace, while the recorded addmm, gelu
    and layer norm found no event and kept their work at 0 s: 6.47 GFLOP for the model's 4.31."""
    from roofline.analyze.compiled_graphs import fuse_into_compiled_graphs, fused_note
    from roofline.report import OpRecord

    trace = _gpu_trace([(100.0, 200.0)])
    ops = [OpRecord(name="aten::addmm", flops=2e9, bytes=2e7), OpRecord(name="aten::gelu", flops=8e6, bytes=8e6),
           OpRecord(name="aten::native_layer_norm", flops=7e6, bytes=8e6),
           OpRecord(name="aten::addmm", flops=2e9, bytes=2e7),
           OpRecord(name="aten::mm", flops=2e9, bytes=2e7, time_s=6e-5)]  # the trace's own row, after the recorded
    fused = fuse_into_compiled_graphs(trace, ops, [], {0: 1}, 4, 0)
    assert fused.ops == {1, 2, 3} and fused.on_device
    assert [(op.flops, op.bytes) for op in ops] == [(2e9, 2e7), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (2e9, 2e7)]
    assert "3 recorded op(s) ran inside a torch.compile graph call" in fused_note(fused, ops)
    # two graph calls that could have run them: left as they are
    ops = [OpRecord(name="aten::addmm", flops=2e9), OpRecord(name="aten::gelu", flops=8e6)]
    assert not fuse_into_compiled_graphs(_gpu_trace([(100.0, 200.0), (300.0, 400.0)]), ops, [], {0: 2}, 2, 0).ops
    assert ops[1].flops == 8e6


def test_on_a_gpu_a_graph_call_that_replayed_one_cuda_graph_gives_it_the_recorded_ops_work():
    """CUDA graph trees (mode="reduce-overhead"): the graph call's kernels ran in a replay, so no kernel row counts
    them; the replay's row takes the recorded ops' work. With two replays in one call, which ran what is unknown:
    the recorded rows keep their work."""
    from roofline.analyze.compiled_graphs import fuse_into_compiled_graphs, fused_note
    from roofline.capture.trace_model import CpuOp
    from roofline.report import OpRecord

    def run(replays: int):
        trace = _gpu_trace([(100.0, 200.0)])
        rows = []
        for k in range(replays):
            trace.ops.append(CpuOp(len(trace.ops), f"CUDA graph replay #{k + 1}", 120.0 + 30 * k, 10.0, 1, 1, step=0))
            rows.append((3 + k, len(trace.ops) - 1))
        ops = [OpRecord(name="aten::addmm", flops=2e9, bytes=2e7), OpRecord(name="aten::gelu", flops=8e6, bytes=8e6,
                                                                             dtype="float16"),
               OpRecord(name="aten::addmm", flops=2e9, bytes=2e7, dtype="float16")]
        ops += [OpRecord(name=f"CUDA graph replay #{k + 1}", flops=1.0, bytes=1.0) for k in range(replays)]
        return fuse_into_compiled_graphs(trace, ops, [], {0: 1}, 3, 0, rows), ops

    fused, ops = run(1)
    assert fused.replays == {3: [1, 2]} and fused.ops == {1, 2}
    assert (ops[3].flops, ops[3].bytes, ops[3].dtype, ops[3].modeled) == (2.008e9, 2.8e7, "float16", True)
    assert [(op.flops, op.bytes) for op in ops[:3]] == [(2e9, 2e7), (0.0, 0.0), (0.0, 0.0)]
    assert "2 of them ran in 1 CUDA graph replay(s)" in fused_note(fused, ops)
    fused, ops = run(2)
    assert not fused.replays and not fused.ops
    assert [op.flops for op in ops] == [2e9, 8e6, 2e9, 1.0, 1.0]

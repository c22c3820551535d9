"""Advanced indexing from a trace whose index lists are recorded as nothing (torch 2.14 writes the ``indices``
argument of aten::index and index_put_ with no type and no shape): counted with the index tensors and the gathered
shape the op's own calls show (analyze/index_lists.py), as a live count counts them; they were unmodelled."""

from __future__ import annotations

import json

import torch

from roofline.capture.op_recorder import record_ops

torch.manual_seed(0)
X, XT = torch.randn(100, 4), torch.randn(4, 100)
I, J = torch.randint(0, 100, (37,)), torch.randint(0, 4, (37,))
MASK = torch.arange(100) % 3 == 0


def _integer_indexing():
    X[I], X[I, J], XT[:, I]
    X[I] = 0.0
    X.index_put_((I,), torch.ones(37, 4), accumulate=True)


def _traced(tmp_path, cpu_ceilings, step, keep=lambda e: True):
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace

    path = tmp_path / "index.json"
    step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        step()
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    trace["traceEvents"] = [e for e in trace["traceEvents"] if keep(e)]
    path.write_text(json.dumps(trace))
    return [o for o in report_from_trace(load_trace(str(path)), cpu_ceilings).ops if "index" in o.name]


def test_integer_indexing_from_a_trace_counts_as_live(tmp_path, cpu_ceilings):
    traced = _traced(tmp_path, cpu_ceilings, _integer_indexing)
    live = [op.cost for op in record_ops(_integer_indexing).ops if "index" in op.name]
    assert [o.name for o in traced] == ["aten::index"] * 3 + ["aten::index_put_"] * 2
    assert all(o.modeled for o in traced) and all(c.modeled for c in live)
    assert [(o.flops, o.bytes) for o in traced] == [(c.flops, c.bytes) for c in live]
    # x[i] of a (100, 4) float32: 37 rows gathered (read and written) and 37 int64 indices read
    assert traced[0].bytes == 2 * 37 * 4 * 4 + 37 * 8 and traced[0].input_shapes[1] == [37]


def test_a_boolean_mask_index_counts_its_nonzero_and_the_gather(tmp_path, cpu_ceilings):
    """x[mask] was unmodelled (its nonzero's count of true elements is a value, not a recorded shape): one row now
    counts the nonzero (the mask read, its int64 result written, one compare per element) and the gather of the
    34 rows it found, from the resize and the index tensors below it (analyze/resized_outputs.py, index_lists.py)."""
    masked = _traced(tmp_path, cpu_ceilings, lambda: X[MASK])
    assert [o.name for o in masked] == ["aten::index"] and masked[0].modeled
    rows = int(MASK.sum())
    assert masked[0].input_shapes == [[100, 4], [rows]]
    nonzero_bytes = 100 * 1 + rows * 1 * 8
    gather_bytes = 2 * rows * 4 * 4 + rows * 8
    assert (masked[0].flops, masked[0].bytes) == (100.0, float(nonzero_bytes + gather_bytes))
    # a two-dim mask: one int64 index per mask dim
    grid = torch.arange(400).reshape(100, 4) % 7 == 0
    masked2 = _traced(tmp_path, cpu_ceilings, lambda: X[grid])
    hits = int(grid.sum())
    assert masked2[0].input_shapes == [[100, 4], [hits], [hits]]
    assert masked2[0].bytes == 400 + hits * 2 * 8 + 2 * hits * 4 + 2 * hits * 8


def test_nonzero_and_argwhere_from_a_trace_read_their_result_from_its_resize(tmp_path, cpu_ceilings):
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace

    path = tmp_path / "nonzero.json"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        torch.nonzero(MASK), torch.argwhere(MASK.reshape(20, 5))
    prof.export_chrome_trace(str(path))
    ops = [o for o in report_from_trace(load_trace(str(path)), cpu_ceilings).ops
           if o.name in ("aten::nonzero", "aten::argwhere")]
    rows = int(MASK.sum())
    assert [(o.name, o.modeled, o.flops, o.bytes) for o in ops] == [
        ("aten::nonzero", True, 100.0, 100.0 + rows * 1 * 8), ("aten::argwhere", True, 100.0, 100.0 + rows * 2 * 8)]
    # without the resize the result is unknown: unmodelled, as before
    trace = json.loads(path.read_text())
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("name") != "aten::as_strided_"]
    path.write_text(json.dumps(trace))
    cut = [o for o in report_from_trace(load_trace(str(path)), cpu_ceilings).ops if o.name == "aten::nonzero"]
    assert cut and not any(o.modeled for o in cut)


def test_what_the_calls_do_not_show_stays_unmodelled(tmp_path, cpu_ceilings):
    """A trace without the op's restride call."""
    cut = _traced(tmp_path, cpu_ceilings, lambda: X[I], keep=lambda e: e.get("name") != "aten::as_strided")
    assert [o.modeled for o in cut if o.name == "aten::index"] == [False]
    # a mask whose nonzero shows no resize: the index stays unmodelled too (its nonzero's work is unknown)
    masked = _traced(tmp_path, cpu_ceilings, lambda: X[MASK], keep=lambda e: e.get("name") != "aten::as_strided_")
    assert [o.modeled for o in masked if o.name == "aten::index"] == [False]


def test_data_dependent_ops_of_an_h200_trace_are_counted_from_its_resizes(cpu_ceilings):
    """torch 2.11 on the H200 (benchmarks/data_dependent_gpu.py, benchmarks/results/h200/data_dependent_2026-12-03):
    CUDA's nonzero records an aten::resize_ of its (dims, count) result below it; the live masks held 1,986 and
    314,849 true elements. Each count equals the one worked out from the live tensors."""
    from pathlib import Path

    from roofline.analyze.trace_file import analyze_trace_file

    path = Path(__file__).resolve().parents[1] / "data" / "h200_ops" / "data_dependent_ops_cuda.json.gz"
    report = analyze_trace_file(path)
    rows, hits = 1986, 314849
    got = [(o.name, o.modeled, o.flops, o.bytes) for o in report.ops
           if o.name in ("aten::nonzero", "aten::argwhere", "aten::index")]
    assert got == [
        ("aten::nonzero", True, 4096.0, 4096.0 + rows * 8),
        ("aten::argwhere", True, 4096.0 * 256, 4096.0 * 256 + hits * 2 * 8),
        ("aten::index", True, 4096.0, 4096.0 + rows * 8 + 2 * rows * 256 * 4 + rows * 8),
        ("aten::index", True, 4096.0 * 256, 4096.0 * 256 + hits * 2 * 8 + 2 * hits * 4 + 2 * hits * 8),
    ]
    assert report.summary.unmodeled_time_share == 0.0

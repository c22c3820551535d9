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


def test_what_the_calls_do_not_show_stays_unmodelled(tmp_path, cpu_ceilings):
    """A boolean mask (its nonzero is an op of its own below), and a trace without the op's restride call."""
    masked = _traced(tmp_path, cpu_ceilings, lambda: X[MASK])
    assert [o.modeled for o in masked if o.name == "aten::index"] == [False]
    cut = _traced(tmp_path, cpu_ceilings, lambda: X[I], keep=lambda e: e.get("name") != "aten::as_strided")
    assert [o.modeled for o in cut if o.name == "aten::index"] == [False]

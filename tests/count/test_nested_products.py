"""Matrix products on nested tensors: counted per component live; from a trace, whose nested operands carry neither
shape nor dtype, left to the op's children (the padded product torch's CPU kernel runs), never counted on the
operand that was recorded (found by the second model sweep: SDPA on a jagged tensor, whose CPU math path unbinds it
into strided nested tensors, had Q @ K^T counted as a 544-element dot product and attn @ V unmodelled)."""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from count_recording import OpCollector
from roofline.count import count_op
from roofline.count.meta import TensorMeta

LENGTHS = (5, 9, 3)


def _component_flops(pairs) -> int:
    """FlopCounterMode's count of the same products made one component at a time (it cannot run nested ones)."""
    with FlopCounterMode(display=False) as counter:
        for a, b in pairs:
            torch.matmul(a, b)
    return counter.get_total_flops()


def _jagged_attention_inputs():
    torch.manual_seed(0)
    x = torch.nested.nested_tensor([torch.randn(n, 32) for n in LENGTHS], layout=torch.jagged)
    return x.unflatten(-1, (4, 8)).transpose(1, 2)  # (3, 4, j, 8)


def test_sdpa_on_a_jagged_tensor_counts_each_sequences_score_and_value_products():
    q = _jagged_attention_inputs()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        with OpCollector() as collector:
            F.scaled_dot_product_attention(q, q, q)
    matmuls = [op.cost() for op in collector.ops if op.name == "aten::matmul"]
    comps = [c for c in q.unbind()]  # (4, n, 8) each
    scores = [(c, c.transpose(-1, -2)) for c in comps]
    weights = [(torch.softmax(a @ b, -1), c) for (a, b), c in zip(scores, comps)]
    assert [m.flops for m in matmuls] == [_component_flops(scores), _component_flops(weights)] == [7360, 7360]
    # every component padded to the longest (9): 3 x 4 x 9 x 9 x 8 multiply-adds, what the CPU kernel pads to
    assert all(m.modeled and "15,552 FLOPs" in m.note for m in matmuls)
    # Q and K^T read (544 floats each), the 4 x (25 + 81 + 9) scores written
    assert matmuls[0].bytes == (544 + 544 + 460) * 4


def test_bmm_and_linear_on_strided_nested_tensors_count_per_component():
    torch.manual_seed(0)
    a_parts = [torch.randn(5, 8), torch.randn(9, 8)]
    b_parts = [torch.randn(8, 3), torch.randn(8, 4)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = torch.nested.nested_tensor(a_parts), torch.nested.nested_tensor(b_parts)
        with OpCollector() as collector:
            torch.bmm(a, b)
            torch.nn.functional.linear(a, torch.randn(6, 8))
    costs = {op.name: op.cost() for op in collector.ops if op.name in ("aten::bmm", "aten::linear")}
    assert costs["aten::bmm"].flops == _component_flops(zip(a_parts, b_parts)) == 2 * (5 * 8 * 3 + 9 * 8 * 4)
    assert costs["aten::linear"].flops == 2 * 14 * 8 * 6 and "padded" not in costs["aten::linear"].note


def test_a_product_that_cannot_read_components_is_unmodelled_not_miscounted():
    ragged = TensorMeta((544,), "float32", components=((4, 5, 8), (4, 9, 8), (4, 3, 8)))
    cost = count_op("aten::dot", [ragged, ragged])
    assert not cost.modeled and "components differ" in cost.note
    assert count_op("aten::mul", [ragged, 2.0]).flops == 544  # element-wise: its element count is exact


def test_from_a_trace_nested_ops_are_counted_by_their_children(tmp_path, cpu_ceilings):
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace

    q = _jagged_attention_inputs()
    path = tmp_path / "nested.json"
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        F.scaled_dot_product_attention(q, q, q)  # warm: a cold first call's own time is set-up, not dispatch
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
            F.scaled_dot_product_attention(q, q, q)
        prof.export_chrome_trace(str(path))
    ops = report_from_trace(load_trace(str(path)), cpu_ceilings).ops
    # the nested scale (q * 8**-0.25, twice) is counted on the buffer its child multiplies, not on its scalar; the
    # nested mul's own host time is a row of its dispatch (no FLOPs or bytes)
    muls = [o for o in ops if o.name == "aten::mul"]
    assert [o.flops for o in muls if o.flops] == [544, 544]
    assert {(o.flops, o.bytes, o.bound) for o in muls if not o.flops} == {(0.0, 0.0, "launch")}
    # the products: the padded bmm the CPU kernel ran, (12, 9, 8) @ (12, 8, 9) and (12, 9, 9) @ (12, 9, 8)
    assert [o.flops for o in ops if o.name == "aten::bmm"] == [15552, 15552]
    # unmodelled, its children taken: only its own host time is a row (no FLOPs or bytes)
    assert all((o.flops, o.bytes, o.bound) == (0.0, 0.0, "launch") for o in ops if o.name == "aten::matmul")
    values = [o for o in ops if o.name == "aten::values"]  # a view of a nested tensor: free, not unmodelled
    assert values and all(o.modeled and o.bound == "launch" for o in values)


def test_analyze_counts_the_nested_products_per_component_and_says_so(cpu_ceilings):
    from roofline.analyze.live import analyze_model

    class Attention(torch.nn.Module):
        def forward(self, q):
            return F.scaled_dot_product_attention(q, q, q)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = analyze_model(Attention().eval(), (_jagged_attention_inputs(),), device="cpu",
                               ceilings=cpu_ceilings, warmup=1, iters=1)
    matmuls = [op for op in report.ops if op.name == "aten::matmul"]
    assert [(op.modeled, op.flops) for op in matmuls] == [(True, 7360), (True, 7360)]  # attn @ V was unmodelled
    assert any(n.startswith("aten::matmul on nested tensors (2 call(s)) counted per component") and "15,552" in n
               for n in report.summary.notes)

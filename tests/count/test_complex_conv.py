"""Complex convolutions, counted as what torch runs for them. conv1d/2d/3d and conv_transpose1d/2d/3d on a complex
input are composites over three real convolutions (Gauss's trick, ATen's complex_convolution) and a few element-wise
passes; the live pass and a trace both see those real ops, and FlopCounterMode counts the same three convolutions.
What differed: from a trace, the last pass's multiply by the complex scalar 1j was counted as a real multiply (the
trace records the scalar as text, "0.+1.j"), and the composite's own formula, which stands for the op where a trace
holds it without children, counted one real convolution."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from roofline.count import count_op, to_meta
from roofline.count.trace_args import parse_scalar


def _complex_convs(x1, w1, x2, w2t, b2, x3, w3):
    return (F.conv1d(x1, w1, padding=1), F.conv_transpose2d(x2, w2t, b2, stride=2), F.conv3d(x3, w3))


def _inputs():
    torch.manual_seed(0)
    c = torch.complex64
    return (torch.randn(2, 3, 16, dtype=c), torch.randn(4, 3, 3, dtype=c),
            torch.randn(1, 4, 6, 6, dtype=c), torch.randn(4, 2, 3, 3, dtype=c), torch.randn(2, dtype=c),
            torch.randn(1, 2, 4, 4, 4, dtype=c), torch.randn(3, 2, 2, 2, 2, dtype=c))


class _Convs(torch.nn.Module):
    def forward(self, *args):
        return _complex_convs(*args)


def test_a_complex_scalar_in_a_trace_is_read_as_one():
    assert parse_scalar("0.+1.j") == 1j and parse_scalar("2.-0.5j") == complex(2, -0.5)
    assert parse_scalar("j") == "j" and parse_scalar("1.5") == 1.5
    real = to_meta(torch.empty(2, 8, device="meta"))
    cost = count_op("aten::mul", [real, 1j])  # a trace's call: no outputs, the result's dtype promoted
    assert (cost.flops, cost.bytes) == (2 * 16, 16 * 4 + 16 * 8)
    assert count_op("aten::mul", [real, 2.0]).flops == 16


def test_trace_and_live_count_complex_convolutions_alike(tmp_path, cpu_ceilings):
    from roofline.analyze.live import analyze_model
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace

    args = _inputs()
    with FlopCounterMode(display=False) as counter:
        _complex_convs(*args)
    live = analyze_model(_Convs().eval(), args, device="cpu", ceilings=cpu_ceilings, warmup=1, iters=1).ops
    path = tmp_path / "complex_conv.json"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        _complex_convs(*args)
    prof.export_chrome_trace(str(path))
    traced = report_from_trace(load_trace(str(path)), cpu_ceilings).ops

    def convs(ops):
        return sorted(o.flops for o in ops if o.name == "aten::convolution")

    assert len(convs(live)) == 9 and convs(live) == convs(traced)
    assert sum(convs(live)) == counter.get_total_flops()  # FlopCounterMode counts the same three real convs each
    assert all(o.dtype == "float32" for o in live + traced if o.name == "aten::convolution")

    def totals(ops):
        return sum(o.flops for o in ops), sum(o.bytes for o in ops), all(o.modeled for o in ops)

    assert totals(traced) == totals(live)
    muls = [o for o in traced if o.name == "aten::mul"]  # i * (c - a - b): a complex result, 2 real FLOPs each
    assert len(muls) == 3 and all(o.dtype == "float32" and o.flops == 2 * o.bytes / (4 + 8) for o in muls)


def test_a_complex_composite_conv_counts_its_three_real_convolutions():
    """Where a trace holds conv2d (or a transposed one) without its children, its own formula stands for them."""
    for op, x, w, rest in (
            (torch.ops.aten.conv2d.default, (2, 3, 9, 9), (5, 3, 3, 3), (None, [2, 2], [1, 1], [1, 1], 1)),
            (torch.ops.aten.conv_transpose1d.default, (2, 4, 7), (4, 6, 3), (None, [2], [0], [0], 2, [1]))):
        complex_args = (torch.randn(*x, dtype=torch.complex64), torch.randn(*w, dtype=torch.complex64)) + rest
        with FlopCounterMode(display=False) as counter:
            out = op(*complex_args)
        cost = count_op(str(op), to_meta(complex_args), None, [to_meta(out)])
        real = count_op(str(op), to_meta((complex_args[0].real, complex_args[1].real) + rest))
        assert cost.flops == counter.get_total_flops() == 3 * real.flops > 0
        assert "Gauss" in cost.note
        without_outputs = count_op(str(op), to_meta(complex_args))
        assert (without_outputs.flops, without_outputs.bytes) == (cost.flops, cost.bytes)

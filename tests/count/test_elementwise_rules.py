"""Every class of elementwise op at its documented FLOPs per output element (count/elementwise.py's docstring),
in-place and out-of-place, with the documented bytes and complex factors. torch-free: these are conventions (torch's
FlopCounterMode counts no elementwise op), so the figures below restate the docstring, class by class."""

from __future__ import annotations

import pytest

from roofline.count import count_op
from roofline.count.meta import TensorMeta

X = TensorMeta((3, 5), "float32")  # 15 elements, 60 bytes
Y = TensorMeta((3, 5), "float32")

DOCUMENTED = {
    1: ["add", "sub", "mul", "div", "neg", "abs", "relu", "clamp", "maximum", "floor", "sqrt", "rsqrt",
        "reciprocal", "square", "threshold_backward", "masked_fill", "bitwise_and"],
    2: ["addcmul", "addcdiv", "hardtanh_backward", "leaky_relu_backward", "native_dropout_backward"],
    3: ["lerp", "hardswish", "hardsigmoid", "sigmoid_backward", "tanh_backward"],
    4: ["exp", "log", "sin", "cos", "tanh", "sigmoid", "erf", "softplus", "atan2", "log1p", "special_entr", "igamma",
        "special_bessel_j0"],
    5: ["silu", "elu", "selu", "celu"],
    8: ["gelu", "silu_backward"],
    9: ["mish"],
    12: ["gelu_backward"],
    14: ["mish_backward"],
    6: ["softplus_backward", "log_sigmoid_forward"],
}
BOOL_OUTPUT = ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "isnan", "isinf", "isclose"]


@pytest.mark.parametrize("per, base", [(per, base) for per, names in DOCUMENTED.items() for base in names])
def test_flops_per_output_element_by_class(per, base):
    out = count_op(f"aten::{base}", (X, Y))
    assert out.modeled and out.flops == per * 15
    assert out.bytes == 3 * 60  # two inputs read, a float32 output written
    live = count_op(f"aten::{base}", (X, Y), None, [TensorMeta((3, 5), "float32")])
    assert (live.flops, live.bytes) == (out.flops, out.bytes)
    if not base.endswith("backward") and base != "log_sigmoid_forward":
        inplace = count_op(f"aten::{base}_", (X, Y))
        assert inplace.flops == per * 15 and inplace.bytes == 3 * 60  # reads self and other, writes self


@pytest.mark.parametrize("base", BOOL_OUTPUT)
def test_comparisons_write_one_byte_per_element(base):
    out = count_op(f"aten::{base}", (X, Y))
    assert (out.flops, out.bytes) == (15, 2 * 60 + 15)


def test_output_is_the_broadcast_of_the_inputs_at_the_promoted_dtype():
    row = TensorMeta((5,), "float16")
    col = TensorMeta((4, 1), "float32")
    out = count_op("aten::add", (row, col))
    assert out.flops == 20 and out.bytes == 5 * 2 + 4 * 4 + 20 * 4
    half = count_op("aten::mul", (TensorMeta((4, 5), "float16"), 2.0))
    assert (half.flops, half.bytes) == (20, 20 * 2 * 2)  # a Python scalar moves nothing


def test_complex_outputs_count_real_lanes():
    c = TensorMeta((2, 5), "complex64")
    r = TensorMeta((2, 5), "float32")
    assert count_op("aten::mul", (c, c)).flops == 6 * 10
    assert count_op("aten::mul", (c, r)).flops == 2 * 10
    assert count_op("aten::div", (c, c)).flops == 11 * 10
    assert count_op("aten::div", (r, c)).flops == 11 * 10
    assert count_op("aten::div", (c, r)).flops == 2 * 10
    assert count_op("aten::true_divide", (c, c)).flops == 11 * 10
    assert count_op("aten::exp", (c,)).flops == 2 * 4 * 10
    assert count_op("aten::add", (c, c)).flops == 2 * 10
    assert count_op("aten::mul_", (c, c)).flops == 6 * 10
    assert count_op("aten::add", (c, c)).bytes == 3 * 80


def test_complex_made_from_real_parts():
    # torch.polar (RoPE's frequencies in Meta's Llama code) and torch.complex had time and no formula; each writes
    # a complex element per pair of real ones, from a trace (no output recorded) as live
    r, c = TensorMeta((2, 5), "float32"), TensorMeta((2, 5), "complex64")
    for outputs in (None, [c]):
        polar, pack = count_op("aten::polar", (r, r), None, outputs), count_op("aten::complex", (r, r), None, outputs)
        assert (polar.flops, polar.bytes) == (10 * 10, 2 * 40 + 80)  # a cos, a sin (4 each), two multiplies
        assert (pack.flops, pack.bytes) == (0, 2 * 40 + 80)
    assert count_op("aten::polar", (TensorMeta((5,), "float64"), TensorMeta((2, 5), "float64"))).bytes == \
        40 + 80 + 10 * 16


@pytest.mark.parametrize("name", ["aten::abs", "aten::angle"])
def test_a_complex_tensor_s_abs_and_angle_are_real_without_recorded_outputs(name):
    """A trace records no output dtype: abs and angle of a complex tensor were taken as complex (2x the FLOPs, an
    8-byte write per element) where a live count, which sees the float32 result, counts 1 FLOP and 4 bytes."""
    c, r = TensorMeta((2, 5), "complex64"), TensorMeta((2, 5), "float32")
    from_trace, live = count_op(name, (c,)), count_op(name, (c,), None, [r])
    assert (from_trace.flops, from_trace.bytes) == (live.flops, live.bytes) == (10, 10 * 8 + 10 * 4)


@pytest.mark.parametrize("exponent, per", [(2, 1), (3, 1), (-3, 1), (2.0, 1), (0.5, 4), (4, 4), (-4, 4),
                                           (True, 4), (X, 4)])
def test_pow_is_one_flop_for_small_integer_exponents(exponent, per):
    assert count_op("aten::pow", (X, exponent)).flops == per * 15
    assert count_op("aten::pow_", (X, exponent)).flops == per * 15


def test_dropout_variants():
    assert count_op("aten::native_dropout", (X, 0.1, True)).flops == 30
    assert count_op("aten::native_dropout", (X, 0.1, True)).bytes == 60 + 60 + 15  # output and its bool mask
    assert count_op("aten::native_dropout", (X, 0.1, False)).flops == 0
    assert count_op("aten::native_dropout", (X, 0.1, False)).bytes == 120
    assert count_op("aten::native_dropout", (X, 0.1), {"train": False}).bytes == 120
    assert count_op("aten::native_dropout", (X, 0.1, True), None, [X]).bytes == 120
    for name in ("aten::dropout", "aten::feature_dropout", "aten::alpha_dropout"):
        assert count_op(name, (X, 0.5, True)).flops == 30 and count_op(name, (X, 0.5, True)).bytes == 120
        assert count_op(name, (X, 0.0, True)).bytes == 0 and count_op(name, (X, 0.5, False)).flops == 0
    assert count_op("aten::dropout", (X,)).flops == 30  # p=0.5 and train=True by default
    fused = count_op("aten::_fused_dropout", (X, 0.9))
    assert (fused.flops, fused.bytes) == (30, 60 + 60 + 15)
    assert count_op("aten::_fused_dropout", (X, 0.9), None, [X]).bytes == 120


def test_max_and_min_of_two_tensors_are_elementwise_of_one_a_reduction():
    assert count_op("aten::max", (X, Y)).flops == 15 and count_op("aten::min", (X, Y)).bytes == 180
    whole = count_op("aten::max", (X,))
    assert whole.flops == 15  # one compare per input element (count/reduction.py)
    assert whole.bytes == 60 + 4


def test_glu_and_its_backward_counted_from_a_real_run_and_without_outputs():
    """torchaudio's Conformer convolution module (pointwise conv, GLU over channels): glu_backward had no formula
    (its grad_output, half of self, does not broadcast with self), so every Conformer training step was partly
    unmodelled; glu itself was 2 FLOPs per element, below its sigmoid + multiply."""
    import torch

    from count_recording import OpCollector

    x = torch.randn(2, 16, 50, requires_grad=True)
    with OpCollector() as rec:
        torch.nn.functional.glu(x, dim=1).sum().backward()
    by_name = {op.name: op for op in rec.ops}
    fwd, bwd = by_name["aten::glu"].cost(), by_name["aten::glu_backward"].cost()
    assert (fwd.modeled, fwd.flops, fwd.bytes) == (True, 5 * 800, 1600 * 4 + 800 * 4)
    assert (bwd.modeled, bwd.flops, bwd.bytes) == (True, 4.5 * 1600, 800 * 4 + 1600 * 4 + 1600 * 4)
    # a trace records no outputs: the output's shape comes from the input and dim
    g, s = TensorMeta((2, 8, 50), "float32"), TensorMeta((2, 16, 50), "float32")
    assert count_op("aten::glu", (s, 1)).flops == fwd.flops
    assert count_op("aten::glu", (TensorMeta((4, 6), "float32"),)).flops == 5 * 12  # dim defaults to -1
    assert (count_op("aten::glu_backward", (g, s, 1)).flops, count_op("aten::glu_backward", (g, s, 1)).bytes) == \
        (bwd.flops, bwd.bytes)


def test_prelu_backward():
    """Sweep 7: _prelu_kernel_backward had no formula (4% of an upscaler's step unmodelled); both gradients are
    written at the input's shape."""
    x, w = TensorMeta((2, 32, 8, 8), "float32"), TensorMeta((1, 32, 1, 1), "float32")  # 16,384 and 128 bytes
    c = count_op("aten::_prelu_kernel_backward", (x, x, w))
    assert c.modeled and (c.flops, c.bytes) == (4 * 4096, 16384 * 2 + 128 + 2 * 16384)

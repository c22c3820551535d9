"""Elementwise ops: unary, binary and ternary, with broadcasting, in-place variants and activation backwards.

FLOPs per OUTPUT element (our convention; torch's FlopCounterMode counts none of these):
- 1: arithmetic and selection: add, sub, mul, div, neg, abs, relu, clamp, min/max of two tensors,
  comparisons, logical/bitwise ops, where, masked_fill, floor/ceil/round, sqrt, rsqrt, reciprocal, square,
  pow with a small integer exponent, threshold_backward.
- 2: two dependent operations: addcmul, addcdiv, hardtanh_backward, leaky_relu_backward, dropout
  (compare + scale), dropout backward.
- 3: lerp, hardswish/hardsigmoid, sigmoid_backward, tanh_backward.
- 4: one transcendental (exp, log, sin, cos, tanh, sigmoid, erf, softplus, general pow, ...): several
  hardware instructions each; counted as 4 so that a transcendental-heavy op is not mistaken for a free one.
- 5: silu (sigmoid + mul), elu/selu/celu, glu (a * sigmoid(b) over the two halves of its input: per output
  element; its output is half its input along dim).
- 4.5: glu_backward, per element of its output (the input's gradient, both halves): 9 FLOPs per pair,
  sigmoid(b), the a-half's g * s and the b-half's g * a * s * (1 - s).  8: gelu (erf or tanh form), silu_backward.
  9: mish.  12: gelu_backward.  14: mish_backward.
Complex outputs: each complex element is two real lanes: 2x the count above, except mul (6 when both
operands are complex: 4 multiplies and 2 adds; 2 when one is real) and div (11 by a complex divisor, 2 by
a real one). Complex made from real parts: complex(real, imag) 0 (a packing copy), polar(abs, angle) 10 per
complex element (a cos and a sin, 4 each, and two multiplies).
Bytes: each input tensor read once at its own size (a broadcast operand is read at its small size, a
scalar not at all), the output written once. In-place ops (add_, mul_, ...) read their inputs, self
included, and write self once. Without recorded outputs the output is the broadcast of the inputs, its dtype
torch's promotion (bool for comparisons; for abs and angle of a complex tensor its real part's, as a live count
records: a trace's complex abs was counted at 2x its FLOPs and written at twice its bytes; complex where a scalar
operand is, as a trace records one, "0.+1.j": a complex convolution's i * (c - a - b) was a real multiply there).
"""

from __future__ import annotations

from roofline.count.meta import TensorMeta
from roofline.count.registry import Call, OpCost, nbytes, register
from roofline.count.shapes import broadcast_shapes, complex_of, promote_dtypes
from roofline.report import REAL_PART_OF

ONE_FLOP = (
    "add", "sub", "rsub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "neg", "negative",
    "abs", "absolute", "relu", "relu6", "clamp", "clamp_min", "clamp_max", "clip", "maximum", "minimum",
    "fmax", "fmin", "sign", "sgn", "floor", "ceil", "round", "trunc", "fix", "frac", "reciprocal",
    "sqrt", "rsqrt", "square", "threshold", "threshold_backward", "hardtanh", "leaky_relu", "masked_fill",
    "nan_to_num", "heaviside", "copysign", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "bitwise_left_shift", "bitwise_right_shift", "__and__", "__or__", "__xor__", "__lshift__", "__rshift__",
    "__iand__", "__ior__", "__ixor__", "logical_not", "conj_physical", "_conj_physical", "angle", "deg2rad",
    "rad2deg", "hardshrink", "softshrink", "hardshrink_backward", "softshrink_backward", "prelu",
    "_prelu_kernel", "_masked_scale", "mul_scalar", "div_scalar", "sub_scalar", "add_scalar",
    "glu_backward_jvp",
)
REAL_FROM_COMPLEX = frozenset({"abs", "absolute", "angle"})  # a complex tensor's: a real one
ONE_FLOP_BOOL = (
    "eq", "ne", "lt", "le", "gt", "ge", "less", "less_equal", "greater", "greater_equal", "not_equal",
    "logical_and", "logical_or", "logical_xor", "isnan", "isinf", "isfinite", "isneginf", "isposinf",
    "signbit", "isclose", "isin",
)
TWO_FLOPS = ("addcmul", "addcdiv", "hardtanh_backward", "leaky_relu_backward", "hypot",
             "native_dropout_backward", "_masked_softmax_backward_elementwise", "hardsigmoid_backward")
THREE_FLOPS = ("lerp", "hardswish", "hardsigmoid", "sigmoid_backward", "tanh_backward", "logit_backward",
               "hardswish_backward")
FOUR_FLOPS = (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan",
    "atan2", "arctan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "arcsin", "arccos", "arctan",
    "arcsinh", "arccosh", "arctanh", "sigmoid", "erf", "erfc", "erfinv", "lgamma", "digamma", "polygamma",
    "logit", "softplus", "xlogy", "special_xlog1py", "sinc", "logaddexp", "logaddexp2", "i0", "special_i0e",
    "special_i1", "special_i1e", "special_erfcx", "special_ndtri", "special_log_ndtr", "mvlgamma",
    "float_power", "log_sigmoid_backward", "special_entr", "special_ndtr", "igamma", "igammac", "special_zeta",
    "special_bessel_j0", "special_bessel_j1", "special_bessel_y0", "special_bessel_y1", "special_modified_bessel_i0",
    "special_modified_bessel_i1", "special_modified_bessel_k0", "special_modified_bessel_k1",
    "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1", "special_spherical_bessel_j0",
    "special_airy_ai",
)
FIVE_FLOPS = ("silu", "elu", "selu", "celu", "elu_backward")
MORE_FLOPS = {"gelu": 8, "silu_backward": 8, "mish": 9, "gelu_backward": 12, "mish_backward": 14,
              "softplus_backward": 6, "log_sigmoid_forward": 6, "rrelu_with_noise": 2}


def elementwise_cost(call: Call, flops_per_element: float, bool_output: bool = False) -> OpCost:
    inputs = call.input_metas()
    if call.inplace:
        target = call.tensor(0, "self")
        outputs = [target]
    elif call.outputs is not None:
        outputs = call.outputs
    else:
        shape = broadcast_shapes(m.shape for m in inputs)
        dtype = "bool" if bool_output else promote_dtypes(inputs)
        if _base_name(call) in REAL_FROM_COMPLEX:
            dtype = REAL_PART_OF.get(dtype, dtype)
        elif not bool_output and any(type(a) is complex for a in (*call.args, *call.kwargs.values())):
            dtype = complex_of(dtype)
        outputs = [TensorMeta(shape, dtype)]
    elements = max((m.numel for m in outputs), default=0)
    if any(m.dtype.startswith("complex") for m in outputs):
        flops_per_element *= _complex_factor(call, inputs)
    return OpCost(float(flops_per_element * elements), float(nbytes(inputs) + nbytes(outputs)), True)


@register("aten::complex", "aten::polar")
def complex_from_parts(call: Call) -> OpCost:
    """Two real tensors (broadcast) -> one complex tensor; see the module docstring for the FLOPs."""
    inputs = call.input_metas()
    if call.outputs is not None:
        outputs = call.outputs
    else:
        outputs = [TensorMeta(broadcast_shapes(m.shape for m in inputs), complex_of(promote_dtypes(inputs)))]
    elements = max((m.numel for m in outputs), default=0)
    per = 10 if call.name == "aten::polar" else 0
    return OpCost(float(per * elements), float(nbytes(inputs) + nbytes(outputs)), True)


def _base_name(call: Call) -> str:
    return call.name.rsplit("::", 1)[-1].rstrip("_")


def _complex_factor(call: Call, inputs: list[TensorMeta]) -> float:
    """Real FLOPs per counted FLOP when the result is complex (see the module docstring)."""
    base = _base_name(call)
    complex_inputs = [m.dtype.startswith("complex") for m in inputs]
    if base == "mul":
        return 6.0 if len(complex_inputs) >= 2 and all(complex_inputs) else 2.0
    if base in ("div", "true_divide"):
        divisor = call.arg(1, "other")
        return 11.0 if isinstance(divisor, TensorMeta) and divisor.dtype.startswith("complex") else 2.0
    return 2.0


def _fixed(flops_per_element: float, bool_output: bool = False):
    def formula(call: Call) -> OpCost:
        return elementwise_cost(call, flops_per_element, bool_output)

    return formula


def _names(bases, with_inplace: bool = True) -> list[str]:
    names = []
    for base in bases:
        names.append(f"aten::{base}")
        if with_inplace and not base.endswith("_") and not base.endswith("backward"):
            names.append(f"aten::{base}_")
    return names


register(*_names(ONE_FLOP))(_fixed(1))
register(*_names(ONE_FLOP_BOOL))(_fixed(1, bool_output=True))
register(*_names(TWO_FLOPS))(_fixed(2))
register(*_names(THREE_FLOPS))(_fixed(3))
register(*_names(FOUR_FLOPS))(_fixed(4))
register(*_names(FIVE_FLOPS))(_fixed(5))
for _base, _flops in MORE_FLOPS.items():
    register(*_names([_base]))(_fixed(_flops))


FLOPS_PER_ELEMENT: dict[str, float] = {}
for _count, _bases in ((1, ONE_FLOP), (1, ONE_FLOP_BOOL), (2, TWO_FLOPS), (3, THREE_FLOPS), (4, FOUR_FLOPS),
                       (5, FIVE_FLOPS)):
    for _base in _bases:
        FLOPS_PER_ELEMENT[_base] = _count
FLOPS_PER_ELEMENT.update(MORE_FLOPS)

# torch's primitives (torch._prims) that run eagerly where a decomposition reaches them: forward-mode AD
# (torch.func.jvp, jacfwd, hessian) calls prims::add on the tangents. Counted as their aten namesakes (never
# in place). The list is what torch.ops.prims defines of the bases above (torch 2.14).
PRIMS_ELEMENTWISE = (
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and", "bitwise_not",
    "bitwise_or", "bitwise_xor", "ceil", "conj_physical", "cos", "cosh", "digamma", "div", "eq", "erf", "erfc",
    "exp", "exp2", "expm1", "floor", "fmax", "fmin", "fmod", "ge", "gt", "hypot", "isfinite", "le", "lgamma",
    "log", "log10", "log1p", "log2", "lt", "maximum", "minimum", "mul", "ne", "neg", "reciprocal", "remainder",
    "round", "rsqrt", "sign", "signbit", "sin", "sinh", "sqrt", "sub", "tan", "tanh", "trunc",
)
for _base in PRIMS_ELEMENTWISE:
    register(f"prims::{_base}")(_fixed(FLOPS_PER_ELEMENT[_base], bool_output=_base in ONE_FLOP_BOOL))


@register("aten::pow", "aten::pow_", "prims::pow")
def pow_(call: Call) -> OpCost:
    """1 FLOP an element for a small integer exponent (x**2 is one multiply), else 4 (exp(y*log(x)))."""
    exponent = call.arg(1, "exponent")
    cheap = isinstance(exponent, (int, float)) and not isinstance(exponent, bool) and \
        float(exponent).is_integer() and -3 <= exponent <= 3
    return elementwise_cost(call, 1 if cheap else 4)


def _halved(meta: TensorMeta, dim: int) -> TensorMeta:
    shape = list(meta.shape)
    shape[dim] //= 2
    return meta.with_shape(tuple(shape))


@register("aten::glu")
def glu(call: Call) -> OpCost:
    """Reads its input, writes half of it (along dim, default -1); see the module docstring for the FLOPs."""
    source = call.tensor(0, "self")
    outputs = call.outputs if call.outputs is not None else [_halved(source, call.arg(1, "dim", -1))]
    return OpCost(5.0 * max(m.numel for m in outputs), float(source.nbytes + nbytes(outputs)), True)


@register("aten::glu_backward")
def glu_backward(call: Call) -> OpCost:
    """glu_backward(grad_output, self, dim): reads both, writes self's gradient (self's shape). Its inputs do not
    broadcast (grad_output is half of self), so the generic elementwise rule cannot give the output."""
    grad, source = call.tensor(0, "grad_output"), call.tensor(1, "self")
    outputs = call.outputs if call.outputs is not None else [source.with_shape(source.shape)]
    return OpCost(4.5 * max(m.numel for m in outputs), float(grad.nbytes + source.nbytes + nbytes(outputs)), True)


@register("aten::_prelu_kernel_backward")
def prelu_backward(call: Call) -> OpCost:
    """(grad_output, self, weight) -> (grad_input, grad_weight), both at self's shape (autograd sums the second to
    the weight's): 4 FLOPs an element (the sign test, grad * weight, grad * self, the select)."""
    grad, source, weight = call.tensor(0, "grad_output"), call.tensor(1, "self"), call.tensor(2, "weight")
    outputs = call.outputs if call.outputs is not None else [source.with_shape(source.shape)] * 2
    return OpCost(4.0 * source.numel, float(grad.nbytes + source.nbytes + weight.nbytes + nbytes(outputs)), True)


@register("aten::native_dropout")
def native_dropout(call: Call) -> OpCost:
    """Reads the input; writes the output and its bool mask; 2 FLOPs an element (compare, scale).
    In eval mode (train=False) the kernel is a copy: 0 FLOPs, output written, no mask."""
    source = call.tensor(0, "input")
    train = call.arg(2, "train", True)
    if call.outputs is not None:
        outputs = call.outputs
    elif train:
        outputs = [source.with_shape(source.shape), TensorMeta(source.shape, "bool")]
    else:
        outputs = [source.with_shape(source.shape)]
    flops = 2.0 * source.numel if train else 0.0
    return OpCost(flops, float(source.nbytes + nbytes(outputs)), True)


@register("aten::dropout", "aten::dropout_", "aten::feature_dropout", "aten::alpha_dropout",
          "aten::feature_alpha_dropout", composite=True)
def dropout(call: Call) -> OpCost:
    """Composite: nothing runs (0 bytes) when train=False or p=0; else as native_dropout without the mask."""
    source = call.tensor(0, "input")
    p = call.arg(1, "p", 0.5)
    train = call.arg(2, "train", True)
    if not train or p == 0:
        return OpCost(0.0, 0.0, True, note="dropout disabled: returns its input")
    return OpCost(2.0 * source.numel, 2.0 * source.nbytes, True)


@register("aten::max", "aten::min")
def max_min(call: Call) -> OpCost:
    """max(a, b) of two tensors is elementwise; max(x) / max(x, dim) is a reduction."""
    if isinstance(call.arg(1, "other"), TensorMeta):
        return elementwise_cost(call, 1)
    from roofline.count.reduction import reduction_cost

    return reduction_cost(call)


@register("aten::_fused_dropout")
def fused_dropout(call: Call) -> OpCost:
    source = call.tensor(0, "self")
    outputs = call.outputs if call.outputs is not None else [source, TensorMeta(source.shape, "bool")]
    return OpCost(2.0 * source.numel, float(source.nbytes + nbytes(outputs)), True)


"""Factory ops: tensors made from nothing (or from another tensor's shape only).

- Allocations (empty, empty_like, empty_strided, new_empty): 0 FLOPs, 0 bytes: no kernel touches memory.
- Fills (zeros, ones, full, *_like, fill_, zero_, new_zeros, new_full, arange, linspace, eye, scalar_tensor):
  0 FLOPs, the output written once. A ``*_like`` op does not read its template tensor.
- Random (rand, randn, randint, randperm, normal_, uniform_, bernoulli_, random_, exponential_, ...):
  0 FLOPs (RNG is integer hashing; the scale/shift it feeds is not counted), the output written once;
  a tensor of probabilities (bernoulli(p_tensor), multinomial's, a sampling generate's) is read.
In-place fills and RNG write ``self`` without reading it.
"""

from __future__ import annotations

from math import ceil
from typing import Any

from roofline.count.meta import TensorMeta, dtype_name
from roofline.count.registry import Call, OpCost, nbytes, register, zero_cost


def _outputs_or(call: Call, fallback: TensorMeta | None) -> list[TensorMeta]:
    if call.outputs is not None:
        return call.outputs
    if fallback is None:
        raise ValueError("output shape unknown")
    return [fallback]


def _sizes(value: Any) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
        return tuple(value)
    raise ValueError("size argument not recorded")


def _dtype_arg(call: Call, index: int, name: str = "dtype", default: str = "float32") -> str:
    return dtype_name(call.arg(index, name)) or default


@register("aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
          "aten::new_empty_strided", "aten::empty_permuted", "aten::_empty_affine_quantized",
          "aten::empty_quantized", "aten::_empty_per_channel_affine_quantized")
def allocation(call: Call) -> OpCost:
    return zero_cost("allocation only")


@register("aten::_efficientzerotensor")
def efficient_zero_tensor(call: Call) -> OpCost:
    """A ZeroTensor (forward-mode AD's zero tangent, torch.func.jvp/jacfwd): no storage, nothing written."""
    return zero_cost("a ZeroTensor holds no storage")


@register("aten::zeros", "aten::ones", "aten::rand", "aten::randn")
def sized_fill(call: Call) -> OpCost:
    return _new_tensor(call, size_index=0, dtype_index=1)


@register("aten::scalar_tensor")
def scalar_tensor(call: Call) -> OpCost:
    """One element: the first argument is the value, not a size (an int value was read as a size, a float one left
    it unmodelled: HF BERT's sdpa mask on a trace without output shapes)."""
    fallback = None if call.outputs is not None else TensorMeta((), _dtype_arg(call, 1))
    return OpCost(0.0, float(nbytes(_outputs_or(call, fallback))), True)


@register("aten::full")
def full(call: Call) -> OpCost:
    return _new_tensor(call, size_index=0, dtype_index=2)


@register("aten::randint")
def randint(call: Call) -> OpCost:
    size_index = 1 if isinstance(call.arg(1), (list, tuple)) else 2
    return _new_tensor(call, size_index, size_index + 1, default_dtype="int64")


def _new_tensor(call: Call, size_index: int, dtype_index: int, default_dtype: str = "float32") -> OpCost:
    """A freshly made tensor: its bytes written; from (size, dtype) arguments when the output is unknown."""
    fallback = None
    if call.outputs is None:
        fallback = TensorMeta(_sizes(call.arg(size_index, "size")), _dtype_arg(call, dtype_index, default=default_dtype))
    return OpCost(0.0, float(nbytes(_outputs_or(call, fallback))), True)


@register("aten::randperm")
def randperm(call: Call) -> OpCost:
    fallback = None if call.outputs is not None else TensorMeta((int(call.arg(0, "n")),), "int64")
    return OpCost(0.0, float(nbytes(_outputs_or(call, fallback))), True)


@register("aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::rand_like", "aten::randn_like",
          "aten::randint_like")
def like_fill(call: Call) -> OpCost:
    """Writes a tensor shaped like ``self``; ``self`` is not read."""
    template = call.tensor(0, "self")
    dtype_index = {"aten::full_like": 2, "aten::randint_like": None}.get(call.name, 1)
    dtype = dtype_name(call.arg(dtype_index, "dtype")) if dtype_index is not None else None
    fallback = TensorMeta(template.shape, dtype or template.dtype)
    return OpCost(0.0, float(nbytes(_outputs_or(call, fallback))), True)


@register("aten::new_zeros", "aten::new_ones", "aten::new_full")
def new_fill(call: Call) -> OpCost:
    template = call.tensor(0, "self")
    fallback = None
    if call.outputs is None:
        dtype_index = 3 if call.name == "aten::new_full" else 2
        fallback = TensorMeta(_sizes(call.arg(1, "size")), dtype_name(call.arg(dtype_index, "dtype")) or template.dtype)
    return OpCost(0.0, float(nbytes(_outputs_or(call, fallback))), True)


@register("aten::fill_", "aten::zero_", "aten::normal_", "aten::uniform_", "aten::random_",
          "aten::exponential_", "aten::geometric_", "aten::log_normal_", "aten::cauchy_")
def inplace_fill(call: Call) -> OpCost:
    """Writes ``self`` once; a tensor fill value (fill_.Tensor) is read."""
    target = call.tensor(0, "self")
    value = call.maybe_tensor(1, "value")
    return OpCost(0.0, float(target.nbytes + (value.nbytes if value is not None else 0)), True)


@register("aten::bernoulli_", "aten::bernoulli")
def bernoulli(call: Call) -> OpCost:
    """bernoulli(self) reads the probabilities in ``self``; bernoulli_(self, p) writes self, reads p if a tensor."""
    target = call.tensor(0, "self")
    p = call.maybe_tensor(1, "p")
    if call.name == "aten::bernoulli_":
        return OpCost(0.0, float(target.nbytes + (p.nbytes if p is not None else 0)), True)
    out = _outputs_or(call, target)
    return OpCost(0.0, float(target.nbytes + nbytes(out)), True)


@register("aten::multinomial")
def multinomial(call: Call) -> OpCost:
    """Reads the probabilities, writes num_samples int64 indices per row."""
    probs = call.tensor(0, "self")
    fallback = TensorMeta(probs.shape[:-1] + (int(call.arg(1, "num_samples")),), "int64")
    return OpCost(0.0, float(probs.nbytes + nbytes(_outputs_or(call, fallback))), True)


@register("aten::normal")
def normal(call: Call) -> OpCost:
    inputs = call.input_metas()
    fallback = None
    if call.outputs is None:
        if inputs:
            fallback = max(inputs, key=lambda m: m.numel)
        else:
            fallback = TensorMeta(_sizes(call.arg(2, "size")), _dtype_arg(call, 4))
    return OpCost(0.0, float(nbytes(inputs) + nbytes(_outputs_or(call, fallback))), True)


@register("aten::arange", "aten::linspace", "aten::logspace", "aten::eye", "aten::tril_indices",
          "aten::triu_indices")
def ranged(call: Call) -> OpCost:
    """One output element written per value; computing each value is 1 FLOP (start + i * step)."""
    if call.outputs is not None:
        out = call.outputs
    else:
        out = [_ranged_output(call)]
    return OpCost(float(sum(m.numel for m in out)), float(nbytes(out)), True)


def _ranged_output(call: Call) -> TensorMeta:
    numbers = [a for a in call.args if isinstance(a, (int, float)) and not isinstance(a, bool)]
    if call.name == "aten::arange":
        start, end, step = 0, 0, 1
        # arange(end, dtype...) / arange.start(start, end, ...) / arange.start_step(start, end, step, ...)
        if len(call.args) >= 3 and isinstance(call.args[2], (int, float)) and not isinstance(call.args[2], bool) \
                and isinstance(call.args[1], (int, float)) and not isinstance(call.args[1], bool):
            start, end, step = call.args[0], call.args[1], call.args[2]
            dtype_index = 3
        elif len(call.args) >= 2 and isinstance(call.args[1], (int, float)) and not isinstance(call.args[1], bool):
            start, end = call.args[0], call.args[1]
            dtype_index = 2
        else:
            end = call.args[0]
            dtype_index = 1
        count = max(0, ceil((end - start) / step))
        is_int = all(isinstance(v, int) for v in (start, end, step))
        default = "int64" if is_int else "float32"
        return TensorMeta((count,), _dtype_arg(call, dtype_index, default=default))
    if call.name == "aten::eye":
        n = int(numbers[0])
        m = int(numbers[1]) if len(numbers) > 1 else n
        return TensorMeta((n, m), "float32")
    if call.name in ("aten::linspace", "aten::logspace"):
        return TensorMeta((int(call.arg(2, "steps")),), _dtype_arg(call, 3 if call.name == "aten::linspace" else 4))
    row, col, offset = (int(call.arg(0)), int(call.arg(1)), int(call.arg(2, default=0)))
    count = sum(max(0, min(col, r + offset + 1)) for r in range(row)) if call.name == "aten::tril_indices" else \
        sum(max(0, col - max(0, r + offset)) for r in range(row))
    return TensorMeta((2, count), "int64")



_WINDOW_FLOPS = {"aten::hann_window": 5, "aten::hamming_window": 5, "aten::blackman_window": 9,
                 "aten::bartlett_window": 2, "aten::kaiser_window": 12}


@register(*_WINDOW_FLOPS)
def window(call: Call) -> OpCost:
    """(window_length, [periodic, params...], dtype...): a cosine (4) and a scale-shift per sample; the
    output written once."""
    length = call.arg(0, "window_length")
    if call.outputs is not None:
        out = call.outputs
    elif isinstance(length, int):
        out = [TensorMeta((length,), "float32")]
    else:
        raise ValueError("window length not recorded")
    return OpCost(float(_WINDOW_FLOPS[call.name] * sum(m.numel for m in out)), float(nbytes(out)), True)

"""count_op: one op's FLOPs and bytes from its name, args and (optional) outputs. Hot path: no torch import."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from roofline.count.meta import PackedWeights, TensorMeta
from roofline.count.registry import (
    COMPOSITE_OPS,
    FORMULAS,
    NESTED_AWARE_OPS,
    PREFIX_FORMULAS,
    SPARSE_AWARE_OPS,
    VIEW_OPS,
    Call,
    Formula,
    OpCost,
    flatten_metas,
    unmodeled,
)

_QUALIFIED = re.compile(r"^(\w+)::(\w+)(?:\.\w+)?$")
_DOTTED = re.compile(r"^(\w+)\.(\w+)(?:\.\w+)?$")
_NAME_CACHE: dict[str, str] = {}
_INF = float("inf")


def normalize_op_name(op: Any) -> str:
    """"aten.mm.default", "aten::mm.out", "aten::mm" or a torch OpOverload(Packet) -> "aten::mm".

    Names that are not aten-style (profiler annotations like "AddBackward0", Triton kernel names) come
    back unchanged.
    """
    text = op if isinstance(op, str) else str(op)
    cached = _NAME_CACHE.get(text)
    if cached is not None:
        return cached
    match = _QUALIFIED.match(text) or _DOTTED.match(text)
    name = f"{match.group(1)}::{match.group(2)}" if match else text
    if len(_NAME_CACHE) < 100_000:
        _NAME_CACHE[text] = name
    return name


def to_meta(obj: Any) -> Any:
    """Tensors -> TensorMeta, lists/tuples recursed (tuples stay tuples), dicts' values recursed, rest kept."""
    if isinstance(obj, (list, tuple)):
        converted = [to_meta(item) for item in obj]
        return converted if isinstance(obj, list) else tuple(converted)
    if isinstance(obj, dict):
        return {key: to_meta(value) for key, value in obj.items()}
    if _is_tensor(obj):
        return TensorMeta.from_tensor(obj)
    if type(obj).__name__ == "ScriptObject":
        return packed_weights(obj) or obj
    return obj


def packed_weights(obj: Any) -> PackedWeights | None:
    """The PackedWeights of a quantized op's prepacked weight object; None for any other torch.ScriptObject."""
    try:
        kind = obj._type().qualified_name().rsplit(".", 1)[-1]
        if kind not in ("LinearPackedParamsBase", "Conv1dPackedParamsBase", "Conv2dPackedParamsBase",
                        "Conv3dPackedParamsBase"):
            return None
        weight, bias = obj.unpack()
        metas = TensorMeta.from_tensor(weight), None if bias is None else TensorMeta.from_tensor(bias)
        if kind == "LinearPackedParamsBase":
            return PackedWeights(*metas)
        return PackedWeights(*metas, stride=tuple(obj.stride()), padding=tuple(obj.padding()),
                             dilation=tuple(obj.dilation()), output_padding=tuple(obj.output_padding()),
                             groups=int(obj.groups()), transposed=bool(obj.transpose()))
    except (AttributeError, RuntimeError, TypeError, ValueError):
        return None


def _is_tensor(obj: Any) -> bool:
    cls = type(obj)
    if cls.__module__.startswith("torch") or hasattr(obj, "__torch_dispatch__") or hasattr(obj, "__torch_function__"):
        try:
            import torch
        except ImportError:  # pragma: no cover
            return False
        return isinstance(obj, torch.Tensor)
    return False


def count_op(name: Any, args: Sequence[Any], kwargs: Mapping[str, Any] | None = None,
             outputs: Sequence[Any] | None = None) -> OpCost:
    """FLOPs and minimum bytes of one op; modeled=False (never an exception) when no formula applies."""
    op = _NAME_CACHE.get(name) if isinstance(name, str) else None
    if op is None:
        op = normalize_op_name(name)
    formula = FORMULAS.get(op) or _prefix_formula(op)
    if formula is None:
        return unmodeled(f"no formula for {op}")
    try:
        if outputs is None:
            out_metas = None
        elif isinstance(outputs, TensorMeta):
            out_metas = [outputs]
        else:
            out_metas = flatten_metas(outputs if isinstance(outputs, (list, tuple)) else list(outputs))
        if args is None:
            args = ()
        elif not isinstance(args, (list, tuple)):
            args = tuple(args)
        if kwargs is not None and not isinstance(kwargs, dict):
            kwargs = dict(kwargs) if isinstance(kwargs, Mapping) else None
        cost = formula(Call(op, args, kwargs, out_metas))
        if not (0 <= cost.flops < _INF and 0 <= cost.bytes < _INF):
            return unmodeled(f"{op}: no finite, non-negative count for these arguments")
        if cost.flops and op not in SPARSE_AWARE_OPS and _sparse_operand(args):
            return unmodeled("sparse operand: the formula counts the dense shape's FLOPs, not the stored elements'",
                             keep_whole=True)
        if cost.flops and op not in NESTED_AWARE_OPS and _ragged_structured_op(op, args):
            return unmodeled("nested operand whose components differ beyond their first dim: this op's count "
                             "depends on each component's shape, which its formula does not read")
        return cost
    except Exception as exc:  # noqa: BLE001 - a formula that cannot answer must not break a whole trace
        return unmodeled(f"{op}: could not count ({type(exc).__name__}: {exc})"[:300])

def _sparse_operand(args: Sequence[Any]) -> bool:
    """Whether a top-level argument is a sparse tensor whose stored elements are known (seen live; a trace's
    sparse operands, with none known, are the trace pipeline's to judge: analyze/sparse_operands.py)."""
    return any(type(a) is TensorMeta and a.nnz is not None for a in args)


def _ragged_structured_op(op: str, args: Sequence[Any]) -> bool:
    """Whether a matrix product, convolution or attention (whose FLOPs depend on more than the element count)
    has a nested operand that no dense shape describes: its components differ beyond their first dim, so
    TensorMeta.shape flattened it. Element-wise, reduction and copy formulas count such an operand right: its
    element count is exact."""
    if not any(type(a) is TensorMeta and a.components is not None for a in args):
        return False
    from roofline.count import families  # lazy: families imports this module's registry at its own import

    if families.op_kind(op) not in (families.MATMUL | families.MATVEC | families.CONV | families.CONV_OTHER
                                    | families.ATTENTION | {"einsum", "dot", "vdot", "inner", "outer"}):
        return False
    return any(type(a) is TensorMeta and a.components is not None and len({c[1:] for c in a.components}) > 1
               for a in args)


def _prefix_formula(op: str) -> Formula | None:
    for prefix, formula in PREFIX_FORMULAS:
        if op.startswith(prefix):
            return formula
    return None


def registered_ops() -> frozenset[str]:
    return frozenset(FORMULAS)


def is_view_op(name: Any) -> bool:
    return normalize_op_name(name) in VIEW_OPS


def is_composite_op(name: Any) -> bool:
    """True for ops that usually run by calling other aten ops (linear, matmul, layer_norm, SDPA's
    dispatcher, cross_entropy_loss...). Their cost is the whole of their children's; a trace shows both."""
    return normalize_op_name(name) in COMPOSITE_OPS

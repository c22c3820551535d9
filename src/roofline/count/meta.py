"""TensorMeta: what the formulas know about a tensor (shape, dtype, strides), nothing more.

The same object comes from a live tensor (``TensorMeta.from_tensor``) or from a trace file's recorded
shapes (``args_from_trace``), so one set of formulas serves both. Dtypes use torch's spelling without the
``torch.`` prefix. This module never imports torch at import time: counting a million trace events must stay
cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

DTYPE_ITEMSIZE: dict[str, int] = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1, "float8_e8m0fnu": 1,
    "float4_e2m1fn_x2": 1,
    "complex128": 16, "complex64": 8, "complex32": 4,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1,
    "uint64": 8, "uint32": 4, "uint16": 2, "uint8": 1,
    "bool": 1, "qint8": 1, "quint8": 1, "qint32": 4, "quint4x2": 1, "quint2x4": 1,
}

SPARSE_NOT_COUNTED = "sparse operand: the trace records no nonzero count"  # why such an op is unmodelled there

UNKNOWN_DTYPE = "unknown"  # a trace's tensor-list member: the profiler records no dtype; 4 bytes assumed

# c10::ScalarType enum values, as trace files record a dtype argument ("Concrete Inputs": "5" is float16).
SCALAR_TYPE_CODES: dict[int, str] = {
    0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32", 7: "float64",
    8: "complex32", 9: "complex64", 10: "complex128", 11: "bool", 12: "qint8", 13: "quint8", 14: "qint32",
    15: "bfloat16", 16: "quint4x2", 17: "quint2x4", 23: "float8_e5m2", 24: "float8_e4m3fn",
    25: "float8_e5m2fnuz", 26: "float8_e4m3fnuz", 27: "uint16", 28: "uint32", 29: "uint64",
}

def dtype_name(obj: Any) -> str | None:
    """A dtype given as torch.dtype, "torch.float16", "float16" or a ScalarType code -> "float16"; else None."""
    if obj is None or isinstance(obj, bool):
        return None
    if isinstance(obj, int):
        return SCALAR_TYPE_CODES.get(obj)
    text = canonical_dtype(str(obj))
    return text if text in DTYPE_ITEMSIZE else None


def itemsize_of(dtype: str) -> int:
    return DTYPE_ITEMSIZE.get(dtype, 4)


# Spellings other than torch's own names that reports, traces and users give a dtype (lower case).
_DTYPE_ALIASES = {
    "half": "float16", "fp16": "float16", "c10::half": "float16",
    "bf16": "bfloat16", "c10::bfloat16": "bfloat16",
    "float": "float32", "fp32": "float32", "double": "float64",
    "long": "int64", "long int": "int64", "int": "int32", "short": "int16",
    "unsigned char": "uint8", "byte": "uint8", "signed char": "int8", "char": "int8",
    "cfloat": "complex64", "cdouble": "complex128",
}


def canonical_dtype(dtype: str | None) -> str:
    """torch's name for a dtype however it is spelled ("torch.half", "c10::Half", "fp16" -> "float16"); "" for none."""
    if not dtype:
        return ""
    text = dtype.strip().lower()
    if text.startswith("torch."):
        text = text[len("torch."):]
    return _DTYPE_ALIASES.get(text, text)


def dtype_itemsize(dtype: str | None) -> int:
    """Bytes per element of a dtype in any spelling canonical_dtype knows; 4 when unknown."""
    return DTYPE_ITEMSIZE.get(canonical_dtype(dtype), 4)


def unknown_dtype_note(tensors: list["TensorMeta"]) -> str:
    """The caveat for a tensor list read from a trace, whose members carry no dtype."""
    return "tensor-list dtype not recorded: 4 bytes an element assumed" if tensors[0].dtype == UNKNOWN_DTYPE else ""


@dataclass(frozen=True, slots=True)
class TensorMeta:
    """Shape, dtype and (optionally) strides of one tensor view.

    ``nbytes`` is the size of the view (numel * itemsize), not of its storage: an op reading a transposed
    or sliced view is charged for the elements it can see. A sparse tensor (``nnz`` set: its stored elements,
    known where the tensor itself is seen, never from a trace) is charged for what it stores: each element's
    value and one int64 index per dimension (COO; CSR stores one index fewer per element, plus a row pointer).

    ``strided`` is False for a tensor of another layout: sparse (COO, CSR, ...) or mkldnn. A trace shows no more
    than that (the profiler records strides only for strided tensors: such an operand has a shape and an empty
    stride list), so there a sparse operand is a non-strided one with ``nnz`` None. Only formulas of ops that take
    sparse operands read it (matrix products: an mkldnn tensor goes to mkldnn_* ops, never to mm/addmm).

    ``components``: a strided nested tensor's per-component shapes (seen live only: a trace records a nested
    operand with neither shape nor dtype). ``shape`` then stacks them into one dense shape whose numel is exact
    (``_nested_shape``); formulas whose count depends on more than the element count (matrix products) read the
    components instead (``NESTED_AWARE``).

    ``values``: a small integer tensor's elements, flattened; filled (``live.read_live_facts``) only where a live op
    is counted and only for the arguments its formula declared it reads (``register(live=ArgValues(...))``: a
    variable-length attention's cumulative sequence lengths), never from a trace (which records no tensor's values).
    """

    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...] | None = None
    nnz: int | None = None
    strided: bool = True
    components: tuple[tuple[int, ...], ...] | None = None
    values: tuple[int, ...] | None = None

    @property
    def is_sparse(self) -> bool:
        """A sparse operand of a matrix product (see ``strided``): its stored elements known or not."""
        return self.nnz is not None or not self.strided

    @property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def itemsize(self) -> int:
        return DTYPE_ITEMSIZE.get(self.dtype, 4)

    @property
    def nbytes(self) -> int:
        if self.nnz is not None:
            return self.nnz * (DTYPE_ITEMSIZE.get(self.dtype, 4) + 8 * len(self.shape))
        return prod(self.shape) * DTYPE_ITEMSIZE.get(self.dtype, 4)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_contiguous(self) -> bool:
        """True when strides are unknown or row-major (size-1 dimensions may carry any stride)."""
        if self.strides is None:
            return True
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size == 1:
                continue
            if stride != expected:
                return False
            expected *= size
        return True

    def with_shape(self, shape: tuple[int, ...], dtype: str | None = None) -> "TensorMeta":
        return TensorMeta(tuple(shape), dtype or self.dtype)

    @classmethod
    def from_tensor(cls, t: Any) -> "TensorMeta":
        dtype = str(t.dtype)
        if dtype.startswith("torch."):
            dtype = dtype[6:]
        if getattr(t, "is_nested", False):
            components = _nested_components(t)
            return cls(_nested_shape(t, components), dtype, None, components=components)
        if str(getattr(t, "layout", "")).startswith("torch.sparse"):  # COO, CSR, CSC, BSR, BSC
            try:
                nnz: int | None = int(t._nnz())
            except (RuntimeError, NotImplementedError, TypeError, AttributeError):
                nnz = None
            return cls(tuple(int(s) for s in t.shape), dtype, None, nnz, strided=False)
        try:
            strides: tuple[int, ...] | None = tuple(t.stride())
        except (RuntimeError, NotImplementedError, TypeError):
            return cls(tuple(int(s) for s in t.shape), dtype, None, strided=False)  # mkldnn: no strides
        return cls(tuple(int(s) for s in t.shape), dtype, strides)


def _nested_components(t: Any) -> tuple[tuple[int, ...], ...] | None:
    """A strided nested tensor's component shapes (``_nested_tensor_size()``, one row per component); None for a
    jagged-layout one (its ``_values`` already are the stacked components, what its ops compute on) or when torch
    does not say."""
    if hasattr(getattr(t, "_values", None), "shape"):  # a strided one's _values is Tensor._values, a method
        return None
    try:
        return tuple(tuple(int(v) for v in row) for row in t._nested_tensor_size().tolist())
    except (AttributeError, RuntimeError, TypeError, NotImplementedError):
        return None


def _nested_shape(t: Any, sizes: tuple[tuple[int, ...], ...] | None) -> tuple[int, ...]:
    """A nested (ragged) tensor as one dense tensor of its components stacked along their first dim: (sum of
    the components' lengths, *their other dims), so its numel and bytes are exact. Its shapes are not: a batch
    of sequences reads as one long sequence, and components that differ in another dim too flatten to one
    dim."""
    values = getattr(t, "_values", None)  # a jagged-layout tensor: its components already stacked
    if values is not None and hasattr(values, "shape"):
        return tuple(int(s) for s in values.shape)
    if sizes is None:
        try:
            return (int(t.numel()),)
        except (RuntimeError, NotImplementedError, TypeError):
            return (0,)
    if not sizes or not sizes[0]:
        return (len(sizes),)
    rest = sizes[0][1:]
    if any(s[1:] != rest for s in sizes):
        return (sum(prod(s) for s in sizes),)
    return (sum(s[0] for s in sizes),) + rest


@dataclass(frozen=True, slots=True)
class PackedWeights:
    """A quantized linear's or convolution's prepacked weight (torch's LinearPackedParamsBase /
    Conv*dPackedParamsBase object, passed to quantized:: ops instead of tensors), as ``counting.to_meta`` reads it:
    the weight and bias and, for a convolution, its geometry."""

    weight: TensorMeta
    bias: TensorMeta | None
    stride: tuple[int, ...] = ()
    padding: tuple[int, ...] = ()
    dilation: tuple[int, ...] = ()
    output_padding: tuple[int, ...] = ()
    groups: int = 1
    transposed: bool = False

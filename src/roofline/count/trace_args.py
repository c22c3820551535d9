"""Rebuild an op's positional args from a Kineto cpu_op event ("Input Dims", "Input type", ...).

A tensor argument becomes a TensorMeta (its "Input type" is a C++ dtype spelling); a tensor list
("TensorList"/"GenericList", whose "Input Dims" entry is a list of shapes) a list of TensorMeta, or None when
the profiler did not record its shapes (it leaves long lists empty); a scalar is parsed from
"Concrete Inputs" (int, float, complex, bool, list); anything missing is None. A tensor with a shape and an empty stride
list is not strided (sparse or mkldnn: TensorMeta.strided); a 0-dim one has an empty stride list and is strided.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from roofline.count.meta import UNKNOWN_DTYPE, TensorMeta

TRACE_DTYPES: dict[str, str] = {
    "float": "float32", "double": "float64", "c10::Half": "float16", "c10::BFloat16": "bfloat16",
    "long int": "int64", "long": "int64", "int64_t": "int64", "int": "int32", "short int": "int16",
    "short": "int16", "signed char": "int8", "unsigned char": "uint8", "bool": "bool",
    "unsigned short": "uint16", "unsigned int": "uint32", "unsigned long": "uint64",
    "c10::complex<float>": "complex64", "c10::complex<double>": "complex128",
    "c10::complex<c10::Half>": "complex32",
    "c10::Float8_e4m3fn": "float8_e4m3fn", "c10::Float8_e5m2": "float8_e5m2",
    "c10::Float8_e4m3fnuz": "float8_e4m3fnuz", "c10::Float8_e5m2fnuz": "float8_e5m2fnuz",
    "c10::Float8_e8m0fnu": "float8_e8m0fnu", "c10::qint8": "qint8", "c10::quint8": "quint8",
    "c10::qint32": "qint32", "uint16_t": "uint16", "uint32_t": "uint32", "uint64_t": "uint64",
}
_COMPLEX = re.compile(r"^[-+]?(\d+\.?\d*(e[-+]?\d+)?[-+])?\d+\.?\d*(e[-+]?\d+)?j$")  # "0.+1.j", as torch writes one
LIST_TYPES = ("TensorList", "GenericList", "OptionalTensorList", "TensorList?")


def parse_scalar(text: Any) -> Any:
    """"5" -> 5, "0." -> 0.0, "0.+1.j" -> 1j, "True" -> True, "[2, 256]" -> [2, 256], "" -> None, other text
    kept."""
    if not isinstance(text, str):
        return text
    text = text.strip()
    if not text:
        return None
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    if text in ("None", "none"):
        return None
    if text[0] in "[(" and text[-1] in "])":
        inner = text[1:-1].strip()
        if not inner:
            return []
        return [parse_scalar(part) for part in inner.split(",")]
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    if _COMPLEX.match(text):
        return complex(text)
    return text


def _shape(dims: Any) -> tuple[int, ...] | None:
    if isinstance(dims, (list, tuple)) and all(isinstance(d, int) for d in dims):
        return tuple(dims)
    return None


def _strides(strides: Any, index: int) -> Any:
    if strides is None or index >= len(strides):
        return None
    return strides[index]


def args_from_trace(input_dims: Sequence[Any] | None, input_types: Sequence[Any] | None,
                    input_strides: Sequence[Any] | None = None,
                    concrete_inputs: Sequence[Any] | None = None) -> list:
    input_dims = list(input_dims or ())
    input_types = list(input_types or ())
    concrete_inputs = list(concrete_inputs or ())
    count = max(len(input_dims), len(input_types), len(concrete_inputs))
    args: list[Any] = []
    for i in range(count):
        kind = input_types[i] if i < len(input_types) else ""
        dims = input_dims[i] if i < len(input_dims) else None
        dtype = TRACE_DTYPES.get(kind) if isinstance(kind, str) else None
        if dtype is not None:
            shape = _shape(dims)
            if shape is None:
                args.append(None)
                continue
            stride = _shape(_strides(input_strides, i))
            if stride == () and shape:  # strides are recorded for strided tensors only: sparse (or mkldnn)
                args.append(TensorMeta(shape, dtype, None, strided=False))
                continue
            args.append(TensorMeta(shape, dtype, stride if stride is not None and len(stride) == len(shape) else None))
        elif kind in LIST_TYPES:
            args.append(_tensor_list(dims, _strides(input_strides, i)))
        else:
            text = concrete_inputs[i] if i < len(concrete_inputs) else ""
            args.append(parse_scalar(text))
    return args


def _tensor_list(dims: Any, strides: Any) -> list[TensorMeta] | None:
    """Shapes of a recorded tensor list. The profiler records no dtype for list members: they get dtype
    "unknown" (4 bytes an element assumed), and formulas say so in their note."""
    if not isinstance(dims, (list, tuple)) or not dims:
        return None
    metas: list[TensorMeta] = []
    for j, member in enumerate(dims):
        shape = _shape(member)
        if shape is None:
            return None
        stride = _shape(strides[j]) if isinstance(strides, (list, tuple)) and j < len(strides) else None
        stride = stride if stride is not None and len(stride) == len(shape) else None
        metas.append(TensorMeta(shape, UNKNOWN_DTYPE, stride))
    return metas

"""Shape and dtype inference the formulas need when an op's outputs were not recorded (trace files)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from roofline.count.meta import TensorMeta

_FLOAT_RANK = {"float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
               "bfloat16": 2, "float16": 2, "float32": 3, "float64": 4}
_INT_RANK = {"bool": 0, "uint8": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 3, "uint32": 3,
             "int64": 4, "uint64": 4}


def broadcast_shapes(shapes: Iterable[Sequence[int]]) -> tuple[int, ...]:
    result: list[int] = []
    for shape in shapes:
        shape = list(shape)
        if len(shape) > len(result):
            result = [1] * (len(shape) - len(result)) + result
        offset = len(result) - len(shape)
        for i, size in enumerate(shape):
            current = result[offset + i]
            if current == 1:
                result[offset + i] = size
            elif size != 1 and size != current:
                raise ValueError(f"shapes do not broadcast: {size} vs {current}")
    return tuple(result)


def _category(dtype: str) -> int:
    if dtype.startswith("complex"):
        return 3
    if dtype in _FLOAT_RANK:
        return 2
    if dtype == "bool":
        return 0
    return 1


def promote_dtypes(metas: Sequence[TensorMeta]) -> str:
    """torch's type promotion, simplified: dimensioned tensors win over 0-dim ones of the same category."""
    if not metas:
        return "float32"
    dimensioned = [m for m in metas if m.shape]
    pool = dimensioned or list(metas)
    best_cat = max(_category(m.dtype) for m in metas)
    in_cat = [m for m in pool if _category(m.dtype) == best_cat]
    if not in_cat:
        in_cat = [m for m in metas if _category(m.dtype) == best_cat]
    ranks = _FLOAT_RANK if best_cat == 2 else _INT_RANK
    dtypes = {m.dtype for m in in_cat}
    if dtypes == {"float16", "bfloat16"}:
        return "float32"
    return max(sorted(dtypes), key=lambda d: ranks.get(d, 0))  # sorted: the same answer under any hash seed


_COMPLEX_OF = {"float16": "complex32", "float64": "complex128"}


def complex_of(dtype: str) -> str:
    """The complex dtype torch gives a ``dtype`` tensor combined with a complex value: half -> complex32, double ->
    complex128, any other real dtype (float32, integers, bool) -> complex64; a complex dtype stays."""
    return dtype if dtype.startswith("complex") else _COMPLEX_OF.get(dtype, "complex64")


def normalize_dims(dims: Any, ndim: int) -> list[int] | None:
    """A dim argument (int, list, None or []) -> sorted non-negative dims; None means all dims."""
    if dims is None or isinstance(dims, bool):
        return None
    if isinstance(dims, int):
        dims = [dims]
    if not isinstance(dims, (list, tuple)) or not dims:
        return None
    if ndim == 0:
        return []
    return sorted({int(d) % ndim for d in dims})


def reduced_shape(shape: tuple[int, ...], dims: Any, keepdim: bool) -> tuple[int, ...]:
    picked = normalize_dims(dims, len(shape))
    if picked is None:
        picked = list(range(len(shape)))
    if keepdim:
        return tuple(1 if i in picked else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in picked)


def acc_dtype(dtype: str) -> str:
    """The accumulation dtype kernels use for statistics (mean/rstd of a norm)."""
    return "float64" if dtype == "float64" else "float32"

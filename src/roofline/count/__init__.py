"""FLOP and byte formulas for aten ops, one module per op family, registered by op packet name.

    count_op("aten::mm", [TensorMeta((64, 32), "float32"), TensorMeta((32, 16), "float32")])
    -> OpCost(flops=65536.0, bytes=14336.0, modeled=True)

The same pure functions of TensorMeta serve live recordings (``to_meta(args)``) and shapes read from trace
files (``args_from_trace``). An op without a formula is ``modeled=False``, never silently zero. Each family
module states its FLOP convention in its docstring; the byte convention is in ``registry``.
"""

from roofline.count import (  # noqa: F401  (importing a family registers its formulas)
    attention,
    collectives,
    conv,
    copy,
    elementwise,
    embedding,
    factorizations,
    factory,
    fft,
    foreach,
    indexing,
    inductor,
    linalg,
    loss,
    matmul,
    norm,
    pooling,
    quantized,
    reduction,
    rnn,
    softmax,
    transformer,
    views,
    vision_ops,
)
from roofline.count.counting import (
    count_op,
    is_composite_op,
    is_view_op,
    normalize_op_name,
    registered_ops,
    to_meta,
)
from roofline.count.meta import TensorMeta
from roofline.count.registry import OpCost, register
from roofline.count.trace_args import args_from_trace

__all__ = [
    "OpCost",
    "TensorMeta",
    "args_from_trace",
    "count_op",
    "is_composite_op",
    "is_view_op",
    "normalize_op_name",
    "registered_ops",
    "register",
    "to_meta",
]

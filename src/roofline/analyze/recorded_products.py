"""matrix_exp's matrix products, which its trace event cannot give (their number follows the matrix's values), read
from the products recorded below it.

torch's matrix_exp (count/linalg.py) evaluates a Taylor polynomial and squares the result, every n x n product an
``aten::bmm`` call through the dispatcher (under ``aten::matmul`` for the squarings), which the profiler records
with its shapes: torch 2.14 on CPU recorded exactly the products it made for single matrices of every degree and
number of squarings, float32, float64 and complex64, and for batches (where it runs degree 18 on every matrix).
So the products below the event, each bmm's batch of n x n products (an mm's one), are its count: what ran, not a
model of it. Where the event has no children (a trace that kept top-level ops only) or a product's shapes are not
recorded or not n x n, None: the op stays unmodelled, with the reason.
"""

from __future__ import annotations

from roofline.capture.trace_model import CpuOp, Trace

MATRIX_EXP_OPS = frozenset({"aten::linalg_matrix_exp", "aten::matrix_exp"})
_PRODUCTS = frozenset({"aten::bmm", "aten::mm"})


def products_below(trace: Trace, op: CpuOp, children: dict[int, list[int]], n: int) -> int | None:
    """The n x n products recorded below ``op`` (module docstring); None where they cannot be read."""
    kids = children.get(op.index, [])
    if not kids:
        return None
    total = 0
    stack = list(kids)
    while stack:
        below = trace.ops[stack.pop()]
        if below.name not in _PRODUCTS:
            stack.extend(children.get(below.index, []))
            continue
        dims = below.input_dims or []
        if len(dims) < 2 or not all(_square(d, n) for d in dims[:2]):
            return None
        total += dims[0][0] if len(dims[0]) == 3 else 1
    return total


def _square(dims: object, n: int) -> bool:
    return isinstance(dims, list) and len(dims) in (2, 3) and all(isinstance(d, int) for d in dims) \
        and dims[-2:] == [n, n]

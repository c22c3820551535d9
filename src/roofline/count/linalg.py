"""linalg_matrix_exp: matrix products, as many as torch's Taylor approximation takes for the matrices it is given.

torch (aten/src/ATen/native/LinearAlgebra.cpp, ``mexp_impl``; Bader, Blanes and Casas 2019: a Taylor polynomial of
degree m evaluated with few products, then scaling and squaring) picks, for a single matrix, the lowest degree m in
(1, 2, 4, 8, 12, 18) whose threshold theta_m bounds its 1-norm (its largest absolute column sum), evaluating it with
(0, 1, 2, 3, 4, 5) n x n products; above theta_18 it scales the matrix by 2^-s, s = ceil(log2(norm / theta_18)), and
squares the result s times: 5 + s products. A batch of more than one matrix takes degree 18 for every matrix
(``if (batch_size > 1) compute_highest_degree_approx = true``: 5 products each, whatever its norm) and each is
squared its own s times (torch 2.14's profiler records exactly these products; torch versions before that rule chose
a degree per matrix of a batch too, for which this count of a low-norm batch is high).

FLOPs: 2 n^3 per product per matrix (x4 for complex). The sums of scaled powers (a few n^2 each) are not counted.
Bytes: the input read once, the output written once.

The count depends on the matrix's values. Where the tensor itself is seen (``analyze``) the formula declares the
live fact ``matrix_products`` (count/live.py), which the counting pass computes from the real tensor and hands it as
``matrix_exp_products``. A trace records the shape alone, but also every product torch makes, an ``aten::bmm`` event
below the op with its shapes: the trace pipeline gives the formula the products recorded there
(analyze/recorded_products.py), what ran rather than a model of it. Where none can be read (the op has no recorded
children) it is one unmodelled row with its whole time and that reason (``keep_whole``).
"""

from __future__ import annotations

import math
from typing import Any

from roofline.count.live import Derived
from roofline.count.registry import Call, OpCost, nbytes, register, unmodeled

# theta_m for m = 1, 2, 4, 8, 12, 18 (torch's thetas_float / thetas_double); the product counts for each degree.
_THETAS = {
    "float32": (1.192092800768788e-07, 5.978858893805233e-04, 5.116619363445086e-02, 5.800524627688768e-01,
                1.461661507209034e+00, 3.010066362817634e+00),
    "float64": (2.220446049250313e-16, 2.580956802971767e-08, 3.397168839976962e-04, 4.991228871115323e-02,
                2.996158913811580e-01, 1.090863719290036e+00),
}
_THETAS["complex64"] = _THETAS["float32"]
_THETAS["complex128"] = _THETAS["float64"]
_PRODUCTS = (0, 1, 2, 3, 4, 5)
PRODUCTS_KWARG = "matrix_exp_products"  # the live pass's per-call fact (matrix_products)
NO_NORM = ("matrix_exp: its product count depends on the matrix's 1-norm, which a trace does not record, and no "
           "products recorded below it could be read")


def products_for_norm(norm: float, dtype: str) -> int:
    """n x n products torch's matrix_exp makes for a single matrix of this 1-norm (module docstring)."""
    thetas = _THETAS.get(dtype, _THETAS["float32"])
    for theta, products in zip(thetas, _PRODUCTS):
        if norm <= theta:
            return products
    return batched_products_for_norm(norm, dtype)


def batched_products_for_norm(norm: float, dtype: str) -> int:
    """n x n products torch's matrix_exp makes for one matrix of this 1-norm in a batch of more than one: degree 18,
    then its own squarings (module docstring)."""
    if not math.isfinite(norm):
        raise ValueError("matrix 1-norm is not finite")
    theta_18 = _THETAS.get(dtype, _THETAS["float32"])[-1]
    return _PRODUCTS[-1] + (max(0, math.ceil(math.log2(norm / theta_18))) if norm > 0 else 0)


def matrix_products(args: Any, kwargs: Any) -> int | None:
    """The live fact matrix_exp's formula reads (live.Derived, ``PRODUCTS_KWARG``): total products over the batch of
    matrices of the real tensor it is given; None where that tensor has no values (meta) or a nan or inf norm."""
    if not args:
        return None
    a = args[0]
    try:
        norms = a.detach().abs().sum(-2).amax(-1).reshape(-1).tolist()
        dtype = str(a.dtype).removeprefix("torch.")
        if a.shape[-1] < 2:  # 1 x 1: torch takes exp, no product; 0 x 0: a copy
            return 0
        per_matrix = products_for_norm if len(norms) == 1 else batched_products_for_norm
        return sum(per_matrix(float(v), dtype) for v in norms)
    except (AttributeError, RuntimeError, TypeError, ValueError):  # not a dense tensor; a nan or inf norm
        return None


@register("aten::linalg_matrix_exp", "aten::matrix_exp", live=Derived(PRODUCTS_KWARG, matrix_products))
def matrix_exp(call: Call) -> OpCost:
    a = call.tensor(0, "self")
    products = call.kwargs.get(PRODUCTS_KWARG)
    if products is None:
        return unmodeled(NO_NORM, keep_whole=True)
    n = a.shape[-1]
    flops = 2.0 * n ** 3 * products * (4 if a.dtype.startswith("complex") else 1)
    out = call.outputs or [a]
    return OpCost(flops, float(a.nbytes + nbytes(out)), True)
